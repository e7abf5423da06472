"""The corpus store: tables, their serializations and retrieval indexes in one DuckDB file.

Layout (one row per table; no separate files table so that a one-table file is stored by a
single INSERT, which DuckDB commits as its own transaction):

    tables(table_id, path, file_hash, idx, format, sheet, title, content_hash,
           n_rows, n_cols, data, text, plain, ingested_at)  -- ingested_at: UTC, by default
    indexes(name, fingerprint, blob)        -- persisted grep / bm25 indexes
    embeddings(content_hash, model, vector) -- dense vectors, keyed by content
    relations(table_id, sql_name, columns)  -- each table's typed relation (below)
    store_meta(key, value)                  -- format_version
    "<sql_name>"(_row, <columns>)           -- one typed DuckDB table per stored table

The typed relations (names, types, metadata) are described in
`tablequest.corpus.storage.relations`; they are written in the same transaction as the
`tables` rows, so a table and its relation exist together or not at all. A new store file is
created with 16 KiB blocks (DuckDB's default of 256 KiB gives every relation, however small,
a 256 KiB block: 2,000 small tables took 526 MB; with 16 KiB, 35 MB). A store written before
format 2 (no relations) is rewritten into the new format when it is opened for writing
(`tablequest migrate STORE` does only that), in a new file renamed over the old one, so it is
never half-migrated; opened read-only, it reads as before, and what needs relations (`sql`,
paging) raises `StoreOutdated` naming `tablequest migrate`.

`text` is the table serialized in its corpus format (what grep searches and what previews
show); `plain` is header and cell words for BM25 and dense encoders. Both read at most
`INDEX_CELL_CHARS` characters of each cell (`tablequest.table.indexcap`); `data` and the
relation hold every cell whole. Table ids are opaque (a hash of path and position): agents
see them, never the path.

Choices (ours): each reader declares the serialization of its format's tables
(`tablequest.table.readers.register_reader(text_format=...)`): xlsx as HTML (keeps merged
headers), parquet and sqlite as CSV, JSON as Markdown; a format no reader declares (a plugin
since uninstalled) as Markdown. Indexes are keyed by a fingerprint of (count, table ids,
file hashes) and rebuilt lazily when the corpus changed.

Reliability (docs/reliability.md): the file checks, the lock wait and the error classes are
in `tablequest.corpus.storage.storefile`. Every write is one transaction; a failure of the file or
the disk (no space, I/O error, read-only media) raises `StoreWriteError` after the
transaction is rolled back, and what was committed before stays intact. After DuckDB's
fatal "commit durable, checkpoint failed" the connection is reopened, so the Store stays
usable (reads, and writes once there is space again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import duckdb

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.storefile import (
    BLOCK_SIZE,
    NO_SPACE,
    explain,
    is_store_failure,
    open_database,
    sql_literal,
)
from tablequest.corpus.storage.storefile import NoStore as NoStore
from tablequest.corpus.storage.storefile import NotAStore as NotAStore
from tablequest.corpus.storage.storefile import StoreError as StoreError
from tablequest.corpus.storage.storefile import StoreLocked as StoreLocked
from tablequest.corpus.storage.storefile import StoreWriteError as StoreWriteError
from tablequest.table import Source, Table, index_cell, index_cells, serialize, text_format_for

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT NOT NULL, path TEXT NOT NULL, file_hash TEXT NOT NULL, idx INTEGER NOT NULL,
    format TEXT, sheet TEXT, title TEXT, content_hash TEXT NOT NULL,
    n_rows INTEGER NOT NULL, n_cols INTEGER NOT NULL,
    data TEXT NOT NULL, text TEXT NOT NULL, plain TEXT NOT NULL,
    ingested_at TIMESTAMP DEFAULT (now() AT TIME ZONE 'UTC')
);
CREATE TABLE IF NOT EXISTS indexes (name TEXT NOT NULL, fingerprint TEXT NOT NULL, blob BLOB);
CREATE TABLE IF NOT EXISTS embeddings (
    content_hash TEXT NOT NULL, model TEXT NOT NULL, vector FLOAT[] NOT NULL
);
CREATE TABLE IF NOT EXISTS relations (
    table_id TEXT NOT NULL, sql_name TEXT NOT NULL, columns TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS store_meta (key TEXT NOT NULL, value TEXT NOT NULL);
CREATE SCHEMA IF NOT EXISTS tq_raw;
"""


