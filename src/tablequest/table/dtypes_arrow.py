"""`Table.to_dataframe()`'s typing rule (`table/dtypes.py`) over Arrow string columns, fast.

The rule decides a column from the set of its values (every filled cell reads one way), so it
is applied here to each column's *distinct* values (Arrow dictionary encoding) with the same
functions `dtypes.py` uses, and the typed dictionary is spread back over the rows with one
`take`. Values that are plain ASCII numbers (`123`, `12.5`; not `007`, not `1.234`, which reads
both ways) are recognised and cast vectorised, so a 300,000-row column of prices or ids never
goes through Python one value at a time. The result equals `to_dataframe()`'s column for
column (property-tested in tests/table/test_dtypes_arrow.py): BIGINT, DOUBLE, BOOLEAN, DATE (a
date column whose values are all at midnight) or TIMESTAMP, else the strings unchanged.

No `pa.array` or `pa.scalar` of Python values on a long column's way (`fixed_array` builds
the typed values from numpy buffers instead): pyarrow imports pandas on the first of either
(0.3–0.5 s, a tenth of a big CSV's ingest, which needs pandas nowhere else).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tablequest.table.dtypes import (
    _INT64,
    _MAX_EXACT_FLOAT,
    Number,
    _date_series,
    _number_readings,
    is_missing,
    parse_bool_column,
    parse_date_column,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_range", "fixed_array", "type_string_columns"]

_FAST_NUMBER = r"^(0|[1-9][0-9]*)(\.[0-9]+)?$"  # 12, 0.5, 12.5; not 007, 01.5
_BOTH_WAYS = r"^[0-9]{1,3}\.[0-9]{3}$"  # 1.234: English 1.234 or decimal-comma 1234
_SHORT = 512  # columns up to this many cells are classified in Python
_PY_INT = re.compile(r"[0-9]+\Z")
_PY_DEC = re.compile(r"[0-9]+\.[0-9]+\Z")
_PY_ZERO = re.compile(r"0[0-9]")
_PY_BOTH = re.compile(r"[0-9]{1,3}\.[0-9]{3}\Z")
# inside datetime64[ns]'s range (1677-09-21 … 2262-04-11), pandas' narrowest
_SAFE_DATES = (dt.datetime(1678, 1, 1), dt.datetime(2262, 1, 1))
_EPOCH = dt.datetime(1970, 1, 1)
_MICROSECOND = dt.timedelta(microseconds=1)


def fixed_array(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """`pa.array(values, type=kind)` for a fixed-width `kind` (int64, float64, bool,
    date32, timestamp("us")) and Python values of it (None: null; naive datetimes), built
    from numpy buffers: `pa.array` would import pandas (module docstring)."""
    import numpy as np
    import pyarrow as pa

    valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=len(values))
    data: Any
    if pa.types.is_date32(kind):
        data = np.array([0 if v is None else (v - _EPOCH.date()).days for v in values], np.int32)
    elif pa.types.is_timestamp(kind):
        data = np.array([0 if v is None else (v - _EPOCH) // _MICROSECOND for v in values])
        data = data.astype(np.int64)
    else:
        zero = False if pa.types.is_boolean(kind) else 0
        dtype = {"int64": np.int64, "double": np.float64, "bool": np.bool_}[str(kind)]
        data = np.array([zero if v is None else v for v in values], dtype=dtype)
    if pa.types.is_boolean(kind):
        data = np.packbits(data, bitorder="little")
    nulls = len(values) - int(valid.sum())
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(kind, len(values), [bitmap, pa.py_buffer(data)], nulls)


def arrow_range(n: int) -> pa.Array:
    """The int64 array 0, 1, …, n-1 (row ids), without `pa.array` (module docstring)."""
    import numpy as np
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.arange(n, dtype=np.int64))])


@dataclass
class _Column:
    """One column's distinct values and how they read as numbers."""

    indices: Any  # pa.Array of int32: row → distinct value
    dictionary: Any  # pa.StringArray: the distinct values, first occurrence first
    fast: Any  # pa.BooleanArray per distinct value: a plain ASCII number
    fast_dec: bool  # some plain number has a fraction (English only)
    en: list[Number | None] | None  # readings of the other values (None: not this style)
    de: list[Number | None] | None
    filled: bool
    missing: bool

    @property
    def en_only(self) -> bool:
        return self.filled and self.en is not None and (self.de is None or self.fast_dec)

    @property
    def de_only(self) -> bool:
        return self.filled and self.de is not None and not self.fast_dec and self.en is None


