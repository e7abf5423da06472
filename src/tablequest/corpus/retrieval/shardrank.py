"""Ranking a sharded corpus: every shard ranks its own tables, the merge is exact.

Each retriever's score of a table depends only on the table and on corpus-wide numbers, so
a shard's top-k holds every table of the global top-k it owns, and merging the shards'
top-k lists by the one-store order gives the one-store answer, ties included:

- grep (Eq. 1): a table's score is its own; order (−score, text length, table id), as
  `GrepIndex.top`;
- bm25: scored with corpus-wide statistics (`corpus.bm25global`), order (−score, id);
- dense: cosine per row, computed row by row (`dense.cosine_scores`), order (−score, id);
- hybrid (score fusion): BM25 divided by the query's best BM25 score over the *whole*
  corpus (a first round asks every shard for its best), plus α·cosine; order (−score, id);
  with ``rrf`` it fuses the exact BM25 and dense lists;
- phrase-hybrid: phrase BM25 with corpus-wide statistics, cell match with corpus-wide idfs,
  both divided by their corpus-wide maxima, plus the two cosines (`shardphrase`).

`ShardIndexes` is one shard's in-memory state (grep index, BM25 postings, vectors); a
backend (`ShardBackend`) runs its methods on every shard: `LocalShards` in this process,
`tablequest.scale.actors.RayShards` on one Ray actor per shard. Vectors are encoded where
the encoder is (the caller's process): shards report the texts they lack vectors for and
receive them (`prepare_dense`), so an encoder and its keys never leave the caller.

Every function here takes any `Corpus` (`corpus.storage.corpus`): one store is one shard.
Retrievers rank one store directly (`one_store`: its persisted bm25s indexes give the same
scores) and a sharded corpus through these. A plugin retriever ranks a sharded corpus the
same way: `shard_map(corpus, fn, *args)` runs ``fn(indexes, *args)`` on every shard's
`ShardIndexes` (a module-level function, so Ray actors can run it too) — first to gather the
corpus-wide numbers its score needs, then to score each shard's tables with them — and
`merge_top` merges the per-shard top-k lists in the one-store order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.encoders import Encoder, Matrix
from tablequest.corpus.dense.index import (
    View,
    corpus_vectors,
    cosine_scores,
    embedding_model,
    header_lines,
)
from tablequest.corpus.lexical.bm25global import GlobalStats, ShardBM25
from tablequest.corpus.lexical.rank import fuse, grep_index, grep_search, tokenize, top_scores
from tablequest.corpus.storage.corpus import Corpus, ShardBackend
from tablequest.corpus.storage.store import Hit, Store
from tablequest.errors import BadValue, RunError
from tablequest.table import DroppedPattern

__all__ = [
    "LocalShards",
    "ShardIndexes",
    "backend_of",
    "grep_hits",
    "grep_ranking",
    "merge_top",
    "one_store",
    "prepare_dense",
    "shard_map",
    "sharded_bm25",
    "sharded_dense",
    "sharded_grep",
    "sharded_hybrid",
    "top_by_id_order",
]

BM25_SHARD = "bm25-shard-v1"


class VectorsMissing(RunError, RuntimeError):
    """A shard has tables without vectors of the encoder (e.g. its actor was restarted)."""


class _GivenVectors:
    """An `Encoder` that hands out vectors computed elsewhere (by plain text)."""

    def __init__(self, name: str, vectors: dict[str, Any]) -> None:
        self.name = name
        self.vectors = vectors

    def encode(self, texts: Sequence[str]) -> Matrix:
        try:
            return np.stack([np.asarray(self.vectors[t], dtype=np.float32) for t in texts])
        except KeyError:
            raise VectorsMissing(
                f"shard has tables without {self.name} vectors: call prepare_dense first"
            ) from None


class ShardIndexes:
    """One shard's retrieval state, built lazily and kept in memory."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._given: dict[str, dict[str, Any]] = {}
        self._last: tuple[Any, npt.NDArray[np.float64]] | None = None
        self._memo: dict[str, tuple[Any, Any]] = {}

    def apply(self, fn: Any, *args: Any) -> Any:
        """``fn(self, *args)``: any scoring primitive of one shard (`shard_map`)."""
        return fn(self, *args)

    def memo(self, name: str, key: Any, compute: Any) -> Any:
        """``compute()``, kept under `name` while `key` stays the same (one entry per name:
        the rounds of one query reuse what the earlier rounds computed)."""
        entry = self._memo.get(name)
        if entry is not None and entry[0] == key:
            return entry[1]
        value = compute()
        self._memo[name] = (key, value)
        return value

    @classmethod
    def open(
        cls, path: str, *, read_only: bool = True, lock_timeout: float | None = None
    ) -> ShardIndexes:
        """The indexes of the shard file `path` (used by shard actors); `lock_timeout` is the
        run's `store.lock_timeout` (None: this process's settings)."""
        return cls(Store(path, read_only=read_only, lock_timeout=lock_timeout))

    def close(self) -> None:
        self.store.close()

    def size(self) -> int:
        return len(self.store)

    def warm(self, what: Sequence[str] = ("grep", "bm25")) -> dict[str, float]:
        """Build the named indexes now; seconds each took."""
        import time

        took = {}
        for name in what:
            start = time.perf_counter()
            if name == "grep":
                grep_index(self.store)
            elif name == "bm25":
                self._bm25()
            else:
                raise ValueError(f"unknown index {name!r}; grep or bm25")
            took[name] = time.perf_counter() - start
        return took

    # -- grep --------------------------------------------------------------------------
    def grep_top(
        self, patterns: Sequence[str], k: int
    ) -> tuple[list[tuple[str, float, int]], list[str]]:
        """This shard's top-k by Eq. 1 as (table id, score, text length), and the patterns
        it dropped over their time budget (`GrepIndex.rank`)."""
        index = grep_index(self.store)
        ranking = index.rank(patterns, k)
        hits = [(index.ids[i], s, len(index.texts[i])) for i, s in ranking.hits]
        return hits, [d.pattern for d in ranking.dropped]

    # -- bm25 --------------------------------------------------------------------------
    def _bm25(self) -> tuple[list[str], ShardBM25]:
        cached = self.store.cached_index(BM25_SHARD)
        if isinstance(cached, tuple):
            return cached
        ids, plains = self.store.column("plain")
        built = (ids, ShardBM25(tokenize(plains)))
        self.store.remember_index(BM25_SHARD, built)
        return built

    def bm25_stats(self, tokens: Sequence[str]) -> tuple[int, int, dict[str, int]]:
        return self._bm25()[1].stats(tokens)

    def _bm25_scores(self, tokens: Sequence[str], stats: GlobalStats) -> npt.NDArray[np.float64]:
        key = (tuple(tokens), stats)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        scores = self._bm25()[1].scores(tokens, stats)
        self._last = (key, scores)
        return scores

    def bm25_top(
        self, tokens: Sequence[str], stats: GlobalStats, k: int
    ) -> list[tuple[str, float]]:
        ids = self._bm25()[0]
        if not ids:
            return []
        return [(ids[i], s) for i, s in top_scores(self._bm25_scores(tokens, stats), k)]

    def bm25_max(self, tokens: Sequence[str], stats: GlobalStats) -> float:
        scores = self._bm25_scores(tokens, stats)
        return float(scores.max()) if scores.size else 0.0

    # -- dense -------------------------------------------------------------------------
    def missing_vectors(self, encoder: str, view: View = "table") -> list[str]:
        """Texts (plain text, or the header line for ``view="header"``) of this shard's
        tables that have no `encoder` vector of `view` yet."""
        key = _vector_key(encoder, view)
        if self.store.cached_index(f"dense:{key}") is not None:
            return []
        model = embedding_model(encoder, view)
        rows = self.store.con.execute(
            "SELECT DISTINCT t.content_hash, t.plain FROM tables t LEFT JOIN embeddings e "
            "ON e.content_hash = t.content_hash AND e.model = ? WHERE e.vector IS NULL",
            [model],
        ).fetchall()
        if view == "table":
            texts = [r[1] for r in rows]
        else:
            texts = list(header_lines(self.store, [r[0] for r in rows]).values())
        given = self._given.get(key, {})
        return [t for t in dict.fromkeys(texts) if t not in given]

    def add_vectors(
        self, encoder: str, texts: Sequence[str], vectors: Matrix, view: View = "table"
    ) -> None:
        """Vectors for `texts` (stored in the shard when it is writable)."""
        given = self._given.setdefault(_vector_key(encoder, view), {})
        given.update(zip(texts, np.asarray(vectors, dtype=np.float32), strict=True))

    def vectors(self, encoder: str, view: View = "table") -> tuple[list[str], Matrix]:
        """(table ids, their `encoder` vectors of `view`), with the vectors given to it."""
        key = _vector_key(encoder, view)
        given = _GivenVectors(encoder, self._given.get(key, {}))
        ids, matrix = corpus_vectors(self.store, given, view=view)
        self._given.pop(key, None)  # now in the store or in its in-memory index
        return ids, matrix

    def dense_top(self, encoder: str, query: Matrix, k: int) -> list[tuple[str, float]]:
        ids, matrix = self.vectors(encoder)
        if not ids or k <= 0:
            return []
        return top_by_id_order(ids, cosine_scores(matrix, query).astype(np.float64), k)

    def hybrid_top(
        self,
        tokens: Sequence[str],
        stats: GlobalStats,
        best: float,
        encoder: str,
        query: Matrix,
        alpha: float,
        k: int,
    ) -> list[tuple[str, float]]:
        """Score fusion with the corpus-wide best BM25 score `best` (`rank.hybrid_rank`)."""
        ids, matrix = self.vectors(encoder)
        if not ids or k <= 0:
            return []
        bm25_ids, _ = self._bm25()
        lexical = self._bm25_scores(tokens, stats)
        if bm25_ids != ids:  # both are in table-id order; realign defensively
            position = {tid: i for i, tid in enumerate(bm25_ids)}
            lexical = lexical[[position[t] for t in ids]]
        lexical_part = lexical / best if best > 0 else np.zeros(len(ids))
        semantic = cosine_scores(matrix, query).astype(np.float64)
        return top_by_id_order(ids, (1.0 - alpha) * lexical_part + alpha * semantic, k)


