"""TableRAG schema DB on hand-built tables (TableRAG, arXiv:2410.04739, §3.3 "Schema Retrieval")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tablequest.methods.rag.cell_db import build_cell_db
from tablequest.methods.rag.schema_db import (
    ColumnSchema,
    build_schema_db,
    raw_frame,
    schema_for,
)
from tablequest.table import Table

ORDERS = Table.from_rows(
    [
        ["product", "price", "qty", "rate", "order_date", "discount", "units", "note"],
        ["wallet", "$1,299.00", "1", "0.5", "2021-06-13", "12%", "1,234", ""],
        ["belt", "$19.50", "4", "2", "2022-02-05", "5%", "12", ""],
        ["wallet", "$449.00", "2", "-1.25", "2021-12-31", "100%", "7", ""],
        ["bag", "$5.00", "3", "1e2", "2022-01-01", "0%", "1,000,000", ""],
    ]
)


@pytest.fixture(scope="module")
def schema_and_frame() -> tuple[object, pd.DataFrame]:
    return build_schema_db(raw_frame(ORDERS))


def test_types_and_examples_hand_computed(schema_and_frame: tuple[object, pd.DataFrame]) -> None:
    schema, _ = schema_and_frame
    got = {c.name: c for c in schema.columns}  # type: ignore[attr-defined]
    assert got["product"] == ColumnSchema(
        "product", "categorical", "object", top_values=("wallet", "belt", "bag")
    )
    assert got["qty"] == ColumnSchema("qty", "int", "int64", minimum=1, maximum=4)
    assert got["rate"] == ColumnSchema("rate", "float", "float64", minimum=-1.25, maximum=100.0)
    assert got["order_date"].dtype == "datetime"
    assert (got["order_date"].minimum, got["order_date"].maximum) == ("2021-06-13", "2022-02-05")
    # numbers written as text stay text, as in the paper's Fig. 8 ("price  String  $449, …")
    # and Fig. 11 ("item_total", dtype "object", cell_examples "$449.00", …)
    assert got["price"] == ColumnSchema(
        "price", "categorical", "object", top_values=("$1,299.00", "$19.50", "$449.00")
    )
    assert got["discount"] == ColumnSchema(
        "discount", "categorical", "object", top_values=("12%", "5%", "100%")
    )
    assert got["units"] == ColumnSchema(
        "units", "categorical", "object", top_values=("1,234", "12", "7")
    )
    assert got["note"] == ColumnSchema("note", "categorical", "object")


def test_docs_are_the_paper_json_lines(schema_and_frame: tuple[object, pd.DataFrame]) -> None:
    schema, _ = schema_and_frame
    docs = [json.loads(d) for d in schema.docs]  # type: ignore[attr-defined]
    assert docs[0] == {
        "column_name": "product",
        "dtype": "object",
        "cell_examples": ["wallet", "belt", "bag"],
    }
    assert docs[2] == {"column_name": "qty", "dtype": "int64", "min": 1, "max": 4}
    assert docs[1] == {
        "column_name": "price",
        "dtype": "object",
        "cell_examples": ["$1,299.00", "$19.50", "$449.00"],
    }
    assert schema.keys == list(ORDERS.columns)  # type: ignore[attr-defined]
    categorical = ["product", "price", "discount", "units", "note"]
    assert schema.categorical == categorical  # type: ignore[attr-defined]


def test_dollar_values_are_in_the_cell_db(schema_and_frame: tuple[object, pd.DataFrame]) -> None:
    """Fig. 8 / Fig. 11: "$449"-style cells are text cells, so the cell DB (categorical
    columns) holds them; "$449.00" is retrievable as a (column, value) pair."""
    schema, _ = schema_and_frame
    db = build_cell_db(raw_frame(ORDERS), columns=schema.categorical)  # type: ignore[attr-defined]
    pairs = {(e.column, e.value) for e in db.entries}
    assert ("price", "$449.00") in pairs and ("discount", "12%") in pairs
    assert ("units", "1,000,000") in pairs
    # product 3 distinct + price 4 + discount 4 + units 4 (note is blank)
    assert len(db) == 15 and {c for c, _ in pairs} == {"product", "price", "discount", "units"}


def test_frame_is_typed_for_the_solver(schema_and_frame: tuple[object, pd.DataFrame]) -> None:
    _, frame = schema_and_frame
    assert frame["qty"].dtype == np.int64
    assert frame["rate"].dtype == np.float64
    assert frame["order_date"].dtype.kind == "M"
    assert list(frame["price"]) == ["$1,299.00", "$19.50", "$449.00", "$5.00"]  # text kept
    assert list(frame.index) == [0, 1, 2, 3]


def test_missing_values_and_ties() -> None:
    table = Table.from_rows(
        [["n", "x", "c", "d"], ["1", "", "b", "3 March 2020"], ["", "2.5", "a", ""],
         ["3", "", "a", "5 May 2021"], ["4", "", "b", ""], ["5", "", "c", ""]]
    )  # fmt: skip
    schema, frame = build_schema_db(raw_frame(table))
    n, x, c, d = schema.columns
    assert (n.dtype, n.frame_dtype, n.minimum, n.maximum) == ("int", "Int64", 1, 5)
    assert frame["n"].isna().tolist() == [False, True, False, False, False]
    assert (x.dtype, x.minimum, x.maximum) == ("float", 2.5, 2.5)
    assert c.top_values == ("b", "a", "c")  # 2, 2, 1: the tie goes to the first seen
    assert (d.dtype, d.minimum, d.maximum) == ("datetime", "2020-03-03", "2021-05-05")


@pytest.mark.parametrize(
    "values",
    [
        ["March", "April"],  # month names alone are not dates
        ["2021-01-01", "soon"],  # one non-date cell keeps the text
        ["2021-13-45", "2021-01-01"],  # looks like a date, does not convert
        ["1,2", "3"],  # not a thousands separator
        ["$", "$5"],  # a sign without digits
        ["nan", "1"],
        ["99999999999999999999999", "1"],  # too large for int64: float
    ],
)
def test_not_numeric_or_not_dates(values: list[str]) -> None:
    table = Table.from_rows([["v"], *[[v] for v in values]])
    (col,) = build_schema_db(raw_frame(table))[0].columns
    if values[0] == "99999999999999999999999":
        assert col.dtype == "float"
    else:
        assert col.dtype == "categorical", values


def test_timestamps_keep_the_time_and_empty_tables() -> None:
    table = Table.from_rows([["t"], ["2021-01-01 10:30"], ["2021-01-02 08:00"]])
    (col,) = build_schema_db(raw_frame(table))[0].columns
    assert (col.minimum, col.maximum) == ("2021-01-01 10:30:00", "2021-01-02 08:00:00")
    empty = Table.from_rows([["a", "b"]])
    schema, frame = build_schema_db(raw_frame(empty))
    assert [c.dtype for c in schema.columns] == ["categorical", "categorical"]
    assert frame.shape == (0, 2)


def test_lookup_helpers() -> None:
    schema, _ = build_schema_db(raw_frame(ORDERS))
    assert schema.get("qty").maximum == 4
    with pytest.raises(KeyError, match="nope"):
        schema.get("nope")
    assert [c.name for c in schema_for(["qty", "nope", "product"], schema)] == ["qty", "product"]
