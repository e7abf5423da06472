"""``phrase-hybrid`` over a sharded corpus, merged exactly (`shardrank.shard_map` rounds).

One store scores every table by `retrievers.phrase_fusion` of four features: phrase BM25
(bm25s, k1 0.7, b 0.3, over the header-first text) divided by its maximum over the store,
the cosine of the question with the table's vector and with its header line's, and cell
match (`lexical.cellmatch`: ln(1 + N/df) of each question n-gram that is a whole cell)
divided by its maximum. The corpus-wide parts are the BM25 statistics (N, the average
length, each query term's df), the cells' df (and N), and the two maxima; the rest is per
table. So a sharded corpus ranks in three rounds over its shards:

1. statistics: each shard's (N, total length, df) of the phrase tokens and df of the
   question's n-grams among its cells; summed (`GlobalStats.combine`, `cell_idf`);
2. maxima: each shard's best phrase BM25 and cell score with those numbers; the largest;
3. scores: each shard fuses its tables' features with the corpus-wide numbers and returns
   its top-k, merged by (−score, table id) as one store orders them.

Each shard keeps phrase postings (`ShardBM25` with bm25s's arithmetic and the phrase index's
k1 and b), its cell index and its table and header vectors (`prepare_dense` with both views)
in memory, so every number is the one the whole store computes: the lists equal one store's,
scores and ties included (tests/corpus/test_shards.py checks every registered retriever;
docs/scale.md has the measurement on WikiTableQuestions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tablequest.corpus.dense.encoders import Encoder, Matrix
from tablequest.corpus.dense.index import View, cosine_scores
from tablequest.corpus.lexical.bm25global import GlobalStats, ShardBM25
from tablequest.corpus.lexical.cellmatch import cell_idf, cell_index, question_grams
from tablequest.corpus.lexical.phrase import PHRASE_BM25
from tablequest.corpus.retrieval.shardrank import (
    ShardIndexes,
    VectorsMissing,
    merge_top,
    prepare_dense,
    shard_map,
    top_by_id_order,
)
from tablequest.corpus.storage.corpus import Corpus
from tablequest.corpus.storage.store import Hit
from tablequest.corpus.storage.views import header_first_texts

__all__ = ["Fusion", "sharded_phrase_hybrid"]

Fusion = Callable[..., Any]
"""`phrase_fusion(lexical, tables, headers, cells, *, maxima)` → every table's score."""

PHRASE_SHARD = "bm25-phrase-shard-v1"
VIEWS: tuple[View, ...] = ("table", "header")


def _phrase(ix: ShardIndexes) -> tuple[list[str], ShardBM25]:
    """This shard's phrase postings (header-first texts, phrase tokens), kept in memory."""
    cached = ix.store.cached_index(PHRASE_SHARD)
    if isinstance(cached, tuple):
        return cached
    ids, texts = header_first_texts(ix.store)
    params = dict(PHRASE_BM25.params)
    built = (ids, ShardBM25(PHRASE_BM25.tokens(texts), k1=params["k1"], b=params["b"]))
    ix.store.remember_index(PHRASE_SHARD, built)
    return built


def phrase_stats(
    ix: ShardIndexes, tokens: Sequence[str], grams: Sequence[str]
) -> tuple[tuple[int, int, dict[str, int]], dict[str, int]]:
    """Round 1 on one shard: its phrase BM25 statistics and its cells' df of `grams`."""
    cells = cell_index(ix.store)
    df = {g: cells.df(g) for g in grams if cells.df(g)}
    return _phrase(ix)[1].stats(tokens), df


def _features(
    ix: ShardIndexes,
    tokens: Sequence[str],
    stats: GlobalStats,
    question: str,
    idf: Mapping[str, float],
) -> tuple[list[str], Any, Any]:
    """(ids, phrase BM25 scores, cell scores) of this shard with corpus-wide numbers."""

    def compute() -> tuple[list[str], Any, Any]:
        ids, index = _phrase(ix)
        cells = cell_index(ix.store)
        return ids, index.scores(tokens, stats), cells.scores(question, idf)

    key = (tuple(tokens), stats, question, tuple(sorted(idf.items())))
    found: tuple[list[str], Any, Any] = ix.memo("phrase", key, compute)
    return found


def phrase_maxima(
    ix: ShardIndexes,
    tokens: Sequence[str],
    stats: GlobalStats,
    question: str,
    idf: Mapping[str, float],
) -> tuple[float, float]:
    """Round 2 on one shard: its best phrase BM25 and cell scores."""
    _, lexical, cells = _features(ix, tokens, stats, question, idf)
    return (
        float(lexical.max()) if lexical.size else 0.0,
        float(cells.max()) if cells.size else 0.0,
    )


def phrase_top(
    ix: ShardIndexes,
    tokens: Sequence[str],
    stats: GlobalStats,
    question: str,
    idf: Mapping[str, float],
    maxima: tuple[float, float],
    fusion: Fusion,
    encoder: str,
    query: Matrix,
    k: int,
) -> list[tuple[str, float]]:
    """Round 3 on one shard: its top-k by `fusion` (`retrievers.phrase_fusion`) with the
    corpus-wide maxima."""
    ids, tables = ix.vectors(encoder, "table")
    _, headers = ix.vectors(encoder, "header")
    if not ids or k <= 0:
        return []
    phrase_ids, lexical, cells = _features(ix, tokens, stats, question, idf)
    if phrase_ids != ids:  # both in table-id order; never differ for one shard's tables
        raise RuntimeError("phrase index and vectors disagree on the shard's tables")
    fused = fusion(
        lexical,
        cosine_scores(tables, query).astype(np.float64),
        cosine_scores(headers, query).astype(np.float64),
        cells,
        maxima=maxima,
    )
    return top_by_id_order(ids, fused, k)


def sharded_phrase_hybrid(
    corpus: Corpus, question: str, k: int, encoder: Encoder, fusion: Fusion
) -> list[Hit]:
    """`PhraseHybridRetriever.rank` (without rows) of a sharded corpus, equal to one store's;
    `fusion` is `retrievers.phrase_fusion` (a module-level function: shard actors run it)."""
    if k <= 0:
        return []
    prepare_dense(corpus, encoder, views=VIEWS)
    tokens = PHRASE_BM25.query_tokens([question])[0]
    grams = sorted(question_grams(question))
    parts = shard_map(corpus, phrase_stats, tokens, grams)
    stats = GlobalStats.combine([p[0] for p in parts])
    if stats.n_docs == 0:
        return []
    df: dict[str, int] = {}
    for _, part in parts:
        for gram, count in part.items():
            df[gram] = df.get(gram, 0) + count
    idf = {gram: cell_idf(stats.n_docs, count) for gram, count in df.items()}
    bests = shard_map(corpus, phrase_maxima, tokens, stats, question, idf)
    maxima = (max(b[0] for b in bests), max(b[1] for b in bests))
    query = encoder.encode([question])[0]
    args = (tokens, stats, question, idf, maxima, fusion, encoder.name, query, k)
    try:
        parts = shard_map(corpus, phrase_top, *args)
    except VectorsMissing:  # a restarted actor of a read-only shard lost its vectors
        prepare_dense(corpus, encoder, force=True, views=VIEWS)
        parts = shard_map(corpus, phrase_top, *args)
    return merge_top(parts, k)