def _vector_key(encoder: str, view: View) -> str:
    return encoder if view == "table" else f"{encoder}#header"


def top_by_id_order(
    ids: list[str], scores: npt.NDArray[np.float64], k: int
) -> list[tuple[str, float]]:
    """A shard's top-k (table id, score) by (−score, table id) of `scores` in `ids` order."""
    order = np.lexsort((np.arange(len(ids)), -scores))[:k]
    return [(ids[i], float(scores[i])) for i in order]


class LocalShards:
    """The in-process backend: one `ShardIndexes` per shard store, called in turn."""

    def __init__(self, corpus: Corpus) -> None:
        self.shards = [ShardIndexes(s) for s in corpus.shards]

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [getattr(shard, method)(*a) for shard, a in zip(self.shards, args, strict=True)]

    def close(self) -> None:
        """The shard stores belong to the corpus, which closes them."""


def backend_of(store: Corpus) -> ShardBackend:
    """The corpus's backend (`LocalShards` unless another one was attached)."""
    if store.backend is None:
        store.backend = LocalShards(store)
    return store.backend


def one_store(corpus: Corpus) -> Store | None:
    """The store to rank directly when the corpus is one store; None for a sharded corpus
    (ranked per shard and merged)."""
    return corpus.shards[0] if corpus.manifest is None else None


