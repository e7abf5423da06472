"""LLM-free search over the server's store: `GET /v1/search`, the search page and the MCP
``search_tables`` tool run the same `run_search`.

`matched_rows_fast` is `corpus.rank.matched_rows` (one algorithm: `corpus.rowmatch`) over a
table's lines and their case folds kept in the store generation's cache, so repeated searches
of a table fold its text once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tablequest.corpus import (
    TableLines,
    preview_hit,
    question_patterns,
    rows_matching,
    search_hit,
    table_lines,
)
from tablequest.service.snapshot import ReadStore
from tablequest.service.state import ServerState

__all__ = ["matched_rows_fast", "run_search"]


def matched_rows_fast(
    store: ReadStore, table_id: str, patterns: Sequence[str]
) -> dict[str, list[int]]:
    """`corpus.rank.matched_rows` (the same algorithm, `corpus.rowmatch.rows_matching`) over
    the table's lines cached in the store generation (module doc)."""
    data: TableLines = store.snapshot.extras.get_or(
        ("lines", table_id), lambda: table_lines(store.get(table_id))
    )
    return rows_matching(data, patterns)


def run_search(
    state: ServerState, q: str, k: int, method: str, encoder: str, preview: bool
) -> dict[str, Any]:
    """The top `k` tables for `q` by retriever `method` (`encoder` for dense ones), each as
    `SearchHit` JSON with the body rows `q` matches (and a text preview with `preview`)."""
    retriever, lock = state.retriever(method, encoder)
    patterns = question_patterns(q)
    with state.stores.reader() as store:
        if lock is None:
            hits = retriever.rank(store, q, k)
        else:
            with lock:
                hits = retriever.rank(store, q, k)
        out = []
        for hit in hits:
            info = store.snapshot.info[hit.table_id]
            record = search_hit(
                hit, source=info.name, format=info.format, title=info.title,
                matched=matched_rows_fast(store, hit.table_id, patterns),
                preview=preview_hit(store, hit, q) if preview else None,
            )  # fmt: skip
            out.append(record.as_json(full=True))
    return {"question": q, "method": method, "hits": out}