def _distinct(array: Any) -> tuple[Any, Any, Any, list[str], bool]:
    """(row → distinct index, distinct values, plain-number mask, the other values, some
    plain number has a fraction), with Arrow kernels for a long column and Python for a
    short one (a kernel call costs more than a short column's whole loop)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(array) <= _SHORT:
        texts = array.to_pylist()
        first: dict[str, int] = {}
        indices = [first.setdefault(t, len(first)) for t in texts]
        values = list(first)
        ints = [bool(_PY_INT.match(v)) and not _PY_ZERO.match(v) for v in values]
        decs = [
            bool(_PY_DEC.match(v)) and not _PY_ZERO.match(v) and not _PY_BOTH.match(v)
            for v in values
        ]
        fast = [a or b for a, b in zip(ints, decs, strict=True)]
        others = [v for v, f in zip(values, fast, strict=True) if not f]
        return (pa.array(indices, type=pa.int32()), pa.array(values, type=pa.string()),
                pa.array(fast, type=pa.bool_()), others, any(decs))  # fmt: skip
    encoded = pc.dictionary_encode(array)
    dictionary = encoded.dictionary
    # one pass for "a plain number without a leading zero", then the fractions among them
    number = pc.match_substring_regex(dictionary, _FAST_NUMBER)
    dotted = pc.and_(number, pc.match_substring(dictionary, "."))
    fast_dec = pc.and_(dotted, pc.invert(pc.match_substring_regex(dictionary, _BOTH_WAYS)))
    fast = pc.and_(number, pc.or_(pc.invert(dotted), fast_dec))
    others = dictionary.filter(pc.invert(fast)).to_pylist()
    return encoded.indices, dictionary, fast, others, bool(pc.any(fast_dec).as_py())


def _column(array: pa.Array) -> _Column:
    if hasattr(array, "combine_chunks"):  # a ChunkedArray (DuckDB's results come so)
        array = array.combine_chunks()
    indices, dictionary, fast, others, has_dec = _distinct(array)
    if all(is_missing(text) for text in others):  # plain numbers (if any) and gaps only
        gaps: list[Number | None] = [None] * len(others)
        filled = len(others) < len(dictionary)
        return _Column(indices, dictionary, fast, has_dec, gaps, gaps, filled, bool(others))
    reading = _number_readings(others)  # dtypes' own reading of the other values
    if reading.en is None and reading.de is None:  # neither style reads them: text
        return _Column(indices, dictionary, fast, False, None, None, True, False)
    missing = any(is_missing(text) for text in others)
    return _Column(indices, dictionary, fast, has_dec, reading.en, reading.de, True, missing)


def _style(columns: Sequence[_Column]) -> str | None:
    """The table's number style for columns that read both ways (`dtypes._number_style`)."""
    de_only = any(c.de_only for c in columns)
    en_only = any(c.en_only for c in columns)
    if de_only and en_only:
        return None
    return "de" if de_only else "en"


def _readings(column: _Column, style: str | None) -> list[Number | None] | None:
    """The other values' numbers in the column's style, or None (`dtypes._numbers`)."""
    if not column.filled:
        return None
    en, de = column.en, column.de
    if column.fast_dec:
        return en  # a plain fraction reads only in English: the column is English or text
    if en is not None and (de is None or en == de):
        return en
    if de is not None and en is None:
        return de
    if en is None or style is None:
        return None
    return en if style == "en" else de


