"""The shared vector cache of a corpus cache directory: ``<cache dir>/embeddings.duckdb`` holds
every vector encoded for a corpus of that directory, keyed by content hash and encoder (and
view), so the formats of one dataset are encoded once (`eval.corpus_vectors.ensure_dense`).

`share_vectors` copies the vectors a cold build encoded while it built its indexes
(`eval.buildwork.BuildWork`) into the shared cache. Apart from `corpus_vectors.py` because
`eval.corpora` calls it at the end of a build and `corpus_vectors` builds on `eval.corpora`:
one module would import the other both ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from tablequest.corpus import Store, fetch_vectors, insert_vectors

__all__ = ["SHARED", "copy_vectors", "share_vectors", "shared_cache"]

SHARED = "embeddings.duckdb"
"""The shared cache's file name in a corpus cache directory."""


def copy_vectors(
    source: duckdb.DuckDBPyConnection,
    target: duckdb.DuckDBPyConnection,
    model: str,
    hashes: Sequence[str],
) -> None:
    """Copy the `model` vectors of `hashes` from one ``embeddings`` table to another."""
    insert_vectors(target, model, fetch_vectors(source, model, hashes))


def share_vectors(store: Store, directory: Path, models: Sequence[str]) -> None:
    """Add the `models` vectors of `store` that the shared cache of `directory` lacks to it
    (quietly nothing when another process holds the shared cache)."""
    shared = shared_cache(directory)
    if shared is None:
        return
    try:
        for model in models:
            fresh = sorted(_hashes(store.con, model) - _hashes(shared, model))
            if fresh:
                copy_vectors(store.con, shared, model, fresh)
    finally:
        shared.close()


def _hashes(con: duckdb.DuckDBPyConnection, model: str) -> set[str]:
    """The content hashes that have a `model` vector in `con`'s ``embeddings``."""
    rows = con.execute("SELECT content_hash FROM embeddings WHERE model = ?", [model]).fetchall()
    return {str(r[0]) for r in rows}


def shared_cache(directory: Path) -> duckdb.DuckDBPyConnection | None:
    """The shared cache of `directory`, created if new; None when another process holds it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(str(directory / SHARED))
        con.execute("SET enable_progress_bar = false")  # it would draw on stdout
        con.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (content_hash TEXT NOT NULL, "
            "model TEXT NOT NULL, vector FLOAT[] NOT NULL)"
        )
        return con
    except (duckdb.Error, OSError):  # in use by another process: encode without sharing
        return None
