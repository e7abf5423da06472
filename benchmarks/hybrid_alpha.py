"""Choose the hybrid (BM25 + dense) fusion weight α on WikiTableQuestions *training* questions.

    python benchmarks/hybrid_alpha.py [--data ../shared/data/wtq] [--split training]
                                      [--limit 2000] [--cache-dir DIR] [--encoder minilm] [--json]

For each question the BM25 scores (`corpus.rank.bm25_index`) and dense cosines
(`corpus.dense.corpus_vectors`) of every table of the WTQ corpus are computed once; then
R@1 / R@5 of score fusion ``(1 − α)·bm25 / max(bm25) + α·cosine`` (`corpus.rank.hybrid_rank`)
is measured for α = 0, 0.05, …, 1, plus equal-weight reciprocal rank fusion (k = 60) of the
two top-100 lists. The default split is the training questions: the pristine-unseen test
questions must never be used to choose α (pass `--split pristine-unseen-tables` only to
report, never to tune). Ranking ties break by table id, as in `hybrid_rank`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from tablequest.corpus.dense.encoders import make_encoder
from tablequest.corpus.dense.index import corpus_vectors
from tablequest.corpus.lexical.rank import RRF_K, bm25_index
from tablequest.eval.corpora import build_corpus, ensure_dense
from tablequest.eval.datasets import load

ALPHAS = [round(0.05 * i, 2) for i in range(21)]


def _ranks(fused: np.ndarray[Any, Any], gold: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """1-based rank of each question's gold table (ties broken by table index)."""
    n, m = fused.shape
    gold_score = fused[np.arange(n), gold][:, None]
    better = (fused > gold_score).sum(axis=1)
    tied_before = ((fused == gold_score) & (np.arange(m)[None, :] < gold[:, None])).sum(axis=1)
    ranks: np.ndarray[Any, Any] = better + tied_before + 1
    return ranks


def _rrf_ranks(
    lexical: np.ndarray[Any, Any], semantic: np.ndarray[Any, Any], gold: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    n, m = lexical.shape
    depth = min(100, m)
    fused = np.zeros((n, m))
    for scores in (lexical, semantic):
        order = np.lexsort((np.tile(np.arange(m), (n, 1)), -scores), axis=1)[:, :depth]
        rows = np.repeat(np.arange(n), depth)
        fused[rows, order.ravel()] += np.tile(1.0 / (RRF_K + np.arange(1, depth + 1)), n)
    return _ranks(fused, gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/wtq"))
    parser.add_argument("--split", default="training")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    dataset = load("wtq", args.data, split=args.split)
    questions = dataset.questions[: args.limit]
    corpus = build_corpus(dataset, "csv", cache_dir=args.cache_dir)
    encoder = make_encoder(args.encoder)
    if encoder is None:
        raise SystemExit(f"encoder {args.encoder!r} has no vectors")
    start = time.monotonic()
    with corpus.store:
        ensure_dense(corpus, encoder, cache_dir=args.cache_dir)
        ids, matrix = corpus_vectors(corpus.store, encoder)
        index = bm25_index(corpus.store)
        assert index.ids == ids, "BM25 and dense ids are both in table-id order"
        position = {tid: i for i, tid in enumerate(ids)}
        gold = np.array([position[corpus.table_id(q.gold_table_ids[0])] for q in questions])
        lexical = np.stack([index.scores(q.question) for q in questions])
        queries = encoder.encode([q.question for q in questions])
    semantic = (queries @ matrix.T).astype(np.float64)
    best = lexical.max(axis=1, keepdims=True)
    lexical_part = np.divide(lexical, best, out=np.zeros_like(lexical), where=best > 0)
    rows: list[dict[str, Any]] = []
    for alpha in ALPHAS:
        ranks = _ranks((1.0 - alpha) * lexical_part + alpha * semantic, gold)
        rows.append({"fusion": "score", "alpha": alpha, **_recalls(ranks)})
    rows.append({"fusion": "rrf", "alpha": None, **_recalls(_rrf_ranks(lexical, semantic, gold))})
    result = {
        "split": args.split,
        "n": len(questions),
        "encoder": encoder.name,
        "seconds": round(time.monotonic() - start, 1),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"WTQ {args.split}, n={len(questions)}, {encoder.name}, {result['seconds']} s")
    print("fusion  alpha   R@1    R@5")
    for row in rows:
        alpha = "-" if row["alpha"] is None else f"{row['alpha']:.2f}"
        print(f"{row['fusion']:<7} {alpha:>5}  {row['r1']:.3f}  {row['r5']:.3f}")


def _recalls(ranks: np.ndarray[Any, Any]) -> dict[str, float]:
    return {"r1": round(float((ranks <= 1).mean()), 4), "r5": round(float((ranks <= 5).mean()), 4)}


if __name__ == "__main__":
    main()
