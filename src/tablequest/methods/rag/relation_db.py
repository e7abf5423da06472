"""TableRAG's schema and cell databases built with SQL over a stored table's relation (issue 37).

A table of a store of format 2 is also a typed DuckDB relation
(`tablequest.corpus.storage.relations`). For such a table `relation_databases` builds what
`prepared.prepare_table` builds from the table's cells — the string table ``raw``, the schema
DB, the solver's `df` and the cell DB — with the same result (tests/methods/
test_rag_relation.py), from:

- **the relation's text columns** (VARCHAR: the cell text exactly as stored), read through
  Arrow in one ``SELECT … ORDER BY _row``, and their distinct values with counts and first
  row from one SQL query: ``SELECT col, count(*), min(_row) … GROUP BY col`` per column,
  joined with ``UNION ALL``;
- **the stored table's cells** for the typed columns (BIGINT, DOUBLE, DATE, TIMESTAMP): the
  relation keeps their values, not their text (``1,234``, ``n/a``, ``31.03.2024``), and
  TableRAG's inference (its own, the official code's, `schema_db`) reads the text; their
  distinct values come from Arrow as on the other path.

The schema entries are inferred from the distinct values (`schema_db.schema_from_distinct`:
one pass over D values instead of N cells; every test holds for all cells exactly when it
holds for all distinct values), and the cell DB is the same frequency order, tie rule
(row-major first occurrence) and B cut (`cell_db.cell_db_from_distinct`). Nothing of the
paper's algorithm or defaults changes: the solver's `df` keeps TableRAG's dtypes (those its
schema entries name), not the relation's.

Used only when the stored table is this very table (`relframe.matches`: the same column ids
and header paths; `_row` = its row ids) and its row ids ascend (so `_row` order is body order
and the smallest row id of a value is its first occurrence); otherwise, and for tables with
no rows, `prepare_table` reads the cells (the current path). `USE_RELATION` picks the
default (the faster one, measured in docs/results.md "Databases from the relation (issue
37)").
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from tablequest.corpus import ROW_COLUMN, Relation, Store, sql_quote
from tablequest.methods.rag.cell_db import CellDB, Distinct, cell_db_from_distinct, distinct_of
from tablequest.methods.rag.schema_db import (
    SchemaDB,
    frame_column,
    schema_from_distinct,
)
from tablequest.methods.relframe import matches, stored_relation
from tablequest.table import Table

__all__ = ["USE_RELATION", "RelationDatabases", "relation_databases"]

USE_RELATION = True
"""Build the databases of a stored table from its relation (False: always from the cells)."""


@dataclass(frozen=True)
class RelationDatabases:
    """What `prepare_table` needs, built from the relation, with the seconds of each part."""

    raw: pa.Table
    schema: SchemaDB
    frame: pd.DataFrame
    cells: CellDB
    seconds: dict[str, float]


def _usable(table: Table, relation: Relation, row_ids: np.ndarray[Any, Any]) -> bool:
    if table.n_rows == 0 or table.n_cols == 0 or not matches(relation, table):
        return False
    return bool(row_ids.size < 2 or (np.diff(row_ids) > 0).all())


def _text_distinct(
    con: duckdb.DuckDBPyConnection, relation: Relation, names: list[str], row_ids: Any
) -> list[Distinct]:
    """Distinct values, counts and first positions of the text columns `names`: one SQL
    query, a ``GROUP BY`` per column joined with ``UNION ALL`` (DuckDB runs them in parallel;
    one query per column took 1.7× as long at 10^6 cells)."""
    if not names:
        return []
    rel, row = sql_quote(relation.sql_name), sql_quote(ROW_COLUMN)
    parts = [
        f"SELECT {k} AS j, {sql_quote(name)} AS v, count(*) AS n, min({row}) AS f "
        f"FROM {rel} GROUP BY 2"
        for k, name in enumerate(names)
    ]
    arrow = con.sql(" UNION ALL ".join(parts) + " ORDER BY j, f").to_arrow_table()
    column = arrow.column(0).to_numpy()
    values = arrow.column(1).combine_chunks().cast(pa.string())
    counts = arrow.column(2).to_numpy().astype(np.int64)
    first = np.searchsorted(row_ids, arrow.column(3).to_numpy()).astype(np.int64)
    bounds = np.searchsorted(column, np.arange(len(names) + 1))
    return [
        Distinct(values.slice(a, b - a), counts[a:b], first[a:b])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    ]


def relation_databases(
    table: Table,
    store: Store | None,
    table_id: str | None,
    *,
    categorical_cells: bool,
    budget: int,
) -> RelationDatabases | None:
    """The databases of `table` from `store`'s relation of `table_id`; None when there is
    none to use (module docstring). `categorical_cells`: the cell DB scans the categorical
    columns (``cell_scope="categorical"``), else every column."""
    started = time.perf_counter()
    found = stored_relation(store, table_id)
    if found is None or table_id is None:
        return None
    holder, relation = found
    row_ids = np.asarray(table.row_ids, dtype=np.int64)
    if not _usable(table, relation, row_ids):
        return None
    names = list(table.columns)
    text = [j for j, c in enumerate(relation.columns) if c.type == "VARCHAR"]
    con = holder.con.cursor()
    try:
        picked = "".join(", " + sql_quote(relation.columns[j].name) for j in text)
        arrow = con.sql(
            f"SELECT {sql_quote(ROW_COLUMN)}{picked} FROM {sql_quote(relation.sql_name)} "
            f"ORDER BY {sql_quote(ROW_COLUMN)}"
        ).to_arrow_table()
        if not np.array_equal(arrow.column(0).to_numpy(), row_ids):
            return None
        if any(arrow.column(k + 1).null_count for k in range(len(text))):
            return None  # text columns hold "" for an empty cell, never NULL: not this table
        columns: dict[int, pa.Array] = {
            j: arrow.column(k + 1).combine_chunks().cast(pa.string()) for k, j in enumerate(text)
        }
        body = table.body
        for j in range(table.n_cols):
            if j not in columns:  # typed in the relation: its text is the stored cells'
                columns[j] = pa.array([r[j] for r in body], type=pa.string())
        raw = pa.table({n: columns[j] for j, n in enumerate(names)})
        t_raw = time.perf_counter()
        text_names = [relation.columns[j].name for j in text]
        by_sql = dict(zip(text, _text_distinct(con, relation, text_names, row_ids), strict=True))
    except duckdb.Error:
        return None
    finally:
        with contextlib.suppress(duckdb.Error):
            con.close()
    distinct = [by_sql[j] if j in by_sql else distinct_of(columns[j]) for j in range(table.n_cols)]
    t_distinct = time.perf_counter()
    schema = SchemaDB(
        tuple(
            schema_from_distinct(n, d.values, d.counts)
            for n, d in zip(names, distinct, strict=True)
        )
    )
    data = {e.name: frame_column(e, columns[j]) for j, e in enumerate(schema.columns)}
    frame = pd.DataFrame(data, index=pd.RangeIndex(raw.num_rows))
    frame.index = pd.Index(list(table.row_ids), name="row_id")
    t_schema = time.perf_counter()
    scanned = schema.categorical if categorical_cells else names
    position = {n: j for j, n in enumerate(names)}
    cells = cell_db_from_distinct(scanned, [distinct[position[n]] for n in scanned], budget)
    t_cells = time.perf_counter()
    seconds = {
        "frame": t_raw - started,
        "distinct": t_distinct - t_raw,
        "schema_db": t_schema - t_distinct,
        "cell_db": t_cells - t_schema,
    }
    return RelationDatabases(raw, schema, frame, cells, seconds)
