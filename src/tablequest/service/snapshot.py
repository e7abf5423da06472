"""What the readers of one store generation share, and the reader itself (`ReadStore`).

A generation (`tablequest.service.stores`) is one read-only DuckDB instance of the store file;
its `Snapshot` holds what never changes while it lives: the table metadata (`TableInfo`),
the fingerprint, parsed tables, loaded indexes and per-table extras.

Choices (ours): a generation's data never changes, so its fingerprint, table metadata and
parsed tables are computed once and shared by its readers (`ReadStore` overrides the lookups
of `Store` that would otherwise scan the table each time: a point lookup by table id is a
~3 ms scan in DuckDB without an index).

Sources (issue 25): clients never see a server path. A table's source as the server shows it
(`TableInfo.name`, `ReadStore.source`, hence `Result.sources` of every ask) is its file
relative to the corpus root: the deepest folder holding every stored file. The store does
not record the folders given to ``ingest``, so the root is derived from the stored paths;
when the files share no folder but the filesystem root (unrelated trees, e.g. ``/data`` and
``/home/me``), each file is named relative to the deepest folder holding the files of its
top-level folder. An uploaded file is named as the ingest report's ``stored_as``
(``<12 hex>/<name>``, relative to the uploads folder). The real path stays in
`TableInfo.path` for the server's own use.
"""

from __future__ import annotations

import gc
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Generic, TypeVar

import duckdb

from tablequest.corpus import Store, TableLines, has_ingest_time, table_lines
from tablequest.table import Source, Table

