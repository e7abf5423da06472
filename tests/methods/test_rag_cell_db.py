"""TableRAG cell DB: distinct pairs, frequency order, budget cut (TableRAG §3.3)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.methods.rag.cell_db import CellEntry, build_cell_db
from tablequest.methods.rag.schema_db import build_schema_db, raw_frame
from tablequest.table import Table

SHOP = Table.from_rows(
    [
        ["product", "status", "city"],
        ["wallet", "shipped", "Pune"],
        ["belt", "shipped", "Delhi"],
        ["wallet", "returned", "Pune"],
        ["wallet", "", "Delhi"],
        ["bag", "shipped", " "],
    ]
)


def pairs(db: object) -> list[tuple[str, str, int]]:
    return [(e.column, e.value, e.count) for e in db.entries]  # type: ignore[attr-defined]


def test_contents_hand_computed() -> None:
    db = build_cell_db(raw_frame(SHOP), budget=100)
    # counts: wallet 3, shipped 3, Pune 2, Delhi 2, belt 1, returned 1, bag 1 (empties skipped)
    # ties by first occurrence in row-major order: (r0 product) wallet < (r0 status) shipped;
    # (r0 city) Pune < (r1 city) Delhi; belt (r1,c0) < returned (r2,c1) < bag (r4,c0)
    assert pairs(db) == [
        ("product", "wallet", 3),
        ("status", "shipped", 3),
        ("city", "Pune", 2),
        ("city", "Delhi", 2),
        ("product", "belt", 1),
        ("status", "returned", 1),
        ("product", "bag", 1),
    ]
    assert (db.n_distinct, db.n_cells, db.truncated, len(db)) == (7, 13, False, 7)
    assert json.loads(db.docs[0]) == {"column_name": "product", "cell_value": "wallet"}


def test_budget_keeps_the_most_frequent_in_order() -> None:
    db = build_cell_db(raw_frame(SHOP), budget=3)
    assert pairs(db) == [("product", "wallet", 3), ("status", "shipped", 3), ("city", "Pune", 2)]
    assert db.truncated and db.n_distinct == 7 and db.budget == 3


def test_columns_subset_and_categorical_scope() -> None:
    table = Table.from_rows([["name", "n"], ["a", "1"], ["b", "1"], ["a", "2"]])
    raw = raw_frame(table)
    schema, _ = build_schema_db(raw)
    db = build_cell_db(raw, columns=schema.categorical)
    assert pairs(db) == [("name", "a", 2), ("name", "b", 1)]
    assert pairs(build_cell_db(raw)) == [("name", "a", 2), ("n", "1", 2), ("name", "b", 1),
                                         ("n", "2", 1)]  # fmt: skip


def test_values_are_verbatim_and_errors_are_precise() -> None:
    table = Table.from_rows([["v"], ["x "], ["x"], ["x "]])
    assert pairs(build_cell_db(raw_frame(table))) == [("v", "x ", 2), ("v", "x", 1)]
    with pytest.raises(ValueError, match="budget B must be >= 1"):
        build_cell_db(raw_frame(table), budget=0)
    with pytest.raises(ValueError, match="unknown columns"):
        build_cell_db(raw_frame(table), columns=["w"])
    empty = build_cell_db(raw_frame(Table.from_rows([["v"]])))
    assert (empty.entries, empty.n_distinct, empty.truncated) == ((), 0, False)


def test_entry_doc_escapes() -> None:
    entry = CellEntry('a "b"', "c\\d", 1)
    assert json.loads(entry.doc) == {"column_name": 'a "b"', "cell_value": "c\\d"}


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.sampled_from(["", "a", "b", "c", " ", "a "]), min_size=3, max_size=3),
        min_size=1,
        max_size=25,
    ),
    budget=st.integers(1, 20),
)
def test_matches_the_official_counter_order(rows: list[list[str]], budget: int) -> None:
    """Same pairs and order as Counter(row-major cells).most_common()[:B] (official code)."""
    table = Table.from_rows([["x", "y", "z"], *rows])
    got = pairs(build_cell_db(raw_frame(table), budget=budget))
    counter = Counter(
        (name, v) for row in rows for name, v in zip("xyz", row, strict=True) if v.strip()
    )
    assert got == [(c, v, n) for (c, v), n in counter.most_common()][:budget]
