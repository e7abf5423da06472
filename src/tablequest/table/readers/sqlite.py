"""SQLite databases via sqlite3, opened read-only: one table per user table.

Files on disk are opened with a `file:...?mode=ro` URI; bytes without a file are loaded into
an in-memory database with `Connection.deserialize`. Internal `sqlite_*` tables are skipped,
views are not read. Rows come in rowid order where there is one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import value_text

__all__ = ["read_sqlite"]

MAGIC = b"SQLite format 3\x00"


def _connect(inp: ReadInput) -> sqlite3.Connection:
    if inp.file is not None:
        uri = Path(inp.file).resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(uri, uri=True)
    conn = sqlite3.connect(":memory:")
    conn.deserialize(inp.data)
    return conn


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_sqlite(inp: ReadInput) -> list[Table]:
    """Read every user table of an SQLite database."""
    if not inp.data.startswith(MAGIC):
        raise UnreadableTable(inp.path, "not a valid SQLite database (header missing)")
    tables = []
    try:
        conn = _connect(inp)
        try:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
                )
            ]
            for name in names:
                cur = conn.execute(f"SELECT * FROM {_quote(name)}")
                header = [d[0] for d in cur.description]
                rows = [[value_text(v) for v in row] for row in cur]
                tables.append(Table.from_rows([header, *rows], source=Source(sheet=name)))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UnreadableTable(inp.path, f"corrupt SQLite database ({exc})") from None
    if not tables:
        raise UnreadableTable(inp.path, "SQLite database has no tables")
    return tables
