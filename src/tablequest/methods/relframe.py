"""A stored table's sandbox frame read from its typed relation through Arrow (issue 37).

Every table of a store of format 2 is also a typed DuckDB relation
(`tablequest.corpus.storage.relations`: `_row` = body row id, BIGINT / DOUBLE / DATE /
TIMESTAMP / VARCHAR by exactly `Table.to_dataframe()`'s rule). `relation_frame` reads it with
one ``SELECT`` into Arrow and hands back the frame `Table.to_dataframe()` gives — the same
values, dtypes, flattened unique column names and ``row_id`` index — without re-typing the
cells in Python (10^6 cells: tens of milliseconds against seconds, docs/results.md
"Databases from the relation"). Lineage and evidence bind it exactly as before
(`methods.lineage.Binding`: frame column label → column id, row label → row id).

Conversions: BIGINT → int64, DOUBLE → float64 (NULL → NaN), BOOLEAN → bool (with a NULL:
pandas' nullable boolean, NULL → NA), DATE and TIMESTAMP → the
datetime64 unit pandas gives `to_dataframe()` (microseconds under pandas 3, nanoseconds
under pandas 2; NULL → NaT), VARCHAR → object (Python str; an empty cell is ""). Rows come in
`_row` order, which is body order for every table whose row ids ascend (all tables a reader
makes); given the `Table`, a table whose row ids do not ascend comes back in body order.

`frame_for` is what methods call: the relation's frame when the store holds one for the table
(the same column ids and header paths, `_row` = its row ids), else `Table.to_dataframe()` (no
store, a store of format 1, an id the store does not hold, a table that is not the stored
one).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from functools import cache
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from tablequest.corpus import ROW_COLUMN, Corpus, Relation, Store, StoreError, sql_quote
from tablequest.table import HEADER_SEP, Table, unique_names

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["frame_for", "matches", "relation_frame", "stored_relation"]


def stored_relation(store: Corpus | None, table_id: str | None) -> tuple[Store, Relation] | None:
    """(the store holding it, the relation) of `table_id`, or None when there is none.

    None for no store or id, a store of format 1 (`StoreOutdated`), an id the store does not
    hold, or a store that cannot answer; a sharded corpus answers from the table's shard.
    """
    if store is None or not table_id:
        return None
    try:
        holder = store.locate(table_id)
        if holder.format_version < 2:
            return None
        return holder, holder.relation(table_id)
    except (KeyError, StoreError, duckdb.Error):
        return None


def _frame_names(relation: Relation) -> tuple[str, ...]:
    """`Table.columns` of the stored table: its flattened header paths, made unique."""
    return unique_names(HEADER_SEP.join(c.header) for c in relation.columns)


@cache
def _datetime_dtype() -> Any:
    """The datetime64 dtype `Table.to_dataframe()` gives a date column under this pandas."""
    sample = pd.Series([dt.datetime(2000, 1, 1)], dtype=object)
    return pd.to_datetime(sample).dtype


def _column(array: pa.ChunkedArray, sql_type: str) -> Any:
    """One relation column as the numpy array `to_dataframe()` holds for it."""
    if sql_type == "VARCHAR":  # a Series, so pandas 3 keeps object rather than infer `str`
        return pd.Series(array.to_numpy(zero_copy_only=False), dtype=object, copy=False)
    if sql_type == "BOOLEAN" and array.null_count:  # pandas' nullable boolean, as to_dataframe
        return pd.array(array.to_pylist(), dtype="boolean")
    if sql_type == "DATE":
        array = array.cast(pa.timestamp("us"))
    values = array.to_numpy(zero_copy_only=False)
    if sql_type in ("DATE", "TIMESTAMP"):
        return values.astype(_datetime_dtype())
    return values


def relation_frame(
    store: Corpus, table_id: str, *, table: Table | None = None, relation: Relation | None = None
) -> pd.DataFrame:
    """`table_id`'s frame read from its relation: equal to ``store.get(table_id).to_dataframe()``.

    Args:
        store: A store of format 2 (or a sharded corpus) holding the table.
        table_id: The table.
        table: The stored table when the caller has it: its column names are used, and a
            table whose row ids do not ascend is put back in body order.
        relation: The table's relation when the caller looked it up already.

    Raises:
        KeyError: the store holds no table `table_id`.
        StoreOutdated: a store of format 1 (`tablequest migrate`).
    """
    if relation is None:
        found = stored_relation(store, table_id)
        if found is None:
            store.relation(table_id)  # raises the precise error (outdated store, unknown id)
            raise KeyError(f"no relation for table {table_id!r}")
        holder, relation = found
    else:
        holder = store.locate(table_id)
    names = list(table.columns) if table is not None else list(_frame_names(relation))
    cursor = holder.con.cursor()
    try:
        arrow = cursor.sql(
            f"SELECT * FROM {sql_quote(relation.sql_name)} ORDER BY {sql_quote(ROW_COLUMN)}"
        ).to_arrow_table()
    finally:
        with contextlib.suppress(duckdb.Error):
            cursor.close()
    if arrow.num_rows == 0:
        frame = pd.DataFrame({c: pd.Series([], dtype=object) for c in names})
        frame.index = pd.Index([], name="row_id")
        return frame
    data = {
        name: _column(arrow.column(j + 1), col.type)
        for j, (name, col) in enumerate(zip(names, relation.columns, strict=True))
    }
    frame = pd.DataFrame(data, index=pd.RangeIndex(arrow.num_rows))
    frame.index = pd.Index(arrow.column(0).to_numpy(), name="row_id")
    if table is not None and not _ascending(table.row_ids):
        frame = frame.loc[list(table.row_ids)]
    return frame


def _ascending(row_ids: Sequence[int]) -> bool:
    ids = np.asarray(row_ids, dtype=np.int64)
    return bool(ids.size < 2 or (np.diff(ids) > 0).all())


def matches(relation: Relation, table: Table) -> bool:
    """Whether `relation` is `table`'s by its columns: the same column ids and header paths
    (its rows are checked where they are read: `_row` must be the table's row ids)."""
    if len(relation.columns) != table.n_cols:
        return False
    return all(
        c.col_id == col_id and tuple(c.header) == tuple(table.header_path(j))
        for j, (c, col_id) in enumerate(zip(relation.columns, table.col_ids, strict=True))
    )


def frame_for(
    table: Table, store: Corpus | None = None, table_id: str | None = None
) -> pd.DataFrame:
    """The sandbox frame of `table`: read from its relation when `store` holds `table_id`'s
    relation for this very table (same column ids and header paths, `_row` = its row ids),
    else `table.to_dataframe()`."""
    found = stored_relation(store, table_id)
    if found is not None and table_id is not None and matches(found[1], table):
        holder, relation = found
        frame = relation_frame(holder, table_id, table=table, relation=relation)
        if np.array_equal(frame.index.to_numpy(), np.asarray(table.row_ids)):
            return frame
    return table.to_dataframe()
