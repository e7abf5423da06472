"""Dense retrieval: embed each table once, rank by cosine similarity (TableSeek baseline).

Encoders live in `tablequest.corpus.dense.encoders`. Embeddings are stored in the store keyed by
(content hash, encoder name), so an unchanged table is never re-encoded, across runs and
across files with the same content.

A read-only store (search, ask) keeps new vectors in memory for the process; so does a
store whose file or disk fails the write (a note says so).

Choice (ours): the text embedded is the table's plain serialization (title, header and rows
as words) rather than its HTML/Markdown markup, which would spend MiniLM's token window on
tags.

Speed (issue 38, the cold evaluation): a text shared by many tables (WTQ: 2,104 header lines,
1,646 distinct) is encoded once; vectors are written and read as one Arrow column (DuckDB's
row-by-row ``executemany`` of float lists cost ~1 s per 1,000 vectors, more than encoding
them with the static model); and `start_embeddings` can encode on a worker thread while the
caller builds lexical indexes: the encoder's runtime releases the GIL, index building is
Python, so on a 2-core machine the two overlap instead of queueing.
"""

from __future__ import annotations

import contextvars
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, TypeVar

import duckdb
import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.encoders import Encoder, Matrix
from tablequest.corpus.storage.store import Hit, Store
from tablequest.corpus.storage.storefile import explain, is_store_failure

T = TypeVar("T")
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
    pending = start_embeddings(store, encoder, view=view, ahead=False)
    return pending.finish()


class PendingVectors:
    """The vectors of one view of a store, being encoded (`start_embeddings`).

    `finish()` waits for the encoding, saves the new vectors (a writable store) and returns
    (table ids, vectors) in table-id order. It must run on the thread that uses the store:
    only the encoding itself runs on a worker thread (ONNX Runtime and the tokenizer release
    the GIL, so the caller's Python work and the encoding share the machine's cores).
    """

    def __init__(
        self, store: Store, model: str, rows: list[tuple[Any, ...]], fresh: Future[dict[str, Any]]
    ) -> None:
        self.store, self.model, self.rows, self._fresh = store, model, rows, fresh

    def finish(self) -> tuple[list[str], Matrix]:
        fresh = self._fresh.result()
        if fresh and not self.store.read_only:  # a read-only store keeps them in memory only
            save_vectors(self.store, self.model, fresh)
        ids = [r[0] for r in self.rows]
        if not self.rows:
            return ids, np.zeros((0, 1), dtype=np.float32)
        return ids, np.stack([r[2] if r[2] is not None else fresh[r[1]] for r in self.rows])


def start_embeddings(
    store: Store, encoder: Encoder, *, view: View = "table", ahead: bool = True
) -> PendingVectors:
    """Read which of the store's tables lack a vector of `view` and start encoding them:
    on a worker thread when `ahead` (see `PendingVectors`), else at once. Equal texts (a
    header line shared by many tables) are encoded once."""
    model = embedding_model(encoder.name, view)
    rows = stored_vectors(store, model)
    missing: dict[str, str] = {}
    for _tid, chash, vec in rows:
        if vec is None:
            missing.setdefault(chash, "")
    if missing:
        missing = header_lines(store, list(missing)) if view == "header" else plain(store, missing)
    fresh: Future[dict[str, Any]] = Future()
    if not missing:
        fresh.set_result({})
    elif ahead:
        fresh = on_encoding_thread(_encode_distinct, encoder, missing)
    else:
        fresh.set_result(_encode_distinct(encoder, missing))
    return PendingVectors(store, model, rows, fresh)


_WORKER: list[ThreadPoolExecutor] = []


def on_encoding_thread(fn: Callable[..., T], *args: Any) -> Future[T]:
    """`fn(*args)` on the process's one encoding thread (started on first use), in the
    caller's context (its progress callbacks). Work queued there runs one at a time: two
    encodings at once would only split the cores the encoder already uses."""
    if not _WORKER:
        _WORKER.append(ThreadPoolExecutor(1, thread_name_prefix="tablequest-encode"))
    return _WORKER[0].submit(contextvars.copy_context().run, fn, *args)