def _numbers(column: _Column, others: list[Number | None]) -> tuple[str, Any] | None:
    """(SQL type, typed distinct values) of a number column, or None when it stays text
    (`dtypes._number_series`; plain numbers cast by Arrow, which rounds as Python does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = [v for v in others if v is not None]
    ints = not column.fast_dec and all(isinstance(v, int) for v in present)
    if ints:  # only long plain integers can reach 2**53 or 2**63
        # 16 characters or more (a regex: a Python scalar argument would import pandas)
        long = pc.and_(column.fast, pc.match_substring_regex(column.dictionary, "(?s)^.{16}"))
        present += [int(v) for v in column.dictionary.filter(long).to_pylist()]
    if ints and not column.missing:
        if any(abs(v) >= _INT64 for v in present):
            return None
        whole = [None if v is None else int(v) for v in others]
        return "BIGINT", _spread(column, pa.int64(), whole)
    if ints and any(abs(v) > _MAX_EXACT_FLOAT for v in present):
        return None
    floats = [None if v is None else float(v) for v in others]
    return "DOUBLE", _spread(column, pa.float64(), floats)


def _spread(column: _Column, kind: Any, others: list[Any]) -> Any:
    """The distinct values typed: plain numbers cast, the others' readings put in place."""
    import pyarrow as pa
    import pyarrow.compute as pc

    blank = pa.nulls(len(column.dictionary), column.dictionary.type)  # each replaced below
    cast = pc.cast(pc.if_else(column.fast, column.dictionary, blank), kind)
    rest = pc.invert(column.fast)
    if not others:
        return cast
    return pc.replace_with_mask(cast, rest, fixed_array(others, kind))


def _booleans(column: _Column) -> tuple[str, Any] | None:
    """("BOOLEAN", the distinct values as booleans) when every filled one is true/false."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pc.any(column.fast).as_py():  # a plain number: not a boolean column
        return None
    head = column.dictionary.slice(0, 64).to_pylist()  # most columns fail on their first
    if parse_bool_column(head) is None and any(not is_missing(v) for v in head):
        return None
    flags = parse_bool_column(column.dictionary.to_pylist())
    return None if flags is None else ("BOOLEAN", fixed_array(flags, pa.bool_()))


def _dates(values: list[str]) -> tuple[str, Any] | None:
    """(DATE or TIMESTAMP, the distinct values as dates) of a date column, else None."""
    import pyarrow as pa

    dates = parse_date_column(values)
    if dates is None:
        return None
    filled = [d for d in dates if d is not None]
    if all(_SAFE_DATES[0] <= d <= _SAFE_DATES[1] for d in filled):
        # inside every pandas' datetime64 range: what `_date_series` gives, without pandas
        # (importing it was a tenth of a big file's ingest)
        if all(d.time() == dt.time(0) for d in filled):
            days = [None if d is None else d.date() for d in dates]
            return "DATE", fixed_array(days, pa.date32())
        return "TIMESTAMP", fixed_array(dates, pa.timestamp("us"))
    return _pandas_dates(values)


def _pandas_dates(values: list[str]) -> tuple[str, Any] | None:
    """`_dates` by pandas (`dtypes._date_series`), for dates near its datetime64 limits."""
    import pandas as pd
    import pyarrow as pa

    series = _date_series(values)
    if series is None:
        return None
    stamps = pd.DatetimeIndex(series)
    filled = stamps[stamps.notna()]
    if len(filled) and (filled == filled.normalize()).all():
        return "DATE", pa.array(stamps.date, type=pa.date32(), from_pandas=True)
    return "TIMESTAMP", pa.array(stamps.as_unit("us"), type=pa.timestamp("us"))


def type_string_columns(arrays: Sequence[pa.Array]) -> list[tuple[str, pa.Array]]:
    """(SQL type, typed array) for each string column of one table (module docstring).

    `arrays` hold the cells' text ('' for an empty cell, never null), one array per column.
    """
    import pyarrow as pa

    columns = [_column(a) for a in arrays]
    style = _style(columns)
    out: list[tuple[str, pa.Array]] = []
    for array, column in zip(arrays, columns, strict=True):
        typed = None
        others = _readings(column, style)
        if others is not None:
            typed = _numbers(column, others)
        if typed is None and column.filled:
            typed = _booleans(column)
        if typed is None and column.filled:
            typed = _dates(column.dictionary.to_pylist())
        if typed is None:
            text = array.combine_chunks() if hasattr(array, "combine_chunks") else array
            out.append(("VARCHAR", text.cast(pa.string())))
        else:
            out.append((typed[0], typed[1].take(column.indices)))
    return out