def _same(store: Corpus, *args: Any) -> list[tuple[Any, ...]]:
    return [args] * len(store.shards)


def shard_map(corpus: Corpus, fn: Any, *args: Any) -> list[Any]:
    """``fn(indexes, *args)`` on every shard's `ShardIndexes`, results in shard order (on the
    corpus's backend: in this process, or on Ray actors — so `fn` is a module-level
    function). One store is one shard."""
    return backend_of(corpus).call("apply", _same(corpus, fn, *args))


def merge_top(parts: Sequence[Sequence[tuple[str, float]]], k: int) -> list[Hit]:
    """The shards' top-k lists of (table id, score) merged by (−score, table id)."""
    merged = sorted((row for part in parts for row in part), key=lambda r: (-r[1], r[0]))
    return [Hit(tid, score) for tid, score in merged[:k]]


def sharded_grep(store: Corpus, patterns: Sequence[str], k: int) -> list[Hit]:
    """Eq. 1 top-k over every shard, merged in `GrepIndex.top`'s order (`grep_ranking`)."""
    return _sharded_grep(store, patterns, k)[0]


def _sharded_grep(
    store: Corpus, patterns: Sequence[str], k: int
) -> tuple[list[Hit], tuple[DroppedPattern, ...]]:
    """Eq. 1 divides by the number of patterns evaluated, so all shards must evaluate the same
    ones: a pattern one shard dropped over its time budget (each shard has the whole
    `PATTERN_BUDGET`) is dropped on every shard, which rank again without it (the patterns
    kept are cached in each shard's index, so the second round costs little).
    """
    if k <= 0:
        return [], ()
    kept = list(patterns)
    while True:
        parts = backend_of(store).call("grep_top", _same(store, kept, k))
        dropped = {p for _, gone in parts for p in gone}
        if all(set(gone) == dropped for _, gone in parts):
            break
        kept = [p for p in kept if p not in dropped]
    rows = (row for hits, _ in parts for row in hits)
    merged = sorted(rows, key=lambda r: (-r[1], r[2], r[0]))
    gone = tuple(
        DroppedPattern(p, "ran past its time budget on a shard") for p in patterns if p not in kept
    ) + tuple(DroppedPattern(p, "ran past its time budget") for p in kept if p in dropped)
    return [Hit(tid, score) for tid, score, _ in merged[:k]], gone


