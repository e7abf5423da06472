"""The Arrow typing of relations equals `Table.to_dataframe()`'s rule, column for column."""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.table import Table, dtypes_arrow
from tablequest.table.dtypes_arrow import type_string_columns

# Tokens that exercise every branch of table/dtypes.py: styles, both-way numbers, leading
# zeros, signs, missing markers, whitespace, big integers, dates of each form and invalid ones.
TOKENS = [
    "", "-", "n/a", "..", " ", "0", "7", "12", "007", "-3", "−4", "+5", " 8 ", "12.5", "0.5",
    "1.234", "1,234", "12,5", "1.234,5", "1,234.5", "1.234.567", "4.2e3", ".5", "$9", "12%",
    "(3)", "9007199254740993", "99999999999999999999", "2024-03-31", "2024-02-30",
    "true", "FALSE", " True ", "yes", "1500-01-01", "1500-01-01 10:00",
    "2024-03-31 10:30", "31.03.2024", "01/02/2024", "13/02/2024", "02/13/2024", "abc", "٣",
]  # fmt: skip


def _reference(cells: list[list[str]]) -> list[tuple[str, list[object]]]:
    table = Table.from_rows([[f"c{j}" for j in range(len(cells[0]))], *cells])
    frame = table.to_dataframe()
    out = []
    for name in frame.columns:
        series = frame[name]
        kind = series.dtype.kind
        if kind == "b":
            out.append(("BOOLEAN", [None if pd.isna(v) else bool(v) for v in series]))
        elif kind == "i":
            out.append(("BIGINT", [int(v) for v in series]))
        elif kind == "f":
            out.append(("DOUBLE", [None if math.isnan(v) else float(v) for v in series]))
        elif kind == "M":
            out.append(
                ("DATE/TIMESTAMP", [None if pd.isna(v) else v.to_pydatetime() for v in series])
            )
        else:
            out.append(("VARCHAR", list(series)))
    return out


def _ours(cells: list[list[str]]) -> list[tuple[str, list[object]]]:
    arrays = [pa.array([row[j] for row in cells], pa.string()) for j in range(len(cells[0]))]
    out: list[tuple[str, list[object]]] = []
    for sql_type, array in type_string_columns(arrays):
        values = array.to_pylist()
        if sql_type in ("DATE", "TIMESTAMP"):
            values = [None if v is None else pd.Timestamp(v).to_pydatetime() for v in values]
            sql_type = "DATE/TIMESTAMP"
        out.append((sql_type, values))
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda width: st.lists(
            st.lists(st.sampled_from(TOKENS), min_size=width, max_size=width),
            min_size=1,
            max_size=6,
        )
    )
)
def test_arrow_typing_equals_to_dataframe(cells: list[list[str]]) -> None:
    assert _ours(cells) == _reference(cells)
    short = dtypes_arrow._SHORT
    dtypes_arrow._SHORT = 0  # the Arrow kernels' path (long columns) on the same cells
    try:
        assert _ours(cells) == _reference(cells)
    finally:
        dtypes_arrow._SHORT = short


def test_columns_of_one_kind_each() -> None:
    cells = [
        ["1", "1.5", "2024-01-01", "x", "1,5", "007"],
        ["22", "", "2024-01-02", "", "2,25", "12"],
    ]
    assert [t for t, _ in _ours(cells)] == [
        "BIGINT",
        "DOUBLE",
        "DATE/TIMESTAMP",
        "VARCHAR",
        "DOUBLE",
        "VARCHAR",
    ]
    assert _ours(cells) == _reference(cells)


def test_true_false_columns_are_booleans_and_yes_no_stays_text() -> None:
    table = Table.from_rows(
        [["a", "b", "c", "d"], ["True", "true", "yes", "1"], ["false", "", "no", "0"],
         [" FALSE ", "n/a", "yes", "1"]]
    )  # fmt: skip
    frame = table.to_dataframe()
    assert [str(t) for t in frame.dtypes] == ["bool", "boolean", "object", "int64"]
    assert frame["a"].tolist() == [True, False, False]
    assert frame["b"].isna().tolist() == [False, True, True]
    assert [t for t, _ in _ours([list(r) for r in table.body])] == [
        "BOOLEAN", "BOOLEAN", "VARCHAR", "BIGINT"
    ]  # fmt: skip


def test_fixed_array_equals_pa_array() -> None:
    # typed values are built from numpy buffers (pa.array would import pandas): same arrays
    import datetime as dt

    import pyarrow as pa

    from tablequest.table import arrow_range, fixed_array

    cases = [
        (pa.int64(), [3, None, -(2**63), 2**63 - 1]),
        (pa.float64(), [0.1, None, -2.5e300]),
        (pa.bool_(), [True, None, False, True, False, False, True, True, False]),
        (pa.bool_(), [True, False]),
        (pa.date32(), [dt.date(2024, 2, 29), None, dt.date(1900, 1, 1)]),
        (pa.timestamp("us"), [dt.datetime(1969, 12, 31, 23, 59, 59, 5), None]),
        (pa.int64(), []),
    ]
    for kind, values in cases:
        got = fixed_array(values, kind)
        assert got.equals(pa.array(values, type=kind)), (kind, values)
        got.validate(full=True)
    assert arrow_range(4).equals(pa.array(range(4), type=pa.int64()))
