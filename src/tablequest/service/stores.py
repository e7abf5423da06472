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

What a generation's readers share, and the reader (`ReadStore`), are
`tablequest.service.snapshot`'s.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

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
    ingest,
    remove_tables,
)
from tablequest.service.copies import copy_name, remove_stale_copies
from tablequest.service.inmemory import INLINE_CORPUS_CELLS, MemoryReader
from tablequest.service.snapshot import ReadStore, Snapshot

__all__ = ["Generation", "StoreManager", "settle"]

RAW_BUDGET = 256 * 1024 * 1024
"""Corpora whose stored tables take less than this keep them in memory (parsed on demand)."""
W = TypeVar("W")


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

    def memory_reader(self) -> MemoryReader | None:
        """A reader of the current generation that answers from memory only (a search on the
        event loop: `tablequest.service.inmemory`), or None for a corpus over
        `INLINE_CORPUS_CELLS` cells."""
        with self._lock:
            snapshot = self._current.snapshot
        if snapshot.cells > INLINE_CORPUS_CELLS:
            return None
        return MemoryReader(self.path, snapshot)

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