ROW_COLUMNS = (
    "table_id, path, file_hash, idx, format, sheet, title, content_hash, "
    "n_rows, n_cols, data, text, plain"
)


@dataclass(frozen=True)
class Hit:
    """One ranked table: its id, score and the body rows each pattern matched."""

    table_id: str
    score: float
    matched_rows: dict[str, list[int]] = field(default_factory=dict)


_INT_COLUMNS = {"idx", "n_rows", "n_cols"}
N_COLUMNS = 13  # a row's `tables` columns; a 14th item, when there is one, is its relation


def _arrow_rows(rows: Sequence[tuple[Any, ...]]) -> Any:
    import pyarrow as pa

    names = [c.strip() for c in ROW_COLUMNS.split(",")]
    columns = (
        list(zip(*(r[:N_COLUMNS] for r in rows), strict=True)) if rows else [() for _ in names]
    )
    arrays = [
        pa.array(col, type=pa.int64() if name in _INT_COLUMNS else pa.string())
        for name, col in zip(names, columns, strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def table_id_for(path: str, idx: int) -> str:
    """Opaque, stable id of the idx-th table of a file: reveals nothing of the name."""
    return "t" + hashlib.sha256(f"{path}\0{idx}".encode()).hexdigest()[:15]


def text_format(table: Table) -> str:
    """The serialization the table is stored and shown in (its reader's `text_format`)."""
    return text_format_for(table.source.format)


def plain_text(table: Table) -> str:
    """Title, then one line per grid row (header rows first), cells as whitespace-separated
    words (for BM25 / dense). A cell's own line breaks ("No. in\nseries") become spaces, so
    each line is one whole row (the phrase index and the header vector read lines). Each
    cell gives at most `INDEX_CELL_CHARS` characters (`tablequest.table.indexcap`)."""
    parts = [" ".join(index_cell(table.title or "").split())]
    parts.extend(
        " ".join(" ".join(index_cell(cell).split()) for cell in row) for row in table.cells
    )
    return "\n".join(p for p in parts if p)


def table_row(table: Table, *, path: str, file_hash: str, idx: int) -> tuple[Any, ...]:
    """The `tables` row for one table (computed in ingest workers, inserted by the store),
    then its typed relation (`relations.relation_arrow`, typed where the table was read, so
    the writing process only creates it) as a 14th item the `tables` insert leaves out."""
    return (
        table_id_for(path, idx),
        path,
        file_hash,
        idx,
        table.source.format,
        table.source.sheet,
        table.title,
        table.content_hash,
        table.n_rows,
        table.n_cols,
        json.dumps(table.to_dict(), ensure_ascii=False),
        serialize(index_cells(table), text_format_for(table.source.format)),
        plain_text(table),
        rel.relation_arrow(table),
    )


def _with_body(data: dict[str, Any], rows: Sequence[Sequence[Any]]) -> Table:
    """A streamed table's stored structure (`data`) with body `rows`, each (row id, cells…)."""
    head = Table.from_dict(data)
    return Table(
        cells=(*head.cells, *(tuple(r[1:]) for r in rows)),
        n_header_rows=head.n_header_rows,
        source=head.source,
        row_ids=tuple(int(r[0]) for r in rows),
        col_ids=head.col_ids,
    )


class _Tables(Protocol):
    """What `subset_store` reads: a store, or a sharded corpus."""

    def rows(self, table_ids: Sequence[str]) -> list[tuple[Any, ...]]: ...

    def get(self, table_id: str) -> Table: ...


def subset_store(corpus: _Tables, table_ids: Sequence[str]) -> Store:
    """A new in-memory store of `corpus`'s tables `table_ids` (`Store.subset`; a streamed
    table's cells are copied into its row). KeyError for an id the corpus does not hold."""
    rows = [
        row if '"body": {"raw"' not in row[10] else _grid_row(corpus, row)
        for row in corpus.rows(list(dict.fromkeys(table_ids)))
    ]
    sub = Store()
    sub._insert_arrow(_arrow_rows(rows), [], rows)
    return sub


def _grid_row(corpus: _Tables, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A streamed table's row with its cells in `data` (for an in-memory subset)."""
    table = corpus.get(row[0])
    return (*row[:10], json.dumps(table.to_dict(), ensure_ascii=False), *row[11:])


class StoreOutdated(StoreError):
    """The store was written before typed relations (format 2): `tablequest migrate` it."""

    http_status = 409
    code = "store_outdated"


def _format_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The store's format version; None for a store written before versions were kept."""
    try:
        row = con.execute("SELECT value FROM store_meta WHERE key = 'format_version'").fetchone()
    except duckdb.CatalogException:
        return None
    return int(row[0]) if row else None


def _set_version(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM store_meta WHERE key = 'format_version'")
    con.execute("INSERT INTO store_meta VALUES ('format_version', ?)", [str(rel.FORMAT_VERSION)])


def _rewrite(path: Path, lock_timeout: float | None) -> None:
    """Rewrite a store of format 1 as format 2 into a new file, renamed over `path`.

    The old file is held (DuckDB's lock) and only read until the rename, so another process
    never writes to the file being replaced, and a failure leaves it as it was.
    """
    fresh = path.with_name(path.name + ".migrating")
    fresh.unlink(missing_ok=True)
    con = open_database(path, read_only=False, lock_timeout=lock_timeout)
    try:
        con.execute("CHECKPOINT")  # nothing of the old file is left in a WAL beside it
        old = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        con.execute(f"ATTACH {sql_literal(str(fresh))} AS tq_fresh (BLOCK_SIZE {BLOCK_SIZE})")
        con.execute("USE tq_fresh")
        con.execute(SCHEMA)
        for name in ("tables", "indexes", "embeddings"):
            # the tables' own columns: a store of format 1 kept no ingest time
            cols = f"({ROW_COLUMNS}) SELECT {ROW_COLUMNS}" if name == "tables" else "SELECT *"
            con.execute(f"INSERT INTO {name} {cols} FROM {rel.quote(old)}.{name}")
        reader = con.cursor()
        reader.execute(f"SELECT {ROW_COLUMNS} FROM {rel.quote(old)}.tables ORDER BY table_id")
        while batch := reader.fetchmany(256):
            rel.write_relations(con, batch, {})
        _set_version(con)
        con.execute(f"USE {rel.quote(old)}")
        con.execute("DETACH tq_fresh")
        fresh.replace(path)
    except BaseException as exc:
        fresh.unlink(missing_ok=True)
        Path(str(fresh) + ".wal").unlink(missing_ok=True)
        if isinstance(exc, duckdb.Error):
            raise StoreError(f"cannot migrate store {str(path)!r}: {explain(exc)}") from exc
        raise
    finally:
        with contextlib.suppress(duckdb.Error):
            con.close()


def has_ingest_time(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store keeps ingest times (one written before them and opened read-only
    does not: only a writer adds the column, `_add_ingest_time`)."""
    row = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() "
        "AND table_name = 'tables' AND column_name = 'ingested_at'"
    ).fetchone()
    return bool(row and row[0])


def _add_ingest_time(con: duckdb.DuckDBPyConnection) -> None:
    """Give a store written before ingest times were kept its `ingested_at` column (NULL,
    unknown, for the tables already there; UTC from now on)."""
    if has_ingest_time(con):
        return
    con.execute("ALTER TABLE tables ADD COLUMN ingested_at TIMESTAMP")
    con.execute(
        "ALTER TABLE tables ALTER COLUMN ingested_at SET DEFAULT (now() AT TIME ZONE 'UTC')"
    )


class Store:
    """A corpus of tables in DuckDB (`path=None`: in memory).

    Args:
        path: The store file (created when missing and not `read_only`).
        read_only: Open for reading only: any number of processes may read at once.
        lock_timeout: Seconds to wait while another process holds the file (default:
            $TABLEQUEST_LOCK_TIMEOUT or 10).

    Raises:
        NotAStore: the path exists and is not a DuckDB database (left untouched).
        StoreLocked: another process held the file for the whole lock timeout.
        StoreError: any other reason the store cannot be opened.

    The local implementation of the `Corpus` protocol (`corpus.storage.corpus`): its one
    shard is itself.
    """

    manifest: Path | None = None  # one store file, not a sharded corpus
    backend: Any = None  # the `ShardBackend` ranking attached, if any (corpus.storage.corpus)

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        read_only: bool = False,
        lock_timeout: float | None = None,
    ) -> None:
        self._init_state(path, read_only=read_only, lock_timeout=lock_timeout)
        self.con = self._connect()

    def _init_state(
        self, path: str | Path | None, *, read_only: bool, lock_timeout: float | None
    ) -> None:
        """Every attribute but the connection (subclasses that bring their own call this)."""
        self.path = None if path in (None, ":memory:") else Path(str(path)).expanduser()
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.notes: list[str] = []
        self._indexes: dict[str, tuple[str, Any]] = {}
        self._read_only_fingerprint: str | None = None

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if self.path is None:
            con = duckdb.connect(":memory:")
        else:
            con = open_database(self.path, read_only=self.read_only, lock_timeout=self.lock_timeout)
        # DuckDB draws a progress bar on stdout for queries over 2 s: it would corrupt --json.
        # In Jupyter, DuckDB refuses the setting unless ipywidgets is installed (there is no
        # --json stream to protect there), so it keeps its default.
        with contextlib.suppress(duckdb.InvalidInputException):
            con.execute("SET enable_progress_bar = false")
        if not self.read_only:
            try:
                con.execute(SCHEMA)
                _add_ingest_time(con)
                if _format_version(con) is None and not self._fresh(con):
                    con.close()
                    assert self.path is not None  # an in-memory store starts empty
                    _rewrite(self.path, self.lock_timeout)
                    message = f"store {self.name!r} migrated to format {rel.FORMAT_VERSION}"
                    self.note(message)
                    # said where it happens, as the rank module says a rebuilt index: the
                    # first write to an older store must not change its file silently
                    print(
                        f"tablequest: {message} (typed SQL relations; every table kept)",
                        file=sys.stderr,
                    )
                    return self._connect()
            except duckdb.Error as exc:
                con.close()
                raise StoreError(f"cannot write store {self.name!r}: {explain(exc)}") from exc
        return con

    @staticmethod
    def _fresh(con: duckdb.DuckDBPyConnection) -> bool:
        """True (and the version written) when a store without a version holds no table."""
        row = con.execute("SELECT count(*) FROM tables").fetchone()
        if row and row[0]:
            return False
        _set_version(con)
        return True

    @property
    def format_version(self) -> int:
        """1 for a store written before typed relations, else its format version."""
        return _format_version(self.con) or 1

    def _need_relations(self) -> None:
        if self.format_version < rel.FORMAT_VERSION:
            raise StoreOutdated(
                f"store {self.name!r} was written by an older tablequest (format "
                f"{self.format_version}) and has no SQL relations: run `tablequest migrate "
                f"{self.name}` once (it keeps every table)"
            )

    def relation(self, table_id: str) -> rel.Relation:
        """The typed relation of `table_id` (name, columns, types).

        Raises:
            KeyError: no such table. StoreOutdated: a store of format 1.
        """
        self._need_relations()
        row = self.con.execute(
            "SELECT table_id, sql_name, columns FROM relations WHERE table_id = ?", [table_id]
        ).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        return rel.Relation.from_row(*row)

    def relations(self) -> list[rel.Relation]:
        """Every table's relation, by SQL name ([] for a store of format 1)."""
        if self.format_version < rel.FORMAT_VERSION:
            return []
        rows = self.con.execute(
            "SELECT table_id, sql_name, columns FROM relations ORDER BY sql_name"
        ).fetchall()
        return [rel.Relation.from_row(*row) for row in rows]

    @property
    def name(self) -> str:
        """The store file as given, or ":memory:"."""
        return ":memory:" if self.path is None else str(self.path)

    def note(self, message: str) -> None:
        """Record something the user should know about this store (CLI prints notes)."""
        if message not in self.notes:
            self.notes.append(message)

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection; never raises (committed data is durable in DuckDB's WAL,
        and a checkpoint that fails here is redone at the next open)."""
        with contextlib.suppress(duckdb.Error):
            self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the Corpus protocol's layout ---------------------------------------------------
    @property
    def shards(self) -> tuple[Store]:
        """The stores holding the tables: this one."""
        return (self,)

    def locate(self, table_id: str) -> Store:
        """The store holding `table_id`: this one."""
        return self

    # -- writing -----------------------------------------------------------------------
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
            arrow = _arrow_rows([row for _, rows, _ in batch for row in rows])
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

    # -- reading -----------------------------------------------------------------------
    def __len__(self) -> int:
        row = self.con.execute("SELECT count(*) FROM tables").fetchone()
        return int(row[0]) if row else 0

    def table_ids(self) -> list[str]:
        rows = self.con.execute("SELECT table_id FROM tables ORDER BY table_id").fetchall()
        return [r[0] for r in rows]

    def get(self, table_id: str) -> Table:
        """The stored table; KeyError naming the id when there is none."""
        return self._table(table_id, self._data(table_id), None)

    def shape(self, table_id: str) -> tuple[int, int]:
        """(body rows, columns) of a stored table without reading it; KeyError when unknown."""
        row = self.con.execute(
            "SELECT n_rows, n_cols FROM tables WHERE table_id = ?", [table_id]
        ).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        return int(row[0]), int(row[1])

    def index_table(self, table_id: str) -> Table:
        """The table its index text was made from: the table, or for a streamed table
        (`streaming.py`) its header and first rows. Ranking's matched rows and previews read
        this, so they never load a huge table whole."""
        data = self._data(table_id)
        body = data.get("body")
        if body is None:
            return Table.from_dict(data)
        sample = body.get("sample", [])
        return _with_body(data, [(i, *row) for i, row in enumerate(sample)])

    def get_rows(self, table_id: str, row_ids: Sequence[int]) -> Table:
        """The stored table with only the body rows `row_ids`, in that order (a page):
        a streamed table reads just those rows. KeyError for an unknown table or row."""
        return self._table(table_id, self._data(table_id), list(row_ids))

    def _data(self, table_id: str) -> dict[str, Any]:
        row = self.con.execute("SELECT data FROM tables WHERE table_id = ?", [table_id]).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        data: dict[str, Any] = json.loads(row[0])
        return data

    def _table(self, table_id: str, data: dict[str, Any], row_ids: list[int] | None) -> Table:
        body = data.get("body")
        if body is None:
            table = Table.from_dict(data)
            return table if row_ids is None else table.take_rows(row_ids)
        # a streamed table (corpus/storage/streaming.py): its cells are in tq_raw
        raw = f"tq_raw.{rel.quote(table_id)}"
        cur = self.con.cursor()
        try:
            if row_ids is None:
                rows = cur.execute(f"SELECT * FROM {raw} ORDER BY _row").fetchall()
            else:
                found = cur.execute(
                    f"SELECT * FROM {raw} WHERE list_contains(?, _row)", [row_ids]
                ).fetchall()
                by_id = {int(r[0]): r for r in found}
                missing = [i for i in row_ids if i not in by_id]
                if missing:
                    raise KeyError(f"unknown row ids: {missing[:10]}")
                rows = [by_id[i] for i in row_ids]
        finally:
            cur.close()
        return _with_body(data, rows)

    def source(self, table_id: str) -> Source:
        row = self.con.execute(
            "SELECT path, format, sheet FROM tables WHERE table_id = ?", [table_id]
        ).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        return Source(row[0], row[1], row[2])

    def text(self, table_id: str) -> str:
        row = self.con.execute("SELECT text FROM tables WHERE table_id = ?", [table_id]).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        return str(row[0])

    def plain(self, table_id: str) -> str:
        row = self.con.execute("SELECT plain FROM tables WHERE table_id = ?", [table_id]).fetchone()
        if row is None:
            raise KeyError(f"no table {table_id!r} in the store")
        return str(row[0])

    def ids_for_path(self, path: str) -> list[str]:
        rows = self.con.execute(
            "SELECT table_id FROM tables WHERE path = ? ORDER BY idx", [path]
        ).fetchall()
        return [r[0] for r in rows]

    def rows(self, table_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """The stored rows (all columns) of `table_ids`; KeyError naming the first unknown."""
        found = self.con.execute(
            f"SELECT {ROW_COLUMNS} FROM tables WHERE list_contains(?, table_id)", [list(table_ids)]
        ).fetchall()
        missing = set(table_ids) - {row[0] for row in found}
        if missing:
            raise KeyError(f"no table {sorted(missing)[0]!r} in the store")
        return [tuple(row) for row in found]

    def subset(self, table_ids: Sequence[str]) -> Store:
        """A new in-memory store holding only `table_ids` (same ids, sources and text; its
        indexes not built yet): a corpus method asked about given tables searches only those.

        Raises:
            KeyError: an id the store does not hold.
        """
        return subset_store(self, table_ids)

    def iter_tables(self) -> Iterator[tuple[str, Table]]:
        cur = self.con.cursor()
        cur.execute("SELECT table_id, data FROM tables ORDER BY table_id")
        while batch := cur.fetchmany(512):
            for tid, data in batch:
                yield tid, self._table(tid, json.loads(data), None)

    def column(self, name: str) -> tuple[list[str], list[str]]:
        """(table ids, values of column `name`) in table-id order; name is text or plain."""
        if name not in ("text", "plain"):
            raise ValueError(f"unknown text column {name!r}")
        rows = self.con.execute(f"SELECT table_id, {name} FROM tables ORDER BY table_id")
        ids: list[str] = []
        values: list[str] = []
        for tid, value in rows.fetchall():
            ids.append(tid)
            values.append(value)
        return ids, values

    def fingerprint(self) -> str:
        """Changes when the stored tables do (in-memory indexes are checked against it).

        Cached on a read-only store: DuckDB lets no process write a file while a read-only
        connection holds it, so the value cannot change while the store is open.
        """
        if self._read_only_fingerprint is not None:
            return self._read_only_fingerprint
        row = self.con.execute(
            "SELECT count(*), coalesce(bit_xor(hash(table_id || file_hash)), 0) FROM tables"
        ).fetchone()
        value = f"{row[0]}-{row[1]}" if row else "0-0"
        if self.read_only and self.path is not None:
            self._read_only_fingerprint = value
        return value

    # -- persisted indexes -------------------------------------------------------------
    def load_blob(self, name: str, fingerprint: str) -> bytes | None:
        row = self.con.execute(
            "SELECT blob FROM indexes WHERE name = ? AND fingerprint = ?", [name, fingerprint]
        ).fetchone()
        return bytes(row[0]) if row else None

    def has_blob(self, name: str, fingerprint: str) -> bool:
        """Whether an index `name` is persisted for this corpus fingerprint."""
        row = self.con.execute(
            "SELECT count(*) FROM indexes WHERE name = ? AND fingerprint = ?", [name, fingerprint]
        ).fetchone()
        return bool(row and row[0])

    def save_blob(self, name: str, fingerprint: str, blob: bytes) -> None:
        """Replace a persisted index (a read-only store keeps its indexes in memory).

        Raises:
            StoreWriteError: the file or disk failed; the old index (if any) is kept.
        """
        if self.read_only:
            return
        try:
            with self.transaction():
                self.con.execute("DELETE FROM indexes WHERE name = ?", [name])
                self.con.execute("INSERT INTO indexes VALUES (?, ?, ?)", [name, fingerprint, blob])
        except duckdb.Error as exc:
            raise self._write_failed(exc, f"the {name} index", None) from exc

    def cached_index(self, name: str) -> Any | None:
        """An in-process index built for the current corpus, if any."""
        fp = self.fingerprint()
        entry = self._indexes.get(name)
        return entry[1] if entry and entry[0] == fp else None

    def remember_index(self, name: str, index: Any) -> None:
        self._indexes[name] = (self.fingerprint(), index)