def grep_hits(store: Corpus, patterns: Sequence[str], k: int) -> list[Hit]:
    """Eq. 1 top-k (no matched rows) of a store or a sharded corpus."""
    return grep_ranking(store, patterns, k)[0]


def grep_ranking(
    store: Corpus, patterns: Sequence[str], k: int
) -> tuple[list[Hit], tuple[DroppedPattern, ...]]:
    """Eq. 1 top-k (no matched rows) of a store or a sharded corpus, and the patterns dropped
    for running past their time budget (Eq. 1 is over the patterns kept)."""
    one = one_store(store)
    if one is None:
        return _sharded_grep(store, patterns, k)
    return grep_search(one, patterns, k, rows=False)


def global_stats(store: Corpus, tokens: Sequence[str]) -> GlobalStats:
    """Corpus-wide BM25 statistics of the query's tokens (one round over the shards)."""
    return GlobalStats.combine(backend_of(store).call("bm25_stats", _same(store, list(tokens))))


def sharded_bm25(store: Corpus, query: str, k: int) -> list[Hit]:
    """BM25 top-k with corpus-wide statistics (equal to `rank.bm25_rank` on one store)."""
    tokens = tokenize([query])[0]
    if not tokens or k <= 0:
        return []
    stats = global_stats(store, tokens)
    if stats.n_docs == 0:
        return []
    return merge_top(backend_of(store).call("bm25_top", _same(store, tokens, stats, k)), k)


def prepare_dense(
    store: Corpus, encoder: Encoder, *, force: bool = False, views: Sequence[View] = ("table",)
) -> None:
    """Give every shard the vectors (of each of `views`) it lacks, encoded here in one batch
    per shard."""
    for view in views:
        key = f"dense-ready:{_vector_key(encoder.name, view)}"
        if store.cached_index(key) is not None and not force:
            continue
        backend = backend_of(store)
        missing = backend.call("missing_vectors", _same(store, encoder.name, view))
        if any(missing):
            args = []
            for texts in missing:
                vectors = encoder.encode(texts) if texts else np.zeros((0, 1), dtype=np.float32)
                args.append((encoder.name, texts, vectors, view))
            backend.call("add_vectors", args)
        store.remember_index(key, True)


def sharded_dense(store: Corpus, query: str, k: int, encoder: Encoder) -> list[Hit]:
    """Cosine top-k over every shard (equal to `dense.dense_rank` on one store)."""
    if k <= 0:
        return []
    q = encoder.encode([query])[0]
    parts = with_vectors(store, encoder, "dense_top", _same(store, encoder.name, q, k))
    return merge_top(parts, k)


def with_vectors(
    store: Corpus,
    encoder: Encoder,
    method: str,
    args: list[tuple[Any, ...]],
    views: Sequence[View] = ("table",),
) -> list[Any]:
    """Call a method that needs vectors; once more after re-preparing when a shard lost
    them (a restarted actor of a read-only shard keeps vectors in memory only)."""
    prepare_dense(store, encoder, views=views)
    try:
        return backend_of(store).call(method, args)
    except VectorsMissing:
        prepare_dense(store, encoder, force=True, views=views)
        return backend_of(store).call(method, args)


def sharded_hybrid(
    store: Corpus,
    query: str,
    k: int,
    *,
    encoder: Encoder,
    fusion: str = "score",
    alpha: float = 0.7,
    depth: int = 100,
) -> list[Hit]:
    """`rank.hybrid_rank` over shards: the BM25 normalizer is the corpus-wide best score."""
    if fusion == "rrf":
        lexical = [h.table_id for h in sharded_bm25(store, query, depth)]
        semantic = [h.table_id for h in sharded_dense(store, query, depth, encoder)]
        return fuse([lexical, semantic], k)
    if fusion != "score":
        raise BadValue(f"unknown fusion {fusion!r}; use score or rrf")
    if not 0.0 <= alpha <= 1.0:
        raise BadValue(f"alpha must be in [0, 1], got {alpha}")
    if k <= 0:
        return []
    tokens = tokenize([query])[0]
    stats = global_stats(store, tokens)
    best = max(backend_of(store).call("bm25_max", _same(store, tokens, stats)), default=0.0)
    q = encoder.encode([query])[0]
    args = _same(store, tokens, stats, best, encoder.name, q, alpha, k)
    return merge_top(with_vectors(store, encoder, "hybrid_top", args), k)
