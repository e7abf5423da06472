"""LLM-free search over the server's store: `GET /v1/search`, the search page and the MCP
``search_tables`` tool run the same `run_search`; `search_in_memory` gives the same answer
on the calling thread when all it reads is in memory (`tablequest.service.inmemory`).

`matched_rows_fast` is `corpus.rank.matched_rows` (one algorithm: `corpus.rowmatch`) over the
same rows (`Store.index_table`: a streamed table's sample) whose lines and their case folds
are kept in the store generation's cache, so repeated searches of a table fold its text once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from tablequest.corpus import Retriever, preview_hit, question_patterns, rows_matching, search_hit
from tablequest.service.inmemory import INLINE_PATTERNS, NotInMemory
from tablequest.service.snapshot import ReadStore
from tablequest.service.state import LEXICAL, ServerState

__all__ = ["matched_rows_fast", "run_search", "search_in_memory"]


def matched_rows_fast(
    store: ReadStore, table_id: str, patterns: Sequence[str]
) -> dict[str, list[int]]:
    """`corpus.rank.matched_rows` (the same rows and algorithm) over the table's lines cached
    in the store generation (module doc)."""
    return rows_matching(store.lines(table_id), patterns)


def run_search(
    state: ServerState, q: str, k: int, method: str, encoder: str, preview: bool
) -> dict[str, Any]:
    """The top `k` tables for `q` by retriever `method` (`encoder` for dense ones), each as
    `SearchHit` JSON with the body rows `q` matches (and a text preview with `preview`)."""
    retriever, lock = state.retriever(method, encoder)
    with state.stores.reader() as store:
        return _search(store, retriever, lock, q, k, method, preview)


def search_in_memory(
    state: ServerState, q: str, k: int, method: str, encoder: str, preview: bool
) -> dict[str, Any] | None:
    """`run_search`'s answer made on this thread from the generation's memory alone, or None
    when a step would read DuckDB or something big (then `run_search` it on a thread).

    Only lexical methods without a preview, for questions of at most `INLINE_PATTERNS` words:
    the other methods hold a lock while they rank and may load a model; a preview runs every
    word's regex over every row of each hit table, uncached (1.8 s for a 200-word question
    over two tables of 10,000 cells, found by a review); each word is searched in every hit
    table and, when the index cannot answer it, in the corpus's texts.

    Raises:
        TablequestError: what `run_search` raises for the same request.
    """
    if method not in LEXICAL or preview:
        return None
    if len(question_patterns(q)) > INLINE_PATTERNS:
        return None
    reader = state.stores.memory_reader()
    if reader is None:
        return None
    retriever, _ = state.retriever(method, encoder)
    try:
        body = _search(reader, retriever, None, q, k, method, preview)
    except NotInMemory:
        return None
    except Exception:
        if reader.refused:  # a layer turned the refusal into another error
            return None
        raise
    return None if reader.refused else body


def _search(
    store: ReadStore,
    retriever: Retriever,
    lock: threading.Lock | None,
    q: str,
    k: int,
    method: str,
    preview: bool,
) -> dict[str, Any]:
    if lock is None:
        hits = retriever.rank(store, q, k)
    else:
        with lock:
            hits = retriever.rank(store, q, k)
    patterns = question_patterns(q)
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
