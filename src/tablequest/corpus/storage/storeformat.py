"""The store's own schema, its format version, and the migration of older stores.

`SCHEMA` creates the metadata tables (`tablequest.corpus.storage.store` describes them).
A store written before format 2 (no typed relations) is rewritten by `rewrite` into a new
file renamed over the old one, so it is never half-migrated; a store written before ingest
times were kept gets its `ingested_at` column from its first writer (`add_ingest_time`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import duckdb

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.storefile import (
    BLOCK_SIZE,
    StoreError,
    explain,
    open_database,
    sql_literal,
)
from tablequest.corpus.storage.tablerows import ROW_COLUMNS

__all__ = ["SCHEMA", "StoreOutdated", "add_ingest_time", "has_ingest_time", "stored_version"]
__all__ += ["rewrite", "set_version"]

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
CREATE TABLE IF NOT EXISTS tq_small (table_id TEXT NOT NULL, rows TEXT NOT NULL);
CREATE SCHEMA IF NOT EXISTS tq_raw;
"""


class StoreOutdated(StoreError):
    """The store was written before typed relations (format 2): `tablequest migrate` it."""

    http_status = 409
    code = "store_outdated"


def stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The store's format version; None for a store written before versions were kept."""
    try:
        row = con.execute("SELECT value FROM store_meta WHERE key = 'format_version'").fetchone()
    except duckdb.CatalogException:
        return None
    return int(row[0]) if row else None


def set_version(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM store_meta WHERE key = 'format_version'")
    con.execute("INSERT INTO store_meta VALUES ('format_version', ?)", [str(rel.FORMAT_VERSION)])


def rewrite(path: Path, lock_timeout: float | None) -> None:
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
        set_version(con)
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
    does not: only a writer adds the column, `add_ingest_time`)."""
    row = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() "
        "AND table_name = 'tables' AND column_name = 'ingested_at'"
    ).fetchone()
    return bool(row and row[0])


def add_ingest_time(con: duckdb.DuckDBPyConnection) -> None:
    """Give a store written before ingest times were kept its `ingested_at` column (NULL,
    unknown, for the tables already there; UTC from now on)."""
    if has_ingest_time(con):
        return
    con.execute("ALTER TABLE tables ADD COLUMN ingested_at TIMESTAMP")
    con.execute(
        "ALTER TABLE tables ALTER COLUMN ingested_at SET DEFAULT (now() AT TIME ZONE 'UTC')"
    )
