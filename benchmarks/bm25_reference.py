"""A plain BM25 over the raw WTQ CSV files, to check `eval retrieval --method bm25` against.

    python benchmarks/bm25_reference.py [--data ../shared/data/wtq]
                                        [--split pristine-unseen-tables] [--limit 1000] [--json]

Independent of `tablequest.corpus`: each table is its CSV file's raw text, tokenized by a
regex and ranked with bm25s (Lucene BM25, k1 = 1.5, b = 0.75). Three tokenizations show where
our BM25 differs from a stock one:

- ``bm25s``: bm25s's own tokenizer (``\\b\\w\\w+\\b``, its 33 English stop words) — a stock
  BM25 as anyone would write it;
- ``ours-bm25s-stop``: our word regex (`corpus.rank._WORD`) with the same 33 stop words;
- ``ours``: our word regex and our stop words (`corpus.words.STOPWORDS`, 171 words: English
  stop words plus question operators such as "what", "many", "first", "highest").

Ties in the ranking break by file order (stable sort).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from tablequest.corpus.lexical.rank import _WORD
from tablequest.corpus.lexical.words import STOPWORDS

Tokenizer = Callable[[str], list[str]]


def _tokenizer(pattern: re.Pattern[str], stop: frozenset[str]) -> Tokenizer:
    return lambda text: [w for w in pattern.findall(text.lower()) if w not in stop]


TOKENIZERS: dict[str, Tokenizer] = {
    "bm25s": _tokenizer(re.compile(r"\b\w\w+\b"), frozenset(STOPWORDS_EN)),
    "ours-bm25s-stop": _tokenizer(_WORD, frozenset(STOPWORDS_EN)),
    "ours": _tokenizer(_WORD, STOPWORDS),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/wtq"))
    parser.add_argument("--split", default="pristine-unseen-tables")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    paths = sorted(args.data.glob("csv/*-csv/*.csv"))
    keys = [p.relative_to(args.data).as_posix() for p in paths]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    lines = (args.data / "data" / f"{args.split}.tsv").read_text(encoding="utf-8").split("\n")
    questions = [line.split("\t") for line in lines[1:] if line.strip()][: args.limit]
    results = {}
    for name, tokenize in TOKENIZERS.items():
        model = bm25s.BM25()
        model.index([tokenize(t) for t in texts], show_progress=False)
        hits = {1: 0, 5: 0}
        for _qid, utterance, context, *_ in questions:
            tokens = tokenize(utterance)
            if not tokens:
                continue
            order = np.argsort(-model.get_scores(tokens), kind="stable")[:5]
            top = [keys[i] for i in order]
            hits[1] += top[0] == context
            hits[5] += context in top
        results[name] = {f"r{k}": round(v / len(questions), 4) for k, v in hits.items()}
    if args.json:
        print(json.dumps({"split": args.split, "n": len(questions), "results": results}))
        return
    print(f"WTQ {args.split}, n={len(questions)}, raw CSV text")
    for name, r in results.items():
        print(f"{name:<16} R@1 {r['r1']:.3f}  R@5 {r['r5']:.3f}")


if __name__ == "__main__":
    main()