def _encode_distinct(encoder: Encoder, texts: dict[str, str]) -> dict[str, Any]:
    """content hash → vector of its text, each distinct text encoded once."""
    distinct = list(dict.fromkeys(texts.values()))
    by_text = dict(zip(distinct, encoder.encode(distinct), strict=True))
    return {h: by_text[t] for h, t in texts.items()}


def stored_vectors(store: Store, model: str) -> list[tuple[str, str, Any]]:
    """(table id, content hash, its `model` vector as float32 or None) of every table, in
    table-id order; the vectors are fetched as NumPy arrays (not one float list per row)."""
    got = store.con.execute(
        "SELECT t.table_id, t.content_hash, e.vector FROM tables t "
        "LEFT JOIN embeddings e ON e.content_hash = t.content_hash AND e.model = ? "
        "ORDER BY t.table_id",
        [model],
    ).fetchnumpy()
    ids, hashes = got["table_id"].tolist(), got["content_hash"].tolist()
    return list(zip(ids, hashes, _rows_of(got["vector"]), strict=True))


def _rows_of(column: Any) -> list[Any]:
    """A fetched FLOAT[] column as float32 rows (None where null)."""
    mask = np.ma.getmaskarray(column)
    data = np.ma.getdata(column)
    return [
        None if gone else np.asarray(v, dtype=np.float32)
        for v, gone in zip(data, mask, strict=True)
    ]


def fetch_vectors(
    con: duckdb.DuckDBPyConnection, model: str, hashes: Sequence[str]
) -> dict[str, Any]:
    """content hash → its `model` vector, for those of `hashes` in `con`'s ``embeddings``."""
    got = con.execute(
        "SELECT content_hash, vector FROM embeddings WHERE model = ? "
        "AND list_contains(?, content_hash)",
        [model, list(hashes)],
    ).fetchnumpy()
    return dict(zip(got["content_hash"].tolist(), _rows_of(got["vector"]), strict=True))


def plain(store: Store, hashes: dict[str, str]) -> dict[str, str]:
    """content hash → the plain text of one table with that content."""
    rows = store.con.execute(
        "SELECT content_hash, arg_min(plain, table_id) FROM tables "
        "WHERE list_contains(?, content_hash) GROUP BY content_hash",
        [list(hashes)],
    ).fetchall()
    return {chash: text for chash, text in rows}


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


def vectors_arrow(model: str, fresh: dict[str, Any]) -> Any:
    """content hash → vector as an Arrow table of the ``embeddings`` columns (one insert)."""
    import pyarrow as pa

    hashes = list(fresh)
    matrix = np.asarray([fresh[h] for h in hashes], dtype=np.float32).reshape(len(hashes), -1)
    offsets = np.arange(0, matrix.size + 1, max(matrix.shape[1], 1), dtype=np.int32)
    vectors = pa.ListArray.from_arrays(pa.array(offsets), pa.array(matrix.ravel()))
    return pa.table({"content_hash": hashes, "model": [model] * len(hashes), "vector": vectors})


def insert_vectors(con: duckdb.DuckDBPyConnection, model: str, fresh: dict[str, Any]) -> None:
    """Append `fresh` (content hash → vector) to `con`'s ``embeddings`` table in one insert
    (row-by-row ``executemany`` of float lists cost ~1 s per 1,000 vectors)."""
    if fresh:
        con.from_arrow(vectors_arrow(model, fresh)).insert_into("embeddings")


def save_vectors(store: Store, model: str, fresh: dict[str, Any]) -> None:
    """Persist new vectors (content hash → vector); when the disk or file fails they stay in
    memory (with a note)."""
    try:
        with store.transaction():
            insert_vectors(store.con, model, fresh)
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
