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

GREP = "grep-v2"
BM25 = "bm25-v1"


def grep_index(store: Store) -> GrepIndex:
    """The store's grep index, loaded or built for the current corpus."""
    cached = store.cached_index(GREP)
    if isinstance(cached, GrepIndex):
        return cached
    ids, texts = store.column("text")
    fp = store.fingerprint()
    blob = store.load_blob(GREP, fp)
    index = None
    if blob is not None:
        try:
            index = GrepIndex.from_blob(ids, texts, blob)
        except (ValueError, KeyError, OSError):  # another layout: rebuild and replace
            index = None
    if index is None:
        index = GrepIndex.build(ids, texts)
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

    def scores(self, query: str) -> np.ndarray[Any, Any]:
        """BM25 score of every table (in `ids` order); zeros when the query has no token."""
        tokens = tokenize([query])[0]
        if not tokens or not self.ids:
            return np.zeros(len(self.ids), dtype=np.float64)
        return np.asarray(self.model.get_scores(tokens), dtype=np.float64)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        if not tokenize([query])[0] or not self.ids:
            return []
        return top_scores(self.scores(query), k)


def top_scores(scores: np.ndarray[Any, Any], k: int) -> list[tuple[int, float]]:
    """Indices of the k highest positive scores, ties by position (table-id order)."""
    k = min(k, scores.size)
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k]
    # argpartition picks any of the scores tied with the k-th: take them all, then cut
    tied = np.flatnonzero(scores >= scores[part].min())
    order = tied[np.lexsort((tied, -scores[tied]))][:k]
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


HYBRID_ALPHA = 0.7  # weight of the dense cosine in score fusion; see hybrid_rank


def hybrid_rank(
    store: Store,
    query: str,
    k: int,
    *,
    encoder: Any,
    fusion: str = "score",
    alpha: float = HYBRID_ALPHA,
    depth: int = 100,
) -> list[Hit]:
    """BM25 and dense retrieval fused.

    ``fusion="score"`` (default): every table scores ``(1 − α)·bm25 / max(bm25) + α·cosine``
    (BM25 divided by the query's best BM25 score, so it lies in [0, 1] as cosines mostly do).
    ``fusion="rrf"``: reciprocal rank fusion (`fuse`) of the two top-`depth` lists.

    Choice (ours), made on WikiTableQuestions *training* questions only (never the test
    questions): score fusion with α = 0.7. On a 2,000-question training sample R@1 was flat for
    α in 0.6–0.75 and fell outside it; on the first 2,000 training questions α = 0.7 gives R@1
    0.454 against 0.404 for BM25 alone and 0.369 for equal-weight RRF (k = 60), which lets
    the weaker dense ranking pull the good BM25 top-1 down (docs/results.md).
    """
    from tablequest.corpus.dense import corpus_vectors, cosine_scores, dense_rank

    if fusion == "rrf":
        lexical = [h.table_id for h in bm25_rank(store, query, depth, rows=False)]
        semantic = [h.table_id for h in dense_rank(store, query, depth, encoder)]
        return fuse([lexical, semantic], k)
    if fusion != "score":
        raise ValueError(f"unknown fusion {fusion!r}; use score or rrf")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    index = bm25_index(store)
    ids, matrix = corpus_vectors(store, encoder)
    if not ids or k <= 0:
        return []
    lexical_scores = index.scores(query)
    if index.ids != ids:  # both are in table-id order; realign defensively
        position = {tid: i for i, tid in enumerate(index.ids)}
        lexical_scores = lexical_scores[[position[t] for t in ids]]
    best = float(lexical_scores.max()) if lexical_scores.size else 0.0
    lexical_part = lexical_scores / best if best > 0 else np.zeros(len(ids))
    semantic_part = cosine_scores(matrix, encoder.encode([query])[0])
    fused = (1.0 - alpha) * lexical_part + alpha * semantic_part.astype(np.float64)
    order = np.lexsort((np.arange(len(ids)), -fused))[:k]
    return [Hit(ids[i], float(fused[i])) for i in order]
