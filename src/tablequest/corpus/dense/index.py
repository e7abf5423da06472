"""Dense retrieval: embed each table once, rank by cosine similarity (TableSeek baseline).

Encoders live in `tablequest.corpus.dense.encoders`. Embeddings are stored in the store keyed by
(content hash, encoder name), so an unchanged table is never re-encoded, across runs and
across files with the same content.

A read-only store (search, ask) keeps new vectors in memory for the process; so does a
store whose file or disk fails the write (a note says so).

Choice (ours): the text embedded is the table's plain serialization (title, header and rows
as words) rather than its HTML/Markdown markup, which would spend MiniLM's token window on
tags.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

import duckdb
import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.encoders import Encoder, Matrix
from tablequest.corpus.storage.store import Hit, Store
from tablequest.corpus.storage.storefile import explain, is_store_failure

View = Literal["table", "header"]
"""What is embedded of a table: its whole plain text, or its header rows alone (line 0 of
`corpus.storage.views.header_first_text`: the ``phrase-hybrid`` retriever's second vector,
cached under ``ENCODER#header-v2``)."""


def embedding_model(encoder: str, view: View = "table") -> str:
    """The `embeddings.model` key of `encoder`'s vectors of `view`."""
    return encoder if view == "table" else f"{encoder}#header-v2"


def ensure_embeddings(
    store: Store, encoder: Encoder, *, view: View = "table"
) -> tuple[list[str], Matrix]:
    """(table ids, their vectors) for the whole store, encoding only what is missing."""
    model = embedding_model(encoder.name, view)
    rows = store.con.execute(
        "SELECT t.table_id, t.content_hash, t.plain, e.vector FROM tables t "
        "LEFT JOIN embeddings e ON e.content_hash = t.content_hash AND e.model = ? "
        "ORDER BY t.table_id",
        [model],
    ).fetchall()
    missing: dict[str, str] = {}
    for _tid, chash, plain, vec in rows:
        if vec is None:
            missing.setdefault(chash, plain)
    if missing and view == "header":
        missing = header_lines(store, list(missing))
    if missing:
        hashes = list(missing)
        vectors = encoder.encode([missing[h] for h in hashes])
        fresh = dict(zip(hashes, vectors, strict=True))
    else:
        fresh = {}
    if fresh and not store.read_only:  # a read-only store keeps new vectors in memory only
        _save(store, model, fresh)
    ids = [r[0] for r in rows]
    if not rows:
        return ids, np.zeros((0, 1), dtype=np.float32)
    matrix = np.stack(
        [np.asarray(r[3], dtype=np.float32) if r[3] is not None else fresh[r[1]] for r in rows]
    )
    return ids, matrix


def header_lines(store: Store, hashes: list[str]) -> dict[str, str]:
    """content hash → the header rows' line of one table with that content."""
    from tablequest.corpus.storage.views import header_line

    rows = store.con.execute(
        "SELECT content_hash, arg_min(data, table_id) FROM tables "
        "WHERE list_contains(?, content_hash) GROUP BY content_hash",
        [hashes],
    ).fetchall()
    tables = {chash: json.loads(data) for chash, data in rows}
    return {h: header_line(t["cells"], int(t["n_header_rows"])) for h, t in tables.items()}


def _save(store: Store, model: str, fresh: dict[str, Any]) -> None:
    """Persist new vectors; when the disk or file fails they stay in memory (with a note)."""
    try:
        with store.transaction():
            store.con.executemany(
                "INSERT INTO embeddings VALUES (?, ?, ?)",
                [(h, model, v.tolist()) for h, v in fresh.items()],
            )
    except duckdb.Error as exc:
        if not is_store_failure(exc):
            raise
        message = (
            f"note: the {model} vectors of store {store.name!r} could not be saved "
            f"({explain(exc)}); they are kept in memory for this run"
        )
        store.note(message)
        print(f"tablequest: {message}", file=sys.stderr)


def corpus_vectors(
    store: Store, encoder: Encoder, *, view: View = "table"
) -> tuple[list[str], Matrix]:
    """`ensure_embeddings`, kept in the Store object for the current corpus (no re-read of
    every vector from DuckDB on each query)."""
    name = f"dense:{encoder.name}" + ("" if view == "table" else "#header")
    cached = store.cached_index(name)
    if isinstance(cached, tuple):
        return cached
    ids, matrix = ensure_embeddings(store, encoder, view=view)
    store.remember_index(name, (ids, matrix))
    return ids, matrix


_CHUNK_ROWS = 8192


def cosine_scores(matrix: Matrix, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Dot product of every row with the query, each row's independent of the others.

    BLAS matrix-vector products round a row's sum differently with its position in the
    matrix (blocking), so one table's score would depend on which tables share its matrix.
    Here every row is a float32 product summed by NumPy's pairwise reduction along the row,
    whose order depends on the row's length only: a shard of the corpus gives each table
    exactly the score the whole corpus gives it (`corpus.shardrank`).
    """
    out = np.empty(matrix.shape[0], dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    for start in range(0, matrix.shape[0], _CHUNK_ROWS):
        np.sum(
            matrix[start : start + _CHUNK_ROWS] * q, axis=1, out=out[start : start + _CHUNK_ROWS]
        )
    return out


def dense_rank(store: Store, query: str, k: int, encoder: Encoder) -> list[Hit]:
    """Top-k tables by cosine similarity between the query and each table's vector."""
    ids, matrix = corpus_vectors(store, encoder)
    if not ids or k <= 0:
        return []
    q = encoder.encode([query])[0]
    scores = cosine_scores(matrix, q)
    order = np.lexsort((np.arange(len(ids)), -scores))[:k]
    return [Hit(ids[i], float(scores[i])) for i in order]
