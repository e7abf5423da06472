"""What a store holds, table by table, without loading any cells (`tablequest tables`).

`catalog(store)` reads the listing columns of the `tables` rows (id, file, position, format,
sheet, title, size) of a store or of every shard of a sharded corpus, in (path, position)
order, with each table's `sql_name` (its relation). Choices (ours): a table's `name` is its
title when the file gave it one, else the file's name and sheet; its `source` is the path as
ingested plus ``#sheet``, as `search` prints it. `matches` is a case-insensitive substring
test on id, name and source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

from tablequest.corpus.storage.corpus import Corpus

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

    def matches(self, text: str) -> bool:
        """True when `text` occurs (any case) in the id, name or source."""
        needle = text.casefold()
        return any(needle in v.casefold() for v in (self.table_id, self.name, self.source))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _entry(row: tuple[Any, ...]) -> TableEntry:
    table_id, path, _idx, fmt, sheet, title, n_rows, n_cols, sql_name = row
    source = path if sheet is None else f"{path}#{sheet}"
    file_name = PurePath(path).name
    name = title or (file_name if sheet is None else f"{file_name}#{sheet}")
    return TableEntry(table_id, name, int(n_rows), int(n_cols), fmt, source, title, sql_name)


def catalog(store: Corpus, *, contains: str | None = None) -> list[TableEntry]:
    """The tables of `store` (a store or a sharded corpus) in (path, position) order; with
    `contains`, only those whose id, name or source contain it (any case)."""
    rows: list[tuple[Any, ...]] = []
    for shard in store.shards:
        if shard.format_version >= 2:
            joined = "tables t LEFT JOIN relations r USING (table_id)"
            sql = f"SELECT {_COLUMNS}, r.sql_name FROM {joined}"
        else:
            sql = f"SELECT {_COLUMNS}, NULL FROM tables t"
        rows += shard.con.execute(sql).fetchall()
    rows.sort(key=lambda r: (r[1], r[2]))
    entries = [_entry(r) for r in rows]
    if contains:
        entries = [e for e in entries if e.matches(contains)]
    return entries
