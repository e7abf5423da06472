"""TableRAG schema database (arXiv:2410.04739 §3.3 "Schema Retrieval").

Per column: its name, an inferred type and example values — min and max for numeric and
datetime columns, the three most frequent values for categorical ones. The encoded text of an
entry is the column name (as in the official code); the text shown to the solver is a JSON
line in the form of the paper's Fig. 11 (``{"column_name": ..., "dtype": ..., "min": ...}``).

The same pass builds the typed DataFrame `df` the solver works on (the official code runs
``infer_dtype`` before the solver, so ``df['quantity']`` is int64 there too).

Numbers written as text ("$449.00", "12%", "1,234"): the column is categorical, as the
paper's figures show it (Fig. 8: ``price  String  $449, $399, $509``; Fig. 11:
``{"column_name": "item_total", "dtype": "object", "cell_examples": [$449.00, …]}``, the
solver strips "$" itself), and as the official ``infer_dtype`` leaves it (``pd.to_numeric``
fails on it). Its values are therefore in the cell database (`cell_db`, categorical
columns) and its three most frequent values are the schema entry's examples.

Choices (ours, the paper is silent):
- Everything is vectorised with pyarrow compute over string columns; no loop over cells.
- Empty (whitespace-only) cells are missing values: they do not stop a column from being
  numeric; an int column with missing values becomes pandas' nullable ``Int64``.
- Datetime: only columns whose every non-empty cell looks like a date (a 4-digit year with
  separators, d/m/y, or a month name with a year) are handed to ``pd.to_datetime``, so a
  column of month names or codes never becomes dates; a failed conversion keeps the column
  categorical. Examples show dates as ``YYYY-MM-DD`` when every time is midnight.
- Ties among the three most frequent values go to the value seen first (top to bottom).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tablequest.table import Table

ColumnType = Literal["int", "float", "datetime", "categorical"]

_INT = r"^[-+]?\d+$"
_FLOAT = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"
_DATE = (
    r"^(\d{4}[-/.]\d{1,2}([-/.]\d{1,2})?([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?"
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}( \d{1,2}:\d{2}(:\d{2})?)?"
    r"|[A-Za-z]{3,9}\.? \d{1,2},? \d{4}"
    r"|\d{1,2} [A-Za-z]{3,9}\.?,? \d{4}"
    r"|[A-Za-z]{3,9}\.? \d{4})$"
)


@dataclass(frozen=True)
class ColumnSchema:
    """One schema entry.

    Attributes:
        name: Column name in `df`.
        dtype: Inferred type (numbers written as text, "$449.00", are categorical).
        frame_dtype: dtype of the column in the solver's `df` ("int64", "object", ...).
        minimum: Smallest value (numeric and datetime columns).
        maximum: Largest value (numeric and datetime columns).
        top_values: The three most frequent values (categorical columns).
    """

    name: str
    dtype: ColumnType
    frame_dtype: str
    minimum: int | float | str | None = None
    maximum: int | float | str | None = None
    top_values: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        """The JSON line shown to the solver (paper Fig. 11)."""
        out: dict[str, Any] = {"column_name": self.name, "dtype": self.frame_dtype}
        if self.dtype == "categorical":
            out["cell_examples"] = list(self.top_values)
        else:
            out["min"] = self.minimum
            out["max"] = self.maximum
        return json.dumps(out, ensure_ascii=False)


@dataclass(frozen=True)
class SchemaDB:
    """The schema entries of a table, in column order."""

    columns: tuple[ColumnSchema, ...]

    @property
    def keys(self) -> list[str]:
        """What the encoder sees: the column names."""
        return [c.name for c in self.columns]

    @property
    def docs(self) -> list[str]:
        return [c.doc for c in self.columns]

    @property
    def categorical(self) -> list[str]:
        return [c.name for c in self.columns if c.dtype == "categorical"]

    def get(self, name: str) -> ColumnSchema:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"no column {name!r} in the schema")


def raw_frame(table: Table) -> pa.Table:
    """The table body as an Arrow table of strings (one chunk per column), flat unique names."""
    names = list(table.columns)
    if table.n_rows == 0:
        return pa.table({n: pa.array([], type=pa.string()) for n in names})
    columns = list(zip(*table.body, strict=True))
    return pa.table(
        {n: pa.array(col, type=pa.string()) for n, col in zip(names, columns, strict=True)}
    )


def _all(mask: pa.Array | pa.ChunkedArray) -> bool:
    return bool(pc.all(mask, skip_nulls=True).as_py() is not False)


def _examples(values: pa.Array, k: int = 3) -> tuple[str, ...]:
    if len(values) == 0:
        return ()
    encoded = pc.dictionary_encode(values)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    counts = np.bincount(codes, minlength=len(encoded.dictionary))
    order = np.argsort(-counts, kind="stable")[:k]
    return tuple(str(encoded.dictionary[int(i)].as_py()) for i in order)


def _as_numbers(text: pa.Array) -> tuple[pa.Array, ColumnType] | None:
    """Cast trimmed strings (nulls for empty) to int64, else float64; None when impossible."""
    if _all(pc.match_substring_regex(text, _INT)):
        try:
            return pc.cast(text, pa.int64()), "int"
        except pa.ArrowInvalid:  # beyond int64: read as float
            pass
    try:
        return pc.cast(text, pa.float64()), "float"
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numeric_column(name: str, numbers: pa.Array, kind: ColumnType) -> tuple[ColumnSchema, Any]:
    lo, hi = pc.min_max(numbers).values()
    missing = pc.is_null(numbers).to_numpy(zero_copy_only=False)
    if kind == "int":
        values = pc.fill_null(numbers, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        if missing.any():
            column: Any = pd.arrays.IntegerArray(values, missing)
            frame_dtype = "Int64"
        else:
            column, frame_dtype = values, "int64"
    else:
        column = numbers.to_numpy(zero_copy_only=False).astype(np.float64)
        frame_dtype = "float64"
    return ColumnSchema(name, kind, frame_dtype, minimum=lo.as_py(), maximum=hi.as_py()), column


def _parse_dates(text: pa.Array) -> Any:
    """`pd.to_datetime` of the strings (a Series; nulls → NaT); None when it fails or gives no
    datetime64 column (mixed time zones give an object column: keep the text)."""
    series = text.to_pandas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = pd.to_datetime(series, errors="raise")
        except (ValueError, TypeError, OverflowError):
            return None
    if not isinstance(converted.dtype, np.dtype) or converted.dtype.kind != "M":
        return None
    return converted


def _datetime(name: str, text: pa.Array) -> tuple[ColumnSchema, Any] | None:
    present = pc.drop_null(text)
    if len(present) == 0 or not _all(pc.match_substring_regex(present, _DATE)):
        return None
    converted = _parse_dates(text)
    if converted is None:
        return None
    valid = converted.dropna()
    midnight = bool((valid == valid.dt.normalize()).all())
    fmt = "%Y-%m-%d" if midnight else "%Y-%m-%d %H:%M:%S"
    low, high = valid.min(), valid.max()
    schema = ColumnSchema(
        name,
        "datetime",
        str(converted.dtype),
        minimum=low.strftime(fmt),
        maximum=high.strftime(fmt),
    )
    return schema, converted.to_numpy()


def infer_column(name: str, raw: pa.ChunkedArray) -> tuple[ColumnSchema, Any]:
    """Schema entry and the `df` column (numpy / pandas array) for one string column."""
    trimmed = pc.utf8_trim_whitespace(raw.combine_chunks())
    empty = pc.equal(trimmed, "")
    n_missing = int(pc.sum(empty).as_py() or 0)
    text = pc.if_else(empty, pa.scalar(None, pa.string()), trimmed)
    keep_text = raw.combine_chunks().to_pandas()
    if n_missing == len(raw):  # an empty column: nothing to infer
        return ColumnSchema(name, "categorical", "object"), keep_text
    if _all(pc.match_substring_regex(pc.drop_null(text), _FLOAT)):
        cast = _as_numbers(text)
        if cast is not None:
            return _numeric_column(name, cast[0], cast[1])
    dated = _datetime(name, text)
    if dated is not None:
        return dated
    present = pc.drop_null(pc.if_else(empty, pa.scalar(None, pa.string()), raw.combine_chunks()))
    return ColumnSchema(name, "categorical", "object", top_values=_examples(present)), keep_text


def build_schema_db(raw: pa.Table) -> tuple[SchemaDB, pd.DataFrame]:
    """The schema DB and the typed DataFrame `df` for the solver, from `raw_frame(table)`."""
    entries: list[ColumnSchema] = []
    data: dict[str, Any] = {}
    for name in raw.column_names:
        schema, column = infer_column(name, raw.column(name))
        entries.append(schema)
        data[name] = column
    frame = pd.DataFrame(data, index=pd.RangeIndex(raw.num_rows))
    return SchemaDB(tuple(entries)), frame


def schema_from_distinct(
    name: str, values: pa.Array, counts: npt.NDArray[np.int64]
) -> ColumnSchema:
    """The schema entry `infer_column` gives a column, from its distinct values alone.

    `values` are the column's distinct cells verbatim in order of first appearance (blanks
    included), `counts` how many cells hold each. Every test `infer_column` makes holds for
    all cells exactly when it holds for all distinct values, and min, max and the first
    occurrence of the smallest and largest values are the same, so the entry is identical
    (tests/methods/test_rag_relation.py); what differs is the work: one pass over D values,
    not N cells.
    """
    trimmed = pc.utf8_trim_whitespace(values)
    blank = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
    if blank.all():  # an empty column: nothing to infer
        return ColumnSchema(name, "categorical", "object")
    keep = pa.array(np.flatnonzero(~blank))
    text = trimmed.take(keep)
    if _all(pc.match_substring_regex(text, _FLOAT)):
        cast = _as_numbers(text)
        if cast is not None:
            lo, hi = pc.min_max(cast[0]).values()
            kind = cast[1]
            frame_dtype = "float64" if kind == "float" else "Int64" if blank.any() else "int64"
            return ColumnSchema(name, kind, frame_dtype, minimum=lo.as_py(), maximum=hi.as_py())
    dated = _datetime(name, text)
    if dated is not None:
        return dated[0]
    present, present_counts = values.take(keep), counts[~blank]
    order = np.argsort(-present_counts, kind="stable")[:3]
    examples = tuple(str(present[int(i)].as_py()) for i in order)
    return ColumnSchema(name, "categorical", "object", top_values=examples)


def frame_column(schema: ColumnSchema, raw: pa.ChunkedArray | pa.Array) -> Any:
    """The solver's `df` column `infer_column` gives for a column whose entry is `schema`."""
    array = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
    numeric = schema.dtype in ("int", "float")
    if not (numeric or schema.dtype == "datetime"):
        return array.to_pandas()
    trimmed = pc.utf8_trim_whitespace(array)
    text = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)
    if schema.dtype == "datetime":
        converted = _parse_dates(text)
        if converted is None:  # cannot happen for an entry made from the same values
            raise ValueError(f"column {schema.name!r} no longer reads as dates")
        return converted.to_numpy()
    numbers = pc.cast(text, pa.int64() if schema.dtype == "int" else pa.float64())
    return _numeric_column(schema.name, numbers, schema.dtype)[1]


def schema_for(names: Sequence[str], schema: SchemaDB) -> list[ColumnSchema]:
    """The entries of `names`, in the given order (unknown names skipped)."""
    by_name = {c.name: c for c in schema.columns}
    return [by_name[n] for n in names if n in by_name]
