"""What a store holds, table by table, without loading any cells (`tablequest tables`).

`catalog(store)` reads the listing columns of the `tables` rows (id, file, position, format,
sheet, title, size) of a store or of every shard of a sharded corpus, in (path, position)
order, with each table's `sql_name` (its relation). Choices (ours): a table's `name` is its
title when the file gave it one, else the file's name and sheet; its `source` is the path as
ingested plus ``#sheet``, as `search` prints it. `matches` is a case-insensitive substring
test on id, name and source. `ingested_at` is when the table's file was last ingested, ISO
8601 in UTC (None for a table stored before ingest times were kept).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import PurePath
from typing import Any

from tablequest.corpus.storage.corpus import Corpus
from tablequest.corpus.storage.storeformat import has_ingest_time

__all__ = ["TableEntry", "catalog"]

_COLUMNS = "t.table_id, path, idx, format, sheet, title, n_rows, n_cols"


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One stored table as a listing shows it."""

    table_id: str
    name: str
    n_rows: int
    n_cols: int
    format: str | None
    source: str
    title: str | None
    sql_name: str | None = None  # its relation (None in a store of format 1)
    ingested_at: str | None = None  # "2024-05-01T12:00:00Z"

    def matches(self, text: str) -> bool:
        """True when `text` occurs (any case) in the id, name or source."""
        needle = text.casefold()
        return any(needle in v.casefold() for v in (self.table_id, self.name, self.source))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _entry(row: tuple[Any, ...]) -> TableEntry:
    table_id, path, _idx, fmt, sheet, title, n_rows, n_cols, sql_name, at = row
    source = path if sheet is None else f"{path}#{sheet}"
    file_name = PurePath(path).name
    name = title or (file_name if sheet is None else f"{file_name}#{sheet}")
    when = at.isoformat(timespec="seconds") + "Z" if isinstance(at, datetime) else None
    return TableEntry(table_id, name, int(n_rows), int(n_cols), fmt, source, title, sql_name, when)


def catalog(store: Corpus, *, contains: str | None = None) -> list[TableEntry]:
    """The tables of `store` (a store or a sharded corpus) in (path, position) order; with
    `contains`, only those whose id, name or source contain it (any case)."""
    rows: list[tuple[Any, ...]] = []
    for shard in store.shards:
        at = "t.ingested_at" if has_ingest_time(shard.con) else "NULL"
        if shard.format_version >= 2:
            joined = "tables t LEFT JOIN relations r USING (table_id)"
            sql = f"SELECT {_COLUMNS}, r.sql_name, {at} FROM {joined}"
        else:
            sql = f"SELECT {_COLUMNS}, NULL, {at} FROM tables t"
        rows += shard.con.execute(sql).fetchall()
    rows.sort(key=lambda r: (r[1], r[2]))
    entries = [_entry(r) for r in rows]
    if contains:
        entries = [e for e in entries if e.matches(contains)]
    return entries
