"""Writing a store: one transaction per file or per group of files, and what a failed
write means (`Store` inherits these; `tablequest.corpus.storage.store` describes the layout).

Every write is one transaction; a failure of the file or the disk (no space, I/O error,
read-only media) raises `StoreWriteError` after the transaction is rolled back, and what was
committed before stays intact. After DuckDB's fatal "commit durable, checkpoint failed" the
connection is reopened, so the store stays usable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.storefile import (
    NO_SPACE,
    StoreWriteError,
    explain,
    is_store_failure,
)
from tablequest.corpus.storage.tablerows import N_COLUMNS, ROW_COLUMNS, arrow_rows, table_row
from tablequest.table import Table

__all__ = ["StoreWrites"]


class StoreWrites:
    """The writing half of `Store` (a mixin: it needs the store's connection and name)."""

    con: duckdb.DuckDBPyConnection
    path: Path | None

    @property
    def name(self) -> str:
        raise NotImplementedError

    def _connect(self) -> duckdb.DuckDBPyConnection:
        raise NotImplementedError

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction; rolled back on any exception (KeyboardInterrupt included)."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            # A failed COMMIT has already ended the transaction and a fatal error has
            # invalidated the database: either way there is nothing left to roll back.
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            raise

    def _write_failed(
        self, exc: duckdb.Error, what: str, probe: Sequence[Any] | None
    ) -> StoreWriteError:
        """The error to raise for a failed write; reopens an invalidated database and checks
        (with `probe`, a row written) whether the write was committed all the same."""
        committed = False
        if isinstance(exc, duckdb.FatalException) and self.path is not None:
            with contextlib.suppress(duckdb.Error):
                self.con.close()
            self.con = self._connect()
            if probe is not None:
                row = self.con.execute(
                    "SELECT count(*) FROM tables WHERE table_id = ? AND file_hash = ?",
                    [probe[0], probe[2]],
                ).fetchone()
                committed = bool(row and row[0])
        reason = explain(exc)
        message = f"cannot write {what} to store {self.name!r}: {reason}"
        if committed:
            message += " (the last write was committed; the checkpoint after it failed)"
        error = StoreWriteError(message, committed=committed)
        if reason == NO_SPACE:
            error.code = "disk_full"
        return error

    def known_files(self) -> dict[str, tuple[str, int]]:
        """path → (file_hash, number of tables) for every stored file."""
        rows = self.con.execute(
            "SELECT path, any_value(file_hash), count(*) FROM tables GROUP BY path"
        ).fetchall()
        return {p: (h, int(n)) for p, h, n in rows}

    def put_file(self, path: str, rows: Sequence[tuple[Any, ...]], *, replace: bool) -> None:
        """Store all tables of one file atomically (replacing the file's old tables).

        Raises:
            StoreWriteError: the file or disk failed (nothing of this file was written,
                unless `committed` says the commit landed before the failure).
            duckdb.Error: a row DuckDB refused (nothing of this file was written).
        """
        placeholders = ", ".join(["(" + ", ".join(["?"] * 13) + ")"] * len(rows))
        params = [v for row in rows for v in row[:N_COLUMNS]]
        sql = f"INSERT INTO tables ({ROW_COLUMNS}) VALUES {placeholders}"
        try:
            with self.transaction():
                keep = self._drop_paths([path])
                self.con.execute(sql, params)
                rel.write_relations(self.con, rows, keep)
        except duckdb.Error as exc:
            if is_store_failure(exc):
                raise self._write_failed(exc, "a file's tables", rows[0] if rows else None) from exc
            raise

    def put_files(self, batch: Sequence[tuple[str, Sequence[tuple[Any, ...]], bool]]) -> list[str]:
        """Store many files in one transaction (Arrow bulk insert); each file stays atomic.

        `batch` holds (path, rows, replace) per file. When the group fails for its rows,
        every file is retried alone in its own transaction, so one bad file never blocks
        another. Returns the paths that could not be stored.

        Raises:
            StoreWriteError: the file or disk failed; the group was rolled back (unless
                `committed` says the commit landed before the failure).
        """
        if not batch:
            return []
        try:
            arrow = arrow_rows([row for _, rows, _ in batch for row in rows])
        except (ValueError, TypeError):  # a malformed row: isolate it below
            arrow = None
        if arrow is not None:
            try:
                replaced = [path for path, _, replace in batch if replace]
                self._insert_arrow(arrow, replaced, [row for _, rows, _ in batch for row in rows])
                return []
            except duckdb.Error as exc:
                if is_store_failure(exc):
                    probe = next((rows[0] for _, rows, _ in batch if rows), None)
                    raise self._write_failed(exc, "a group of files", probe) from exc
            except (ValueError, TypeError, KeyError):  # a row whose table cannot be typed
                pass
        failed = []
        for path, rows, replace in batch:
            try:
                self.put_file(path, rows, replace=replace)
            except (duckdb.Error, ValueError, TypeError, KeyError):
                failed.append(path)
        return failed

    def _drop_paths(self, paths: list[str]) -> dict[str, str]:
        """Delete the tables of `paths` and their relations; their ids' old relation names."""
        if not paths:
            return {}
        ids = [
            r[0]
            for r in self.con.execute(
                "SELECT table_id FROM tables WHERE list_contains(?, path)", [paths]
            ).fetchall()
        ]
        names = dict(
            self.con.execute(
                "SELECT table_id, sql_name FROM relations WHERE list_contains(?, table_id)", [ids]
            ).fetchall()
        )
        rel.drop_relations(self.con, ids)
        self.con.execute("DELETE FROM tables WHERE list_contains(?, path)", [paths])
        return names

    def _insert_arrow(
        self, arrow: Any, replaced: list[str], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        with self.transaction():
            keep = self._drop_paths(replaced)
            self.con.register("tq_batch", arrow)
            try:
                self.con.execute(
                    f"INSERT INTO tables ({ROW_COLUMNS}) SELECT {ROW_COLUMNS} FROM tq_batch"
                )
            finally:
                self.con.unregister("tq_batch")
            rel.write_relations(self.con, rows, keep)

    def add_table(self, table: Table, *, key: str, idx: int = 0) -> str:
        """Add one in-memory table under a caller-chosen key (used by corpus builders)."""
        row = table_row(table, path=key, file_hash=table.content_hash, idx=idx)
        known = self.known_files().get(key)
        if known is not None and known[0] == table.content_hash:
            return str(row[0])
        self.put_file(key, [row], replace=known is not None)
        return str(row[0])
