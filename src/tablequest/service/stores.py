"""The server's store: read-only readers that never wait for a write, and copy-on-write ingest.

DuckDB allows one writer per file, and a process cannot hold the same file open read-only and
read-write at once. The server therefore reads through *generations*: a generation is one
read-only DuckDB instance of the store file plus the caches its readers share (grep and BM25
indexes, parsed tables, table metadata). An ingest or a removal (one at a time, under a lock)
copies the store file, writes the change into the copy, opens the copy read-only as the next
generation and renames it over the store file. New requests get the new generation at once;
requests still running keep reading the old one, which is closed when the last of them ends.
Readers never block on a write; a write costs one file copy.

A server killed mid-upload cannot remove its copy: every start removes those of dead
processes (`tablequest.service.copies`).

SQL (`/v1/sql`, the SQL page): each generation has its own `SqlRunner` (an in-memory DuckDB
that attaches the generation's file read-only, `tablequest.corpus.storage.sql`), made at its
first query and closed with the generation. The store file is renamed over and the current
generation swapped under one lock, which a runner is also made under, so a runner always
attaches its own generation's file, never the next one's; a query holds its generation like
a reader, so the runner is not closed under it.

Garbage collection: a corpus's indexes are millions of long-lived Python objects, and every
full (generation 2) collection walked them all — 110–160 ms pauses for the WTQ corpus that
stalled every request in flight (the p99 of `GET /v1/search`). Once indexes are loaded they
are moved out of the collector's sight (`gc.freeze`); reference counting still frees them
when their generation is retired.

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

import contextlib
import gc
import json
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Generic, TypeVar

import duckdb

from tablequest.corpus import (
    BM25,
    GREP,
    IngestReport,
    SqlRunner,
    Store,
    StoreError,
    StoreOutdated,
    bm25_index,
    grep_index,
    has_ingest_time,
    ingest,
    remove_tables,
)
from tablequest.service.copies import copy_name, remove_stale_copies
from tablequest.table import Source, Table

__all__ = [
    "Generation", "ReadStore", "StoreManager", "TableInfo", "public_sources", "settle",
]  # fmt: skip

RAW_BUDGET = 256 * 1024 * 1024
"""Corpora whose stored tables take less than this keep them in memory (parsed on demand)."""
W = TypeVar("W")
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
        raw = self.snapshot.raw
        if raw is not None and table_id in raw:
            return self._table(table_id, json.loads(raw[table_id]), None)
        return super().get(table_id)

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


class Generation:
    """One read-only opening of the store file and its readers."""

    def __init__(
        self,
        number: int,
        open_path: Path,
        path: Path,
        table_cache: int,
        uploads: Path | None = None,
    ) -> None:
        self.number = number
        self.path = path
        try:
            self.anchor = duckdb.connect(str(open_path), read_only=True)
        except duckdb.Error as exc:
            raise StoreError(
                f"cannot open store {str(path)!r} read-only: {exc}. Is another process "
                "writing it (tablequest ingest)?"
            ) from exc
        self.snapshot = Snapshot(self.anchor, table_cache, uploads)
        self.snapshot.load_raw(self.anchor, RAW_BUDGET)
        self._free: list[ReadStore] = []
        self._refs = 0
        self._retired = False
        self._lock = threading.Lock()
        self._runner: SqlRunner | None = None
        self._runner_error: StoreOutdated | None = None

    def checkout(self) -> ReadStore:
        with self._lock:
            self._refs += 1
            if self._free:
                return self._free.pop()
        return ReadStore(self.anchor.cursor(), self.path, self.snapshot)

    def checkin(self, reader: ReadStore) -> None:
        with self._lock:
            self._free.append(reader)
        self.release()

    def hold(self) -> None:
        """Keep the generation open until `release` (what `checkout` does for a reader)."""
        with self._lock:
            self._refs += 1

    def release(self) -> None:
        with self._lock:
            self._refs -= 1
            close = self._retired and self._refs == 0
        if close:
            self._close()

    def sql_runner(self, path: Path) -> SqlRunner:
        """This generation's SQL runner, made on first use from its file, now at `path`
        (the caller holds the generation and the manager's file lock when it is made).

        Raises:
            StoreError: the store cannot be queried (`StoreOutdated`: a store of format 1).
        """
        with self._lock:
            if self._runner is not None:
                return self._runner
            if self._runner_error is not None:
                raise self._runner_error
            try:
                self._runner = SqlRunner(path)
            except StoreOutdated as exc:  # the file does not change: neither will the answer
                self._runner_error = exc
                raise
            return self._runner

    @property
    def has_runner(self) -> bool:
        return self._runner is not None

    def retire(self) -> None:
        """Close once the last reader is back (now, when none is out)."""
        with self._lock:
            self._retired = True
            close = self._refs == 0
        if close:
            self._close()

    def _close(self) -> None:
        for reader in self._free:
            reader.close()
        self._free.clear()
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            with contextlib.suppress(duckdb.Error):
                runner.close()
        self.anchor.close()


class StoreManager:
    """Hands out readers of the current generation and applies ingests copy-on-write.

    Args:
        path: The store file (created empty when missing).
        table_cache: Parsed tables kept per generation.
    """

    def __init__(self, path: Path, *, table_cache: int = 4096) -> None:
        self.path = path.expanduser().resolve()
        self.uploads = self.path.with_name(self.path.name + ".uploads")
        """Where the server keeps uploaded files (next to the store)."""
        self.table_cache = table_cache
        # a new store gets the schema; an existing one is only checked, read-only, so that
        # several servers (two MCP clients, serve and mcp) can read one store at once
        exists = self.path.exists() and self.path.stat().st_size > 0
        Store(self.path, read_only=exists).close()  # fails clearly if another process writes
        self.removed = remove_stale_copies(self.path)
        """The stale copies of killed uploads this start removed (module doc)."""
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._file_lock = threading.Lock()
        """Held while the store file is renamed over and the generation swapped, and while a
        runner attaches the file (module doc)."""
        self._current = Generation(1, self.path, self.path, table_cache, self.uploads)

    @property
    def generation(self) -> int:
        return self._current.number

    @contextmanager
    def reader(self) -> Iterator[ReadStore]:
        """A reader of the current generation, for the duration of the block."""
        with self._lock:
            gen = self._current
            store = gen.checkout()
        try:
            yield store
        finally:
            gen.checkin(store)

    @contextmanager
    def sql_runner(self) -> Iterator[SqlRunner]:
        """The current generation's SQL runner, held for the duration of the block.

        Raises:
            StoreError: the store cannot be queried (`StoreOutdated`: a store of format 1).
        """
        while True:
            with self._lock:
                gen = self._current
                gen.hold()
            try:
                if not gen.has_runner:
                    with self._file_lock:
                        if gen is not self._current:  # swapped meanwhile: its file is gone
                            continue
                        runner = gen.sql_runner(self.path)
                else:
                    runner = gen.sql_runner(self.path)
                yield runner
                return
            finally:
                gen.release()

    def warm(self, indexes: Sequence[str] = ("grep",)) -> None:
        """Load or build the named indexes (``grep``, ``bm25``) of the current generation."""
        with self.reader() as store:
            _warm(store, indexes)
        settle()

    def ingest(self, files: Sequence[Path]) -> IngestReport:
        """Ingest `files` into the store without blocking readers (see the module doc)."""

        def apply(writer: Store) -> tuple[IngestReport, bool]:
            report = ingest(writer, files)
            return report, report.tables_stored > 0

        return self._write(apply)

    def remove(self, table_ids: Sequence[str]) -> list[str]:
        """Remove `table_ids` from the store (every index; `remove_tables`) copy-on-write,
        as an ingest. Raises `UnknownTables` naming ids it does not hold (nothing removed)."""
        return self._write(lambda writer: (remove_tables(writer, table_ids), True))

    def _write(self, apply: Callable[[Store], tuple[W, bool]]) -> W:
        """Apply a write to a copy of the store; when `apply` says it changed something,
        the copy becomes the next generation (module doc)."""
        with self._write_lock:
            tmp = self.path.with_name(copy_name(self.path.name))
            shutil.copyfile(self.path, tmp)
            try:
                with Store(tmp) as writer:
                    result, changed = apply(writer)
                if not changed:
                    return result
                number = self._current.number + 1
                new = Generation(number, tmp, self.path, self.table_cache, self.uploads)
                with self.reader() as old_reader:
                    keep = [n for n in ("grep", "bm25") if _has_index(old_reader, n)]
                reader = new.checkout()
                try:
                    _warm(reader, keep)
                finally:
                    new.checkin(reader)
                settle()
                with self._file_lock:  # a runner attaches the current generation's file
                    os.replace(tmp, self.path)
                    with self._lock:
                        old, self._current = self._current, new
            finally:
                tmp.unlink(missing_ok=True)
                tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
            old.retire()
            return result

    def close(self) -> None:
        self._current.retire()


def settle() -> None:
    """Collect the garbage of a load, then freeze what remains (see the module doc)."""
    gc.collect()
    gc.freeze()


def _has_index(store: ReadStore, name: str) -> bool:
    return store.snapshot.indexes.get(BM25 if name == "bm25" else GREP) is not None


def _warm(store: ReadStore, indexes: Sequence[str]) -> None:
    if not len(store):
        return
    if "grep" in indexes:
        grep_index(store)
    if "bm25" in indexes:
        bm25_index(store)
