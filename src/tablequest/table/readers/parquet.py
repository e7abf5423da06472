"""Parquet files via pyarrow: one table, header = column names, values rendered as text.

Reading budget (table/budget.py): the footer's row count × column count and the row groups'
uncompressed sizes are checked before any data page is read; then row groups are read one
at a time, string columns as dictionaries, and each column's decoded size (dictionary
values counted once per use) is spent before it becomes Python values. A dictionary
column is expanded by reference, so two million equal strings are one Python string.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from tablequest.table.budget import Meter
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import value_text

__all__ = ["read_parquet"]


def read_parquet(inp: ReadInput) -> list[Table]:
    """Read a Parquet file (nested values are rendered as JSON)."""
    import pyarrow as pa

    if not inp.data.startswith(b"PAR1") or not inp.data.endswith(b"PAR1"):
        raise UnreadableTable(inp.path, "not a valid Parquet file (PAR1 magic missing)")
    try:
        names, columns = _read(inp)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise UnreadableTable(inp.path, f"corrupt Parquet file ({exc})") from None
    rows = [names]
    n_rows = len(columns[0]) if columns else 0
    rows += [[col[r] for col in columns] for r in range(n_rows)]
    return [Table.from_rows(rows)]


def _open(inp: ReadInput) -> tuple[Any, list[str]]:
    """The file opened for reading (string columns as dictionaries) and its column names,
    after the budget checks of the module docstring (OverBudget raised before any page)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meter = inp.meter
    meta = pq.ParquetFile(io.BytesIO(inp.data)).metadata
    schema = meta.schema.to_arrow_schema()
    names = list(schema.names)
    meter.columns(len(names))
    cap = meter.remaining_cells()
    if cap is not None and meta.num_rows * max(1, len(names)) > cap:
        meter.spend(cells=meta.num_rows * max(1, len(names)))
    stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    left = meter.remaining_bytes()
    if left is not None and stored > left:
        meter.spend(nbytes=stored)
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]
    return pq.ParquetFile(io.BytesIO(inp.data), read_dictionary=strings), names


def parquet_header(inp: ReadInput) -> tuple[list[str], int]:
    """(column names, rows) of a Parquet file within the budget, reading no data page."""
    pf, names = _open(inp)
    return names, int(pf.metadata.num_rows)


def text_columns(inp: ReadInput) -> tuple[list[str], list[Any]]:
    """(column names, one Arrow string array per column): the cells' text exactly as
    `read_parquet` makes it, within the same budget, without Python lists of cells (a big
    file's streamed ingest, corpus/storage/streaming.py)."""
    import pyarrow as pa

    names, chunks = _chunks(inp)
    parts: list[list[Any]] = [[] for _ in names]
    for j, chunk in chunks:
        parts[j].append(_text_array(chunk, inp.meter))
    return names, [pa.concat_arrays(p) if p else pa.array([], pa.string()) for p in parts]


def _chunks(inp: ReadInput) -> tuple[list[str], Iterator[tuple[int, Any]]]:
    """(column names, each column's Arrow chunks as (column, chunk)), one row group at a
    time: the clock checked per group, its cells spent once its chunks are used."""
    pf, names = _open(inp)

    def chunks() -> Iterator[tuple[int, Any]]:
        for i in range(pf.num_row_groups):
            group = pf.read_row_group(i)
            inp.meter.tick()
            for j, chunked in enumerate(group.columns):
                for chunk in chunked.chunks:
                    yield j, chunk
            inp.meter.spend(cells=group.num_rows * len(names))

    return names, chunks()


def _text_array(array: Any, meter: Meter) -> Any:
    """`_texts` as an Arrow string array: each distinct value rendered once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(array.type):
        meter.spend(nbytes=array.nbytes)
        try:
            array = pc.dictionary_encode(array)
        except pa.ArrowNotImplementedError:  # lists, structs: each value rendered
            return pa.array([value_text(v) for v in array.to_pylist()], type=pa.string())
        values = array.dictionary
    else:
        values = array.dictionary
        _spend_dictionary(array, meter)
    texts = pa.array([value_text(v) for v in values.to_pylist()], type=pa.string())
    return pc.fill_null(texts.take(array.indices), "")


def _read(inp: ReadInput) -> tuple[list[str], list[list[str]]]:
    names, chunks = _chunks(inp)
    columns: list[list[str]] = [[] for _ in names]
    for j, chunk in chunks:
        columns[j].extend(_texts(chunk, inp.meter))
    return names, columns


def _spend_dictionary(array: Any, meter: Meter) -> None:
    """Spend a dictionary column's decoded size: each value counted once per use."""
    import pyarrow.compute as pc

    if len(array.dictionary):
        used = pc.take(pc.binary_length(array.dictionary), array.indices)
        meter.spend(nbytes=int(pc.sum(used).as_py() or 0))


def _texts(array: Any, meter: Meter) -> list[str]:
    """The cell texts of one Arrow array, its decoded size spent first."""
    import pyarrow as pa

    if pa.types.is_dictionary(array.type):
        values = array.dictionary
        _spend_dictionary(array, meter)
        texts = [value_text(v) for v in values.to_pylist()]
        return [texts[i] if i is not None else "" for i in array.indices.to_pylist()]
    meter.spend(nbytes=array.nbytes)
    return [value_text(v) for v in array.to_pylist()]
