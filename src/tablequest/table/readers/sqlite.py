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

Streaming ingest (`tablequest.corpus.storage.streaming`) reads a big database with
`sqlite_shapes` (each table's width and row count, for the budget, before any cell) and
`sqlite_text_tables` (each table's cells as Arrow string columns, fetched in batches; the
same text as `read_sqlite`, the same connection guards and budget), never as a Python list
of all cells.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tablequest.table.budget import Meter
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import value_text

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["read_sqlite", "sqlite_shapes", "sqlite_text_tables"]

MAGIC = b"SQLite format 3\x00"
_BATCH_ROWS = 16_384  # rows fetched and converted to Arrow at a time
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


@contextmanager
def _database(inp: ReadInput) -> Iterator[sqlite3.Connection]:
    """The database opened read-only within the file's budget (module docstring); an
    SQLite error inside becomes `UnreadableTable` (or the budget's `OverBudget`)."""
    meter = inp.meter
    printf = _Printf(meter)
    try:
        conn = _connect(inp)
        try:
            # Nonzero interrupts the statement (sqlite3.OperationalError "interrupted").
            conn.set_progress_handler(meter.expired, _PROGRESS_STEPS)
            for fname in ("printf", "format"):
                conn.create_function(fname, -1, printf, deterministic=True)
            yield conn
        finally:
            conn.close()
            printf.helper.close()
    except sqlite3.Error as exc:
        if meter.expired():
            meter.out_of_time()
        if ("too big" in str(exc) or printf.tripped) and meter.remaining_bytes() is not None:
            meter.spend(nbytes=(meter.remaining_bytes() or 0) + 1)
        raise UnreadableTable(inp.path, f"corrupt SQLite database ({exc})") from None


def _names(inp: ReadInput, conn: sqlite3.Connection) -> list[str]:
    """The user tables in creation order (UnreadableTable when there is none)."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
        )
    ]
    if not names:
        raise UnreadableTable(inp.path, "SQLite database has no tables")
    return names


def _check_magic(inp: ReadInput) -> None:
    if not inp.data.startswith(MAGIC):
        raise UnreadableTable(inp.path, "not a valid SQLite database (header missing)")


def read_sqlite(inp: ReadInput) -> list[Table]:
    """Read every user table of an SQLite database."""
    _check_magic(inp)
    with _database(inp) as conn:
        return [_table(conn, name, inp.meter) for name in _names(inp, conn)]


def sqlite_shapes(inp: ReadInput) -> list[tuple[str, int, int]]:
    """(name, columns, rows) of every user table, counted by SQLite (no cell is read)."""
    _check_magic(inp)
    with _database(inp) as conn:
        out = []
        for name in _names(inp, conn):
            width = len(conn.execute(f"SELECT * FROM {_quote(name)} LIMIT 0").description)
            (n_rows,) = conn.execute(f"SELECT count(*) FROM {_quote(name)}").fetchone()
            out.append((name, width, int(n_rows)))
        return out


def sqlite_text_tables(
    inp: ReadInput, *, batch: int | None = None
) -> Iterator[tuple[str, list[str], pa.Table]]:
    """(name, header, cells) of every user table, one at a time: the cells' text as
    `read_sqlite` renders it, as an Arrow table of string columns `c0`, `c1`, …, fetched in
    batches of `batch` rows (default `_BATCH_ROWS`) and converted a column at a time, within
    the same budget (each batch's cells and characters spent as it arrives). No Python list
    of a table's cells."""
    _check_magic(inp)
    with _database(inp) as conn:
        for name in _names(inp, conn):
            yield _text_table(conn, name, inp.meter, batch or _BATCH_ROWS)


def _select(conn: sqlite3.Connection, name: str, meter: Meter) -> sqlite3.Cursor:
    """`SELECT *` of one table within what is left of the file's budget."""
    left = meter.remaining_bytes()
    if left is not None:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH, left))
    cells = meter.remaining_cells()
    width = len(conn.execute(f"SELECT * FROM {_quote(name)} LIMIT 0").description)
    meter.columns(width)
    limit = -1 if cells is None else cells // max(1, width) + 1
    return conn.execute(f"SELECT * FROM {_quote(name)} LIMIT ?", (limit,))


def _text_table(
    conn: sqlite3.Connection, name: str, meter: Meter, batch: int
) -> tuple[str, list[str], pa.Table]:
    import pyarrow as pa
    import pyarrow.compute as pc

    cur = _select(conn, name, meter)
    header = [d[0] for d in cur.description]
    chunks: list[list[pa.Array]] = [[] for _ in header]
    while rows := cur.fetchmany(batch):
        chars = 0
        for j, values in enumerate(zip(*rows, strict=True)):
            array = _text_array(values)
            chars += pc.sum(pc.utf8_length(array)).as_py() or 0
            chunks[j].append(array)
        meter.spend(cells=len(rows) * len(header), nbytes=chars)
    columns = [pa.chunked_array(c, type=pa.string()) for c in chunks]
    return name, header, pa.Table.from_arrays(columns, names=[f"c{j}" for j in range(len(header))])


def _text_array(values: Sequence[object]) -> pa.Array:
    """One column of a batch as `value_text` renders it: strings and integers (with NULL as
    "") converted by Arrow, any other column value by value."""
    import pyarrow as pa

    kinds = set(map(type, values))
    if kinds <= {str, type(None)}:
        return pa.array(values, type=pa.string()).fill_null("")
    if kinds <= {int, type(None)}:
        return pa.array(values, type=pa.int64()).cast(pa.string()).fill_null("")
    return pa.array([value_text(v) for v in values], type=pa.string())


def _table(conn: sqlite3.Connection, name: str, meter: Meter) -> Table:
    """One table, within what is left of the file's budget."""
    cur = _select(conn, name, meter)
    header = [d[0] for d in cur.description]
    rows = []
    for row in cur:
        texts = [value_text(v) for v in row]
        meter.spend(cells=len(texts), nbytes=sum(map(len, texts)))
        rows.append(texts)
    return Table.from_rows([header, *rows], source=Source(sheet=name))
