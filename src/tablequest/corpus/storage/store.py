"""The corpus store: tables, their serializations and retrieval indexes in one DuckDB file.

Layout (one row per table; no separate files table so that a one-table file is stored by a
single INSERT, which DuckDB commits as its own transaction):

    tables(table_id, path, file_hash, idx, format, sheet, title, content_hash,
           n_rows, n_cols, data, text, plain, ingested_at)  -- ingested_at: UTC, by default
    indexes(name, fingerprint, blob)        -- persisted grep / bm25 indexes
    embeddings(content_hash, model, vector) -- dense vectors, keyed by content
    relations(table_id, sql_name, columns)  -- each table's typed relation (below)
    store_meta(key, value)                  -- format_version
    "<sql_name>"(_row, <columns>)           -- one typed relation per stored table: a table,
                                            -- or a view over tq_small(table_id, rows) for
                                            -- a small one (relations.py)
    tq_raw."<table id>"                     -- a streamed table's text as read (streaming.py)

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
in `tablequest.corpus.storage.storefile`; writing, its transactions and what a failed write
means in `tablequest.corpus.storage.storewrites`; the schema, format versions and migration
in `tablequest.corpus.storage.storeformat`; a table's `tables` row in
`tablequest.corpus.storage.tablerows`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import duckdb

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.storefile import NoStore as NoStore
from tablequest.corpus.storage.storefile import NotAStore as NotAStore
from tablequest.corpus.storage.storefile import StoreError as StoreError
from tablequest.corpus.storage.storefile import StoreLocked as StoreLocked
from tablequest.corpus.storage.storefile import StoreWriteError as StoreWriteError
from tablequest.corpus.storage.storefile import explain, open_database
from tablequest.corpus.storage.storeformat import (
    SCHEMA,
    add_ingest_time,
    rewrite,
    set_version,
    stored_version,
)
from tablequest.corpus.storage.storeformat import StoreOutdated as StoreOutdated
from tablequest.corpus.storage.storeformat import has_ingest_time as has_ingest_time
from tablequest.corpus.storage.storewrites import StoreWrites
from tablequest.corpus.storage.tablerows import N_COLUMNS as N_COLUMNS
from tablequest.corpus.storage.tablerows import ROW_COLUMNS as ROW_COLUMNS
from tablequest.corpus.storage.tablerows import arrow_rows, with_body
from tablequest.corpus.storage.tablerows import plain_text as plain_text
from tablequest.corpus.storage.tablerows import table_id_for as table_id_for
from tablequest.corpus.storage.tablerows import table_row as table_row
from tablequest.corpus.storage.tablerows import text_format as text_format
from tablequest.table import Source, Table


@dataclass(frozen=True)
class Hit:
    """One ranked table: its id, score and the body rows each pattern matched."""

    table_id: str
    score: float
    matched_rows: dict[str, list[int]] = field(default_factory=dict)


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
    sub._insert_arrow(arrow_rows(rows), [], rows)
    return sub


def _grid_row(corpus: _Tables, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A streamed table's row with its cells in `data` (for an in-memory subset)."""
    table = corpus.get(row[0])
    return (*row[:10], json.dumps(table.to_dict(), ensure_ascii=False), *row[11:])


class Store(StoreWrites):
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
                add_ingest_time(con)
                if stored_version(con) is None and not self._fresh(con):
                    con.close()
                    assert self.path is not None  # an in-memory store starts empty
                    rewrite(self.path, self.lock_timeout)
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
        set_version(con)
        return True

    @property
    def format_version(self) -> int:
        """1 for a store written before typed relations, else its format version."""
        return stored_version(self.con) or 1

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
        return with_body(data, [(i, *row) for i, row in enumerate(sample)])

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
        return with_body(data, rows)

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
