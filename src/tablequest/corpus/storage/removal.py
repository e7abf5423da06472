"""Removing tables from a corpus: by id (`tablequest rm`) or the files gone from disk.

A table lives in several places of its store: its `tables` row (the JSON, the grep `text`,
the BM25 and encoders' `plain`), its typed relation and `relations` row, a streamed table's
raw cells (`tq_raw`), its vectors in `embeddings` (keyed by content hash) and the persisted
`indexes` (grep, BM25, …, keyed by the corpus fingerprint). `drop_tables` deletes the first
three with the table in one transaction, the vectors no remaining table shares, and every
persisted index of the store, which no longer describes it; `corpus.remove_tables` then
rebuilds the indexes ingest builds, so ranking never sees a removed table.

`files_gone(store, roots)` are the stored files under `roots` that no longer exist
(`ingest --prune`, `tablequest.open`). A file is keyed by its resolved path; a root that is
a file matches only itself, a folder everything below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.store import Store
from tablequest.errors import BadValue

__all__ = ["UnknownTables", "drop_tables", "files_gone", "ids_of_files"]


class UnknownTables(BadValue):
    """Table ids the corpus does not hold (`tablequest rm`, `DELETE /v1/tables/{id}`)."""

    http_status = 404
    code = "unknown_table"


def drop_tables(store: Store, table_ids: Sequence[str]) -> None:
    """Delete `table_ids` (held by `store`) from every part of it, in one transaction."""
    ids = list(table_ids)
    if not ids:
        return
    with store.transaction():
        rel.drop_relations(store.con, ids)
        store.con.execute("DELETE FROM tables WHERE list_contains(?, table_id)", [ids])
        # vectors are keyed by content: keep those another table still has
        store.con.execute(
            "DELETE FROM embeddings WHERE content_hash NOT IN "
            "(SELECT DISTINCT content_hash FROM tables)"
        )
        store.con.execute("DELETE FROM indexes")
    store._indexes.clear()  # in-process indexes of the old corpus
    store._read_only_fingerprint = None


def files_gone(store: Store, roots: Sequence[Path]) -> list[str]:
    """The stored files under `roots` (resolved) that no longer exist."""
    named = [str(r) for r in roots]
    return sorted(
        key
        for key in store.known_files()
        if any(key == n or key.startswith(n.rstrip("/") + "/") for n in named)
        and not Path(key).is_file()
    )


def ids_of_files(store: Store, paths: Sequence[str]) -> list[str]:
    """The table ids of the stored files `paths`."""
    rows = store.con.execute(
        "SELECT table_id FROM tables WHERE list_contains(?, path) ORDER BY table_id", [list(paths)]
    ).fetchall()
    return [str(r[0]) for r in rows]
