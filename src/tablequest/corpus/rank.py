"""Retrieval over a Store: grep (Eq. 1), BM25 and LLM-free question patterns.

Indexes are built on first use, persisted in the store keyed by the corpus fingerprint and
kept in the Store object for the rest of the process.

BM25 (ours where unstated): bm25s with its default Lucene variant (k1=1.5, b=0.75), English
stop words, lower-cased word tokens over the table's title, headers and cells.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from tablequest.corpus.grep import GrepIndex
from tablequest.corpus.store import Hit, Store
from tablequest.corpus.words import STOPWORDS
from tablequest.table.patterns import compile_pattern

GREP = "grep-v1"
BM25 = "bm25-v1"


def grep_index(store: Store) -> GrepIndex:
    """The store's grep index, loaded or built for the current corpus."""
    cached = store.cached_index(GREP)
    if isinstance(cached, GrepIndex):
        return cached
    ids, texts = store.column("text")
    fp = store.fingerprint()
    blob = store.load_blob(GREP, fp)
    index = GrepIndex.from_blob(ids, texts, blob) if blob else GrepIndex.build(ids, texts)
    if blob is None:
        store.save_blob(GREP, fp, index.arrays_blob())
    store.remember_index(GREP, index)
    return index


def matched_rows(
    store: Store, table_id: str, patterns: Sequence[str], *, limit: int | None = None
) -> dict[str, list[int]]:
    """Body row ids each pattern matches in a table (cells joined by ' | ')."""
    table = store.get(table_id)
    lines = [" | ".join(row) for row in table.body]
    out: dict[str, list[int]] = {}
    for p in dict.fromkeys(patterns):
        rx = compile_pattern(p)
        rows = [table.row_ids[i] for i, line in enumerate(lines) if rx.search(line)]
        if rows:
            out[p] = rows if limit is None else rows[:limit]
    return out


def grep_rank(store: Store, patterns: Sequence[str], k: int, *, rows: bool = True) -> list[Hit]:
    """Top-k tables by Eq. 1, each with the rows each pattern matched."""
    index = grep_index(store)
    return [
        Hit(index.ids[i], score, matched_rows(store, index.ids[i], patterns) if rows else {})
        for i, score in index.top(patterns, k)
    ]


_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)


def question_patterns(question: str) -> list[str]:
    """LLM-free grep patterns: the question's content words as whole words, in order.

    Choice (ours): words are matched whole (``\\bword\\b``) so that "team" does not hit
    "steam"; stop words and question operators ("last", "highest") are dropped.
    """
    words = [w.lower() for w in _WORD.findall(question)]
    content = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return [rf"\b{re.escape(w)}\b" for w in dict.fromkeys(content)]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens without English stop words."""
    return [[w for w in _WORD.findall(t.lower()) if w not in STOPWORDS] for t in texts]


class BM25Index:
    """bm25s over table plain text, with ids."""

    def __init__(self, ids: Sequence[str], model: Any) -> None:
        self.ids = list(ids)
        self.model = model

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> BM25Index:
        import bm25s

        model = bm25s.BM25()
        model.index(tokenize(texts), show_progress=False)
        return cls(ids, model)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = tokenize([query])[0]
        if not tokens or not self.ids:
            return []
        scores = np.asarray(self.model.get_scores(tokens), dtype=np.float64)
        return top_scores(scores, k)


def top_scores(scores: np.ndarray[Any, Any], k: int) -> list[tuple[int, float]]:
    """Indices of the k highest positive scores, ties by position (table-id order)."""
    k = min(k, scores.size)
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k]
    order = part[np.lexsort((part, -scores[part]))]
    return [(int(i), float(scores[i])) for i in order if scores[i] > 0]


def bm25_index(store: Store) -> BM25Index:
    cached = store.cached_index(BM25)
    if isinstance(cached, BM25Index):
        return cached
    ids, texts = store.column("plain")
    index = BM25Index.build(ids, texts)
    store.remember_index(BM25, index)
    return index


def bm25_rank(store: Store, query: str, k: int, *, rows: bool = True) -> list[Hit]:
    """Top-k tables by BM25, with the rows matching the question's content words."""
    index = bm25_index(store)
    patterns = question_patterns(query) if rows else []
    return [
        Hit(index.ids[i], score, matched_rows(store, index.ids[i], patterns) if rows else {})
        for i, score in index.search(query, k)
    ]


RRF_K = 60  # reciprocal-rank-fusion constant of Cormack et al. (2009); not tuned here


def fuse(rankings: Sequence[Sequence[str]], k: int) -> list[Hit]:
    """Reciprocal rank fusion: score(t) = Σ 1 / (RRF_K + rank), ties by first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, tid in enumerate(ranking, start=1):
            scores[tid] = scores.get(tid, 0.0) + 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda t: -scores[t])
    return [Hit(t, scores[t]) for t in order[:k]]


def hybrid_rank(store: Store, query: str, k: int, *, encoder: Any, depth: int = 100) -> list[Hit]:
    """BM25 and dense rankings (top `depth` each) fused by reciprocal rank fusion."""
    from tablequest.corpus.dense import dense_rank

    lexical = [h.table_id for h in bm25_rank(store, query, depth, rows=False)]
    semantic = [h.table_id for h in dense_rank(store, query, depth, encoder)]
    return fuse([lexical, semantic], k)