__all__ = ["LRU", "ReadStore", "Snapshot", "TableInfo", "public_sources"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or(self, key: K, make: Callable[[], V]) -> V:
        """The cached value of `key`, or `make()` stored under it."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = make()
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)
        return value


@dataclass(frozen=True)
class TableInfo:
    """One stored table as listings show it (no cells)."""

    table_id: str
    path: str
    idx: int
    format: str | None
    sheet: str | None
    title: str | None
    n_rows: int
    n_cols: int
    shown: str = ""
    """Its file as clients see it (see the module doc); `path` when not set."""
    ingested_at: str | None = None
    """When its file was ingested, ISO 8601 UTC (None: before ingest times were kept)."""

    @property
    def name(self) -> str:
        """The user's name of the table: its file as shown, and sheet when it has one."""
        path = self.shown or self.path
        return path if self.sheet is None else f"{path}#{self.sheet}"


def _is_root(path: str) -> bool:
    return PurePath(path).parent == PurePath(path)


def _roots(folders: set[str]) -> dict[str, str]:
    """Folder → the root its files are named from (see the module doc)."""
    try:
        common: str | None = os.path.commonpath(list(folders)) if folders else None
    except ValueError:  # different drives
        common = None
    if common is not None and not _is_root(common):
        return dict.fromkeys(folders, common)
    groups: dict[tuple[str, ...], list[str]] = {}
    for folder in folders:
        groups.setdefault(PurePath(folder).parts[:2], []).append(folder)
    out: dict[str, str] = {}
    for members in groups.values():
        root = os.path.commonpath(members)
        out.update(dict.fromkeys(members, root))
    return out


def _posix(path: str) -> str:
    return path if os.sep == "/" else PurePath(path).as_posix()


def public_sources(paths: Iterable[str], uploads: Path | None) -> tuple[dict[str, str], list[str]]:
    """(stored path → path clients see, the folders they are relative to): see the module doc.
    Relative stored paths are kept as they are."""
    paths = list(paths)
    up = str(uploads) + os.sep if uploads is not None else None
    folder_of = {
        p: os.path.dirname(p) for p in paths if os.path.isabs(p) and not (up and p.startswith(up))
    }
    roots = _roots(set(folder_of.values()))
    shown: dict[str, str] = {}
    for path in paths:
        if up and path.startswith(up):
            shown[path] = _posix(path[len(up) :])
        elif path in folder_of:
            shown[path] = _posix(path[len(roots[folder_of[path]]) :].lstrip(os.sep))
        else:
            shown[path] = path
    folders = sorted(set(roots.values()) | ({str(uploads)} if uploads is not None else set()))
    return shown, folders


def _info(r: tuple[Any, ...], shown: str) -> TableInfo:
    """One `tables` row (id, path, idx, format, sheet, title, rows, cols, ingested_at)."""
    n_rows, n_cols = int(r[6]), int(r[7])
    return TableInfo(r[0], r[1], int(r[2]), r[3], r[4], r[5], n_rows, n_cols, shown, r[8])


class Snapshot:
    """What the readers of one generation share (the data behind it never changes)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, table_cache: int, uploads: Path | None = None
    ) -> None:
        at = "strftime(ingested_at, '%Y-%m-%dT%H:%M:%SZ')" if has_ingest_time(con) else "NULL"
        rows = con.execute(
            "SELECT table_id, path, idx, format, sheet, title, n_rows, n_cols, "
            f"{at} FROM tables ORDER BY path, idx"
        ).fetchall()
        # roots: the folders sources are shown relative to (the corpus roots, uploads)
        shown, self.roots = public_sources({str(r[1]) for r in rows}, uploads)
        self.info: dict[str, TableInfo] = {r[0]: _info(r, shown[str(r[1])]) for r in rows}
        self.ids = sorted(self.info)
        self.cells = sum(i.n_rows * i.n_cols for i in self.info.values())
        """Cells of all its tables."""
        try:  # each table's relation (a store of format 1 has none: `tablequest migrate`)
            self.sql_names: dict[str, str] = dict(
                con.execute("SELECT table_id, sql_name FROM relations").fetchall()
            )
        except duckdb.CatalogException:
            self.sql_names = {}
        fp = con.execute(
            "SELECT count(*), coalesce(bit_xor(hash(table_id || file_hash)), 0) FROM tables"
        ).fetchone()
        self.fingerprint = f"{fp[0]}-{fp[1]}" if fp else "0-0"
        self.indexes: dict[str, Any] = {}
        self.tables: LRU[str, Table] = LRU(table_cache)
        self.raw: dict[str, str] | None = None
        """Every table's stored JSON, when the corpus is small enough (`load_raw`)."""
        self.extras: LRU[tuple[str, str], Any] = LRU(table_cache)
        """Per-table derived data readers may cache (e.g. row lines for matching)."""

    def load_raw(self, con: duckdb.DuckDBPyConnection, budget: int) -> None:
        """Keep every table's stored JSON in memory when it all fits in `budget` bytes, so a
        table is parsed, not looked up (a lookup by id scans the table column in DuckDB)."""
        row = con.execute("SELECT coalesce(sum(length(data)), 0) FROM tables").fetchone()
        if row is not None and int(row[0]) <= budget:
            self.raw = dict(con.execute("SELECT table_id, data FROM tables").fetchall())


class ReadStore(Store):
    """A read-only `Store` over one generation's connection, with the shared caches.

    Thread use: one reader per thread at a time (`StoreManager.reader` hands them out).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, snapshot: Snapshot) -> None:
        # Not Store.__init__: it would open a throwaway in-memory DuckDB, ~30 ms with the
        # interpreter lock held; 50 asks arriving at once stalled every request for 1.5 s.
        self._init_state(path, read_only=True, lock_timeout=None)
        self.con = con
        self.snapshot = snapshot

    def __len__(self) -> int:
        return len(self.snapshot.info)

    def table_ids(self) -> list[str]:
        return list(self.snapshot.ids)

    def get(self, table_id: str) -> Table:
        if table_id not in self.snapshot.info:
            raise KeyError(f"no table {table_id!r} in the store")
        return self.snapshot.tables.get_or(table_id, lambda: self._load(table_id))

    def _load(self, table_id: str) -> Table:
        return super().get(table_id)  # through `_data`: the generation's JSON when it has it

    def _data(self, table_id: str) -> dict[str, Any]:
        raw = self.snapshot.raw
        if raw is not None and table_id in raw:
            data: dict[str, Any] = json.loads(raw[table_id])
            return data
        return super()._data(table_id)

    def lines(self, table_id: str) -> TableLines:
        """The row lines ranking matches rows in (`corpus.table_lines` of `index_table`, as
        `corpus.matched_rows` reads them), made once per generation."""
        made: TableLines = self.snapshot.extras.get_or(
            ("lines", table_id), lambda: table_lines(self.index_table(table_id))
        )
        return made

    def source(self, table_id: str) -> Source:
        info = self.snapshot.info.get(table_id)
        if info is None:
            raise KeyError(f"no table {table_id!r} in the store")
        # The path clients see (module doc): `Result.sources` of the server's asks come here.
        return Source(info.shown or info.path, info.format, info.sheet)

    def fingerprint(self) -> str:
        return self.snapshot.fingerprint

    def cached_index(self, name: str) -> Any | None:
        return self.snapshot.indexes.get(name)

    def remember_index(self, name: str, index: Any) -> None:
        self.snapshot.indexes[name] = index
        gc.freeze()  # long-lived from here on: keep full collections from walking it
