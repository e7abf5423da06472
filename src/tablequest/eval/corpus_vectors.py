"""Dense vectors of the eval corpora, shared across the corpora of one cache directory.

``<cache dir>/embeddings.duckdb`` holds every vector encoded for a corpus of that directory,
keyed by content hash and encoder (and view: ``ENCODER#header-v2`` for ``phrase-hybrid``'s
header rows, `corpus.dense.index.embedding_model`), so the formats of one dataset (csv,
markdown, …: the same content) are encoded once. `ensure_dense` copies what the shared cache
has into a corpus and encodes the rest (the shared cache itself: `eval.shared_vectors`).

Vectors move as NumPy arrays and one Arrow insert per copy (`corpus.insert_vectors`):
DuckDB's row-by-row ``executemany`` of float lists cost ~1 s per 1,000 vectors, a third of
a cold WTQ evaluation's non-encoding time (issue 38).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from tablequest.corpus import (
    Store,
    StoreLocked,
    View,
    corpus_vectors,
    embedding_model,
    ensure_embeddings,
)
from tablequest.eval.corpora import BuiltCorpus, CorpusError, default_corpus_dir
from tablequest.eval.shared_vectors import copy_vectors, shared_cache

__all__ = ["ensure_dense"]


def ensure_dense(
    corpus: BuiltCorpus,
    encoder: Any,
    *,
    cache_dir: str | Path | None = None,
    views: Sequence[View] = ("table",),
) -> int:
    """Make sure every table of the corpus has a vector of `encoder` for each of `views`;
    return how many were new.

    Vectors already in the shared cache of `cache_dir` are copied; the rest are encoded
    (`tablequest.corpus.dense.index.ensure_embeddings`) and added to the shared cache. A read-only
    corpus is reopened for writing while this runs, then reopened read-only. A sharded
    corpus gets its vectors shard by shard, from the same shared cache.
    """
    models = {view: embedding_model(str(encoder.name), view) for view in views}
    shards = corpus.store.shards
    if not any(_missing_hashes(shard, m) for shard in shards for m in models.values()):
        return 0
    reopened = corpus.path is not None and corpus.read_only
    if reopened and not _reopen_for_writing(corpus, encoder, views):
        return sum(len(_missing_hashes(s, m)) for s in shards for m in models.values())
    try:
        directory = Path(cache_dir) if cache_dir is not None else default_corpus_dir()
        shared = None if corpus.path is None else shared_cache(directory)
        new = sum(
            _dense_store(shard, encoder, view, shared)
            for view in views
            for shard in corpus.store.shards
        )
        if shared is not None:
            shared.close()
        return new
    finally:
        if reopened:
            corpus.reopen(read_only=True)


def _dense_store(
    store: Store, encoder: Any, view: View, shared: duckdb.DuckDBPyConnection | None
) -> int:
    """`ensure_dense` of one store and view (a corpus, or one shard of it): how many were new."""
    model = embedding_model(str(encoder.name), view)
    missing = _missing_hashes(store, model)
    if not missing:
        return 0
    if shared is not None:
        copy_vectors(shared, store.con, model, missing)
    still = _missing_hashes(store, model)
    ensure_embeddings(store, encoder, view=view)
    if shared is not None and still:
        copy_vectors(store.con, shared, model, still)
    store.con.execute("CHECKPOINT")
    return len(still)


def _missing_hashes(store: Store, model: str) -> list[str]:
    rows = store.con.execute(
        "SELECT DISTINCT t.content_hash FROM tables t LEFT JOIN embeddings e "
        "ON e.content_hash = t.content_hash AND e.model = ? WHERE e.vector IS NULL",
        [model],
    ).fetchall()
    return [str(r[0]) for r in rows]


def _reopen_for_writing(corpus: BuiltCorpus, encoder: Any, views: Sequence[View]) -> bool:
    """Reopen a read-only corpus for writing; False when another process holds it, in
    which case the vectors are encoded into memory for this run (with a note)."""
    try:
        corpus.reopen(read_only=False)
        return True
    except CorpusError as exc:
        if not isinstance(exc.__cause__, StoreLocked):
            raise
        reason = str(exc)
    corpus.reopen(read_only=True)
    print(
        f"tablequest: note: {reason}; the {encoder.name} vectors of the {corpus.dataset} corpus "
        "are kept in memory for this run",
        file=sys.stderr,
    )
    for shard in corpus.store.shards:
        for view in views:
            corpus_vectors(shard, encoder, view=view)
    return False
