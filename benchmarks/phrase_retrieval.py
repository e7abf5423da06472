"""How ``phrase-hybrid`` was chosen: WTQ R@1 of each step from ``hybrid``, on training
questions (where the choices were made) and on the pristine-unseen test questions.

    python benchmarks/phrase_retrieval.py [--data ../shared/data/wtq] [--train 2000] [--test 1000]

Steps (each adds to the one before): ``hybrid`` (plain BM25 α = 0.7); word bigrams in BM25;
the header line counted twice; bm25s k1 = 0.7, b = 0.3; the header line's own vector
(weight w in the dense part) with α = 0.75; then the cell match (`lexical.cellmatch`) as a
fourth feature, with the four weights fit on the *other* training questions (all but the
first `--train`, which stay the check): a linear listwise softmax (the gold tables' share of
exp(Σ w_i f_i) over all tables), maximized by L-BFGS. The fit prints its weights scaled to sum
1; `PHRASE_WEIGHTS` in `corpus.retrieval.retrievers` holds them rounded to 3 decimals and the
last row is `phrase_fusion` itself (= ``phrase-hybrid``). The test column is for reading only.
Vectors: the ``minilm`` encoder (ONNX, 128 tokens), encoded once.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from tablequest.corpus.dense.encoders import make_encoder
from tablequest.corpus.dense.index import corpus_vectors
from tablequest.corpus.lexical.cellmatch import cell_index
from tablequest.corpus.lexical.phrase import PHRASE_BM25, question_tokens
from tablequest.corpus.lexical.rank import PLAIN_BM25, BM25Index, BM25Kind, tokenize
from tablequest.corpus.retrieval.retrievers import PHRASE_WEIGHTS, by_max, phrase_fusion
from tablequest.corpus.storage.views import header_first_texts
from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import load
from tablequest.eval.runner import select_questions

Array = np.ndarray[Any, Any]


def _pairs(words: list[str]) -> list[str]:
    return words + [f"{a}_{b}" for a, b in itertools.pairwise(words)]


def _bigrams(texts: Sequence[str]) -> list[list[str]]:
    """Words and bigrams per line, no header doubling (the step before it)."""
    return [
        [tok for line in text.split("\n") for tok in _pairs(tokenize([line])[0])] for text in texts
    ]


STEPS: list[tuple[str, BM25Kind, float, float]] = [
    ("hybrid (plain BM25, alpha 0.7)", PLAIN_BM25, 0.7, 0.0),
    (
        "+ bigrams",
        BM25Kind("b", _bigrams, query=question_tokens, source=header_first_texts),
        0.7,
        0.0,
    ),
    (
        "+ header twice",
        BM25Kind("h", PHRASE_BM25.tokens, query=question_tokens, source=header_first_texts),
        0.7,
        0.0,
    ),
    ("+ k1 0.7, b 0.3", PHRASE_BM25, 0.7, 0.0),
    ("+ header vector w 0.3, alpha 0.75", PHRASE_BM25, 0.75, 0.3),
]


def _recall1(scores: Array, gold: list[list[int]]) -> float:
    top = scores.argmax(axis=1)
    return float(np.mean([t in g for t, g in zip(top, gold, strict=True)]))


def fit_weights(features: Array, gold: list[list[int]], chunk: int = 1000) -> Array:
    """Weights w maximizing Σ_q log Σ_{t gold} softmax_t(features[q] @ w) (L-BFGS).

    `features` is (questions, tables, features); returned scaled to sum 1 (the ranking
    only depends on the direction, the scale is the softmax's temperature).
    """
    masks = np.zeros(features.shape[:2], dtype=bool)
    for q, tables in enumerate(gold):
        masks[q, tables] = True

    def loss(w: Array) -> tuple[float, Array]:
        total, grad = 0.0, np.zeros_like(w)
        for lo in range(0, len(features), chunk):
            f = features[lo : lo + chunk].astype(np.float64)
            s = f @ w
            m = masks[lo : lo + chunk]
            all_p = np.exp(s - logsumexp(s, axis=1, keepdims=True))
            gold_s = np.where(m, s, -np.inf)
            gold_p = np.exp(gold_s - logsumexp(gold_s, axis=1, keepdims=True))
            total += float(np.sum(logsumexp(s, axis=1) - logsumexp(gold_s, axis=1)))
            grad += np.einsum("qt,qtf->f", all_p - gold_p, f)
        return total / len(features), grad / len(features)

    start = np.array([5.0, 10.0, 3.0, 1.0])
    result = minimize(loss, start, jac=True, method="L-BFGS-B")
    weights: Array = result.x / result.x.sum()
    return weights


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
    cells = cell_index(store)
    titled = store.con.execute("SELECT count(*) FROM tables WHERE title <> ''").fetchone()
    print(f"{len(ids)} tables, {titled[0] if titled else 0} with a title")
    training = select_questions(load("wtq", root, split="training"))
    sets = {}
    for name, qs in (("train", training[: args.train]), ("fit", training[args.train :]),
                     ("test", select_questions(test, limit=args.test))):  # fmt: skip
        gold = [[position[t] for t in corpus.table_ids(q.gold_table_ids)] for q in qs]
        questions = [q.question for q in qs]
        vectors = encoder.encode(questions)
        sets[name] = (questions, gold, vectors @ tables.T, vectors @ headers.T)
        print(f"{name}: {len(qs)} questions", flush=True)

    def lexical(kind: BM25Kind, questions: list[str]) -> Array:
        source = kind.source(store) if kind.source else (ids, texts)
        assert source[0] == ids  # every feature in table-id order
        index = BM25Index.build(ids, source[1], kind)
        return np.stack([index.scores(q) for q in questions])

    def fused(lex: Array, table_cos: Array, header_cos: Array, a: float, w: float) -> Any:
        return (1 - a) * by_max(lex) + a * ((1 - w) * table_cos + w * header_cos)

    lex_cache: dict[tuple[str, str], Array] = {}
    print(f"{'step':<52} {'train R@1':>9} {'test R@1':>9}")
    for label, kind, alpha, weight in STEPS:
        row = []
        for name in ("train", "test"):
            questions, gold, table_cos, header_cos = sets[name]
            lex = lex_cache.setdefault((label, name), lexical(kind, questions))
            row.append(_recall1(fused(lex, table_cos, header_cos, alpha, weight), gold))
        print(f"{label:<52} {row[0]:>9.3f} {row[1]:>9.3f}", flush=True)
    last = STEPS[-1][0]
    lex_cache[(last, "fit")] = lexical(PHRASE_BM25, sets["fit"][0])
    features = {}
    for name, (questions, _gold, table_cos, header_cos) in sets.items():
        cell_scores = np.stack([cells.scores(q) for q in questions])
        features[name] = (lex_cache[(last, name)], table_cos, header_cos, cell_scores)
    fit_set = features["fit"]
    keep = [q for q, g in enumerate(sets["fit"][1]) if g]  # a gold table in the corpus
    stacked = np.stack([by_max(fit_set[0]), fit_set[1], fit_set[2], by_max(fit_set[3])], -1)
    weights = fit_weights(stacked[keep].astype(np.float32), [sets["fit"][1][q] for q in keep])
    del stacked
    print(f"\nfit on {len(sets['fit'][1])} other training questions: weights "
          f"{np.round(weights, 3).tolist()} (PHRASE_WEIGHTS: {list(PHRASE_WEIGHTS)})")  # fmt: skip
    row = [
        _recall1(phrase_fusion(*(f.astype(np.float64) for f in features[n])), sets[n][1])
        for n in ("train", "test")
    ]
    label = "+ cell match, weights fit (phrase-hybrid)"
    print(f"{label:<52} {row[0]:>9.3f} {row[1]:>9.3f}")
    store.close()


if __name__ == "__main__":
    main()
