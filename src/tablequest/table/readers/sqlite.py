"""SQLite databases via sqlite3, opened read-only: one table per user table.

Files on disk are opened with a `file:...?mode=ro` URI; bytes without a file are loaded into
an in-memory database with `Connection.deserialize`. Internal `sqlite_*` tables are skipped,
views are not read. Rows come in rowid order where there is one.

Reading budget (table/budget.py): a generated column is computed on every read, so a small
file can ask for gigabytes (`printf('%.*c', 50000000, 'x')` per row). The connection's
value-length limit (`SQLITE_LIMIT_LENGTH`) is the bytes left to the file (at least 64 KiB,
which SQLite's own statements need), so no single value outgrows it; a progress handler
interrupts any statement once the file's time is spent; each `SELECT` has a LIMIT one row
past the cells left; every row's cells and text bytes are spent as it arrives. One built-in
escapes those bounds: `printf`/`format` with a huge width or precision loops over it inside
one VM step, long after the value-length limit made its result NULL (measured with SQLite
3.40: 2 s per 200M, so up to 20 s for one value). So this connection's `printf`/`format`
first refuse a width or precision (in the format, or taken by `*`) over the bytes left, then
ask SQLite's own `printf` on a helper connection for the value.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tablequest.table.budget import Meter
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import value_text

__all__ = ["read_sqlite"]

MAGIC = b"SQLite format 3\x00"
_PROGRESS_STEPS = 10_000  # VM instructions between time checks
_MIN_LENGTH = 64 * 1024  # the value-length floor: below it SQLite refuses its own statements
_WIDTHS = re.compile(r"%[-+ #0!,]*(\d*)(?:\.(\d*))?")


class _Printf:
    """SQLite's printf, refusing widths and precisions over the bytes left to the file."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.tripped = False
        self.helper = sqlite3.connect(":memory:")

    def __call__(self, fmt: object, *args: object) -> str | bytes | int | float | None:
        left = self.meter.remaining_bytes()
        if isinstance(fmt, str) and left is not None:
            sizes = [int(n) for m in _WIDTHS.finditer(fmt) for n in m.groups() if n]
            if "*" in fmt:
                sizes += [abs(a) for a in args if isinstance(a, int)]
            if any(n > left for n in sizes):
                self.tripped = True
                raise ValueError("printf width or precision over the reading budget")
            self.helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH, left))
        marks = ", ".join("?" * (1 + len(args)))
        value: str | bytes | int | float | None
        value = self.helper.execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]
        return value


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
    meter = inp.meter
    printf = _Printf(meter)
    try:
        conn = _connect(inp)
        try:
            # Nonzero interrupts the statement (sqlite3.OperationalError "interrupted").
            conn.set_progress_handler(meter.expired, _PROGRESS_STEPS)
            for fname in ("printf", "format"):
                conn.create_function(fname, -1, printf, deterministic=True)
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
                )
            ]
            for name in names:
                tables.append(_table(conn, name, meter))
        finally:
            conn.close()
            printf.helper.close()
    except sqlite3.Error as exc:
        if meter.expired():
            meter.out_of_time()
        if ("too big" in str(exc) or printf.tripped) and meter.remaining_bytes() is not None:
            meter.spend(nbytes=(meter.remaining_bytes() or 0) + 1)
        raise UnreadableTable(inp.path, f"corrupt SQLite database ({exc})") from None
    if not tables:
        raise UnreadableTable(inp.path, "SQLite database has no tables")
    return tables


def _table(conn: sqlite3.Connection, name: str, meter: Meter) -> Table:
    """One table, within what is left of the file's budget."""
    left = meter.remaining_bytes()
    if left is not None:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH, left))
    cells = meter.remaining_cells()
    width = len(conn.execute(f"SELECT * FROM {_quote(name)} LIMIT 0").description)
    meter.columns(width)
    limit = -1 if cells is None else cells // max(1, width) + 1
    cur = conn.execute(f"SELECT * FROM {_quote(name)} LIMIT ?", (limit,))
    header = [d[0] for d in cur.description]
    rows = []
    for row in cur:
        texts = [value_text(v) for v in row]
        meter.spend(cells=len(texts), nbytes=sum(map(len, texts)))
        rows.append(texts)
    return Table.from_rows([header, *rows], source=Source(sheet=name))
