"""Does a retriever rank a sharded corpus as it ranks one store? Every question, top-k lists.

Builds (or reuses, under --cache-dir) a benchmark's corpus as one store, copies it into N
shards next to it (`scale.evalrun.shard_corpus`, as ``eval retrieval --shards N`` does),
gives both the same vectors (`eval.corpora.ensure_dense`, through the shared cache), then ranks
every question with the retriever on both and compares the top-k lists (ids and scores) and
R@1/R@5/R@10. Prints one JSON object.

    python benchmarks/sharded_retrieval.py --data ../shared/data/wtq --method phrase-hybrid \
        --shards 2 --encoder minilm --cache-dir /tmp/tq-shards
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tablequest.corpus.retrieval.retrievers import RetrieverSettings, make_retriever
from tablequest.eval.corpora import build_corpus, ensure_dense
from tablequest.eval.datasets import load
from tablequest.scale.evalrun import shard_corpus


def _rank(corpus: Any, retriever: Any, questions: list[Any], k: int) -> tuple[list[Any], float]:
    prepare = getattr(retriever, "prepare", None)
    start = time.perf_counter()
    if prepare is not None:
        prepare(corpus.store)
    lists = [
        [(h.table_id, h.score) for h in retriever.rank(corpus.store, q.question, k)]
        for q in questions
    ]
    return lists, time.perf_counter() - start


def _header_vectors(one: Any, encoder: str) -> list[tuple[str, str, Any]]:
    """The one store's header-line vectors (content hash, model, vector)."""
    model = f"{encoder}#header-v2"
    rows = (
        one.store.shards[0]
        .con.execute("SELECT content_hash, vector FROM embeddings WHERE model = ?", [model])
        .fetchall()
    )
    return [(h, model, v) for h, v in rows]


def _give_vectors(sharded: Any, rows: list[tuple[str, str, Any]]) -> None:
    """The same header-line vectors in every shard (encoded in other batches, a vector can
    differ in its last bits: the merge is exact for the same vectors)."""
    sharded.reopen(read_only=False)
    for shard in sharded.store.shards:
        shard.con.execute("DELETE FROM embeddings WHERE model = ?", [rows[0][1]])
        shard.con.executemany("INSERT INTO embeddings VALUES (?, ?, ?)", rows)
    sharded.reopen(read_only=True)


def _recall(corpus: Any, questions: list[Any], lists: list[Any], k: int) -> float:
    hits = 0
    for q, ranked in zip(questions, lists, strict=True):
        gold = set(corpus.table_ids(q.gold_table_ids))
        hits += any(tid in gold for tid, _ in ranked[:k])
    return round(hits / len(questions), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--dataset", default="wtq")
    parser.add_argument("--split", default=None)
    parser.add_argument("--method", default="phrase-hybrid")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument(
        "--encode-shards",
        action="store_true",
        help="Encode the shards' header lines per shard instead of copying the store's.",
    )
    args = parser.parse_args()

    ds = load(args.dataset, args.data, **({"split": args.split} if args.split else {}))
    questions = list(ds.questions)[: args.limit]
    settings = RetrieverSettings(encoder=args.encoder)
    one = build_corpus(ds, "csv", cache_dir=args.cache_dir, read_only=False)
    encoder = getattr(make_retriever(args.method, settings), "encoder", None)
    if encoder is not None:
        ensure_dense(one, encoder, cache_dir=args.cache_dir)
    want, one_s = _rank(one, make_retriever(args.method, settings), questions, args.k)
    headers = _header_vectors(one, encoder.name) if encoder is not None else []
    one.close()
    sharded = shard_corpus(build_corpus(ds, "csv", cache_dir=args.cache_dir), args.shards)
    if encoder is not None:
        ensure_dense(sharded, encoder, cache_dir=args.cache_dir)  # the shared cache's vectors
        if headers and not args.encode_shards:
            _give_vectors(sharded, headers)
    got, sharded_s = _rank(sharded, make_retriever(args.method, settings), questions, args.k)
    sizes = [len(s) for s in sharded.store.shards]
    differ = [q.id for q, a, b in zip(questions, want, got, strict=True) if a != b]
    gap = max(
        (
            abs(x[1] - y[1])
            for a, b in zip(want, got, strict=True)
            for x, y in zip(a, b, strict=True)
        ),
        default=0.0,
    )
    same_ids = sum([t for t, _ in a] == [t for t, _ in b] for a, b in zip(want, got, strict=True))
    print(json.dumps({
        "dataset": ds.name, "method": args.method, "encoder": args.encoder,
        "questions": len(questions), "k": args.k, "shards": sizes,
        "equal_lists_and_scores": len(questions) - len(differ), "equal_ids": same_ids,
        "max_score_gap": gap,
        "differ": differ[:20],
        "one_store": {f"R@{k}": _recall(one, questions, want, k) for k in (1, 5, 10)},
        "sharded": {f"R@{k}": _recall(sharded, questions, got, k) for k in (1, 5, 10)},
        "rank_s": {"one_store": round(one_s, 1), "sharded": round(sharded_s, 1)},
    }))  # fmt: skip
    sharded.close()


if __name__ == "__main__":
    main()
