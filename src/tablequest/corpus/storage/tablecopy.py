"""Copying stored tables from one store into another whole: the `tables` row, the typed
relation under its `sql_name`, a small table's `tq_small` rows and a streamed table's text
(`tq_raw`), in one transaction of the target (`copy_into_shards` builds shards so).

Why copy rather than store the `tables` rows again (`put_files`, which makes each relation
from `tables.data`): a streamed table's `data` holds no cells (they are its relation and
`tq_raw."<id>"`, `streaming.py`), so it came out empty with no text; a new store names its
relations anew (`prices_2` became `prices` in a shard holding no other `prices`, so a query
written against the store named another table); and typing every table again costs what the
ingest did. A relation is moved as DuckDB gives it out (Arrow record batches, so a big one is
never whole in memory); a view (a small table over `tq_small`, a streamed table's text) is
made again from its metadata, as the ingest made it. A table the source holds no relation
for (a store of format 1) gets one from its `data`, as the ingest would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tablequest.corpus.storage import relations as rel
from tablequest.corpus.storage.tablerows import ROW_COLUMNS, arrow_rows

if TYPE_CHECKING:
    import duckdb

    from tablequest.corpus.storage.store import Store

__all__ = ["copy_tables"]

_BATCH_ROWS = 65536


def copy_tables(source: Store, target: Store, table_ids: Sequence[str]) -> None:
    """Copy the tables `table_ids` of `source` into `target` (module docstring), in one
    transaction: all of them or none. `target` must hold none of their ids or relation
    names (a new store, or a shard being built).

    Raises:
        KeyError: an id `source` does not hold.
        duckdb.Error: the target refused a write (nothing was copied).
    """
    ids = list(dict.fromkeys(table_ids))
    rows = source.rows(ids)
    found = _relations(source, ids)
    views = rel.views(source.con, [r.sql_name for r in found.values()])
    raw = rel.raw_objects(source.con, list(found))
    small = source.con.execute(
        "SELECT table_id, rows FROM tq_small WHERE list_contains(?, table_id)",
        [[r.table_id for r in found.values() if r.sql_name in views]],
    ).fetchall()
    with target.transaction():
        con = target.con
        con.register("tq_copy", arrow_rows(rows))
        try:
            con.execute(f"INSERT INTO tables ({ROW_COLUMNS}) SELECT {ROW_COLUMNS} FROM tq_copy")
        finally:
            con.unregister("tq_copy")
        for relation in found.values():
            if relation.sql_name in views:  # a small table: its rows are in `small`
                rel.create_view(con, relation.sql_name, relation.table_id, list(relation.columns))
            else:
                name = rel.quote(relation.sql_name)
                _copy_data(source.con, con, f"main.{name}", name)
            _copy_raw(source.con, con, relation, raw)
        rel.insert_lists(con, "tq_small", small, 2)
        metadata = [(r.table_id, r.sql_name, rel.columns_json(r.columns)) for r in found.values()]
        rel.insert_lists(con, "relations", metadata, 3)
        rel.write_relations(con, [row for row in rows if row[0] not in found], {})


def _relations(store: Store, table_ids: list[str]) -> dict[str, rel.Relation]:
    """The relations of `table_ids` that `store` holds (none in a store of format 1)."""
    if store.format_version < rel.FORMAT_VERSION:
        return {}
    found = store.con.execute(
        "SELECT table_id, sql_name, columns FROM relations WHERE list_contains(?, table_id)",
        [table_ids],
    ).fetchall()
    return {str(row[0]): rel.Relation.from_row(*row) for row in found}


def _copy_data(
    source: duckdb.DuckDBPyConnection, target: duckdb.DuckDBPyConnection, src: str, dst: str
) -> None:
    """Create the table `dst` in `target` holding the rows of `src` in `source`, in order."""
    query = source.sql(f"SELECT * FROM {src}")  # kept: the reader streams from it
    target.from_arrow(query.to_arrow_reader(_BATCH_ROWS)).create(dst)


def _copy_raw(
    source: duckdb.DuckDBPyConnection,
    target: duckdb.DuckDBPyConnection,
    relation: rel.Relation,
    raw: dict[str, str],
) -> None:
    """A streamed table's text (`raw`: the source's `rel.raw_objects`): the table
    `tq_raw."<id>~text"` copied and the view `tq_raw."<id>"` made again over the copy (a
    store written before that view kept a table `tq_raw."<id>"`: copied)."""
    tid = relation.table_id
    if tid not in raw and tid + rel.RAW_SUFFIX not in raw:
        return
    target.execute("CREATE SCHEMA IF NOT EXISTS tq_raw")
    kept: list[str] = []
    if raw.get(tid + rel.RAW_SUFFIX) == "TABLE":
        text = f"tq_raw.{rel.quote(tid + rel.RAW_SUFFIX)}"
        _copy_data(source, target, text, text)
        kept = [d[0] for d in source.execute(f"SELECT * FROM {text} LIMIT 0").description][1:]
    if raw.get(tid) == "TABLE":
        _copy_data(source, target, f"tq_raw.{rel.quote(tid)}", f"tq_raw.{rel.quote(tid)}")
    elif raw.get(tid) == "VIEW":
        rel.create_raw_view(target, tid, relation.sql_name, relation.columns, kept)
