"""Parquet files via pyarrow: one table, header = column names, values rendered as text."""

from __future__ import annotations

import io

from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import value_text

__all__ = ["read_parquet"]


def read_parquet(inp: ReadInput) -> list[Table]:
    """Read a Parquet file (nested values are rendered as JSON)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not inp.data.startswith(b"PAR1") or not inp.data.endswith(b"PAR1"):
        raise UnreadableTable(inp.path, "not a valid Parquet file (PAR1 magic missing)")
    try:
        arrow = pq.read_table(io.BytesIO(inp.data))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise UnreadableTable(inp.path, f"corrupt Parquet file ({exc})") from None
    columns = [arrow.column(i).to_pylist() for i in range(arrow.num_columns)]
    rows = [list(arrow.column_names)]
    rows += [[value_text(col[r]) for col in columns] for r in range(arrow.num_rows)]
    return [Table.from_rows(rows)]
