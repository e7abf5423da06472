"""How ``phrase-hybrid`` was chosen: WTQ R@1 of each step from ``hybrid``, on training
questions (where the choices were made) and on the pristine-unseen test questions.

    python benchmarks/phrase_retrieval.py [--data ../shared/data/wtq] [--train 2000] [--test 1000]

Steps (each adds to the one before): ``hybrid`` (plain BM25 α = 0.7); word bigrams in BM25;
the header line counted twice; bm25s k1 = 0.7, b = 0.3; the header line's own vector
(weight w in the dense part) with α = 0.75 (= ``phrase-hybrid``). Then the α × w grid of the
last step on training questions, best first, with the test R@1 beside it for reading only.
Vectors: the ``minilm`` encoder (ONNX, 128 tokens), encoded once.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tablequest.corpus.dense.encoders import make_encoder
from tablequest.corpus.dense.index import corpus_vectors
from tablequest.corpus.lexical.phrase import PHRASE_BM25, question_tokens
from tablequest.corpus.lexical.rank import PLAIN_BM25, BM25Index, BM25Kind, tokenize
from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import load
from tablequest.eval.runner import select_questions


def _pairs(words: list[str]) -> list[str]:
    return words + [f"{a}_{b}" for a, b in itertools.pairwise(words)]


def _bigrams(texts: Sequence[str]) -> list[list[str]]:
    """Words and bigrams per line, no header doubling (the step before it)."""
    return [
        [tok for line in text.split("\n") for tok in _pairs(tokenize([line])[0])] for text in texts
    ]


STEPS: list[tuple[str, BM25Kind, float, float]] = [
    ("hybrid (plain BM25, alpha 0.7)", PLAIN_BM25, 0.7, 0.0),
    ("+ bigrams", BM25Kind("b", _bigrams, query=question_tokens), 0.7, 0.0),
    ("+ header twice", BM25Kind("h", PHRASE_BM25.tokens, query=question_tokens), 0.7, 0.0),
    ("+ k1 0.7, b 0.3", PHRASE_BM25, 0.7, 0.0),
    ("+ header vector w 0.3, alpha 0.75 (phrase-hybrid)", PHRASE_BM25, 0.75, 0.3),
]


def _recall1(scores: np.ndarray[Any, Any], gold: list[list[int]]) -> float:
    top = scores.argmax(axis=1)
    return float(np.mean([t in g for t, g in zip(top, gold, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/wtq")
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=1000)
    args = parser.parse_args()
    root = Path(args.data)
    test = load("wtq", root)
    corpus = build_corpus(test, "csv", seed=0)
    store = corpus.store
    ids, texts = store.column("plain")
    position = {t: i for i, t in enumerate(ids)}
    encoder = make_encoder("minilm")
    assert encoder is not None
    _, tables = corpus_vectors(store, encoder)
    _, headers = corpus_vectors(store, encoder, view="header")
    sets = {}
    for name, ds, n in (("train", load("wtq", root, split="training"), args.train),
                        ("test", test, args.test)):  # fmt: skip
        qs = select_questions(ds, limit=n)
        gold = [[position[t] for t in corpus.table_ids(q.gold_table_ids)] for q in qs]
        questions = [q.question for q in qs]
        sets[name] = (questions, gold, encoder.encode(questions))

    def lexical(kind: BM25Kind, questions: list[str]) -> np.ndarray[Any, Any]:
        index = BM25Index.build(ids, texts, kind)
        raw = np.stack([index.scores(q) for q in questions])
        out: np.ndarray[Any, Any] = raw / np.maximum(raw.max(axis=1, keepdims=True), 1e-9)
        return out

    def fused(lex: np.ndarray[Any, Any], q: np.ndarray[Any, Any], a: float, w: float) -> Any:
        return (1 - a) * lex + a * ((1 - w) * (q @ tables.T) + w * (q @ headers.T))

    lex_cache: dict[tuple[str, str], np.ndarray[Any, Any]] = {}
    print(f"{'step':<52} {'train R@1':>9} {'test R@1':>9}")
    for label, kind, alpha, weight in STEPS:
        row = []
        for name, (questions, gold, vectors) in sets.items():
            lex = lex_cache.setdefault((label, name), lexical(kind, questions))
            row.append(_recall1(fused(lex, vectors, alpha, weight), gold))
        print(f"{label:<52} {row[0]:>9.3f} {row[1]:>9.3f}")
    last = STEPS[-1][0]
    grid = []
    for alpha, weight in itertools.product((0.6, 0.65, 0.7, 0.75, 0.8), (0.0, 0.2, 0.3)):
        r = [
            _recall1(fused(lex_cache[(last, n)], s[2], alpha, weight), s[1])
            for n, s in sets.items()
        ]
        grid.append((r[0], r[1], alpha, weight))
    print("\nalpha x w on training (best first; test for reading only)")
    for train_r1, test_r1, alpha, weight in sorted(grid, reverse=True)[:6]:
        print(f"  alpha {alpha:.2f} w {weight:.1f}: train {train_r1:.3f} test {test_r1:.3f}")
    store.close()


if __name__ == "__main__":
    main()
