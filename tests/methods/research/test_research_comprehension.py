"""DTR comprehension (§3.1): markers, layout, meta graph paths, triples and the execution frame."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tablequest.methods.research.additive import nest, row_numbers, trailing_totals
from tablequest.methods.research.frame import AGGREGATE_COLUMN, build_frame, describe_frame
from tablequest.methods.research.markers import (
    find_unit,
    is_aggregate_label,
    is_unit_label,
    parse_number,
    temporal_kind,
)
from tablequest.methods.research.meta import build_meta_graph, triples
from tablequest.table import Merge, Table, read_tables

HITAB_100 = Path(__file__).parents[2] / "eval" / "fixtures" / "hitab" / "data" / "tables" / "raw"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234", 1234.0),
        ("-3.5", -3.5),
        ("(12)", -12.0),
        ("12%", 12.0),
        ("$9,307", 9307.0),
        ("4.2e3", 4200.0),
        ("52a", 52.0),
        ("..", None),
        ("x", None),
        ("Total", None),
        ("1,23,4", None),
        ("(12", None),
    ],
)
def test_parse_number(text: str, value: float | None) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize(
    ("label", "unit"),
    [
        ("Share of income (%)", "%"),
        ("Revenue (in millions of dollars)", "millions of dollars"),
        ("[Numbers in thousands]", "thousands"),
        ("Weight (kg)", "kg"),
        ("Rate per 100,000 population", "per 100,000"),
        ("Price, $", "$"),
        ("percent", "%"),
        ("Region", None),
        ("Sales (North)", None),
    ],
)
def test_find_unit(label: str, unit: str | None) -> None:
    assert find_unit(label) == unit


def test_marker_classifiers() -> None:
    assert [
        temporal_kind(x) for x in ("1999", "2019-20", "Q3", "FY2020", "March", "2020-01-31")
    ] == [
        "year",
        "year_range",
        "quarter",
        "fiscal_year",
        "month",
        "date",
    ]
    assert temporal_kind("Ontario") is None
    for label in ("Total", "Subtotal", "Grand total", "All ages", "Total employed", "Both sexes"):
        assert is_aggregate_label(label), label
    for label in ("All other industries", "Totally different", "Canada", "Mean Street"):
        assert not is_aggregate_label(label), label
    assert is_unit_label("percent") and is_unit_label("number") and not is_unit_label("men")


def sales() -> Table:
    """Two-level column headers (merged), a stub with sections, units, a total and a note."""
    rows = [
        ["Region", "Sales ($)", "Sales ($)", "Growth (%)"],
        ["", "2019", "2022", "2019-2022"],
        ["East", "", "", ""],
        ["Boston", "1,000", "1,500", "50"],
        ["New York", "2,000", "2,100", "5"],
        ["West", "", "", ""],
        ["Denver", "500", "1,000", "100"],
        ["Seattle", "700", "..", ""],
        ["Total", "4,200", "4,600", "9.5"],
        ["Source: company filings", "", "", ""],
    ]
    return Table.from_rows(rows, n_header_rows=2, merges=[Merge(0, 1, 0, 2)], title="Sales")


def test_meta_graph_paths_sections_and_markers() -> None:
    graph = build_meta_graph(sales())
    layout = graph.layout
    assert layout.stub_cols == (0,) and layout.data_cols == (1, 2, 3)
    assert graph.col_path == {
        1: ("Sales ($)", "2019"),
        2: ("Sales ($)", "2022"),
        3: ("Growth (%)", "2019-2022"),
    }
    assert graph.cell_paths(1, 2) == (("East", "Boston"), ("Sales ($)", "2022"))
    assert graph.row_path[4] == ("West", "Denver")
    assert set(layout.section_rows) == {0, 3}
    assert layout.note_rows == (7,)
    assert graph.notes == ("Source: company filings",)
    assert graph.aggregate_rows == (6,)
    units = graph.units
    assert units["Sales ($)"] == "$" and units["Growth (%)"] == "%"
    assert graph.temporal_axes() == {"column": "year"}
    assert graph.depth("column") == 2 and graph.depth("row") == 2 and graph.both_axis_hierarchy
    assert graph.structure_key() == "c2-r2-sec-agg-unit-time"
    assert graph.n_content == 5 * 3


def test_triples_linearize_structure_and_markers() -> None:
    lines = triples(build_meta_graph(sales()))
    for expected in (
        "(table, has_title, Sales)",
        "(table, has_row_dimension, Region)",
        '(table, has_column_header, "Sales ($)")',
        '("Sales ($)", has_child, 2019)',
        '("Sales ($)", has_unit, $)',
        "(table, has_row_header, East)",
        "(East, has_child, Boston)",
        "(Total, is_aggregate, true)",
        "(2019, is_temporal, year)",
        "(table, has_note, Source: company filings)",
    ):
        assert expected in lines, expected
    short = triples(build_meta_graph(sales()), max_chars=120)
    assert sum(len(x) + 1 for x in short[:-1]) <= 120 and short[-1].startswith("(table, has_more")


def test_frame_flattened_headers_numbers_and_aggregate_flag() -> None:
    frame = build_frame(build_meta_graph(sales()))
    df = frame.df
    assert list(df.columns) == [
        "Region",
        "section",
        "row_path",
        "Sales ($) / 2019",
        "Sales ($) / 2022",
        "Growth (%) / 2019-2022",
        AGGREGATE_COLUMN,
    ]
    assert list(df.index) == [1, 2, 4, 5, 6]  # the table's row ids: sections and notes dropped
    assert df["Sales ($) / 2019"].tolist() == [1000.0, 2000.0, 500.0, 700.0, 4200.0]
    assert math.isnan(df.loc[5, "Sales ($) / 2022"])  # ".." is missing, not text
    assert df[AGGREGATE_COLUMN].tolist() == [False, False, False, False, True]
    assert df["section"].tolist()[:3] == ["East", "East", "West"]
    # the flag is what keeps a sum honest
    assert df[~df[AGGREGATE_COLUMN]]["Sales ($) / 2019"].sum() == 4200.0
    text = describe_frame(frame)
    assert "'Sales ($) / 2019' (number)" in text and "exclude them before summing" in text


def test_additive_nesting_finds_indentation_hierarchy() -> None:
    rows = [
        ["Area", "Cases", "Rate (%)"],
        ["Canada", "1,000", "10.0"],
        ["Ontario", "600", "12.0"],
        ["Quebec", "400", "8.0"],
        ["Other", "50", "1"],
        ["More", "30", "2"],
        ["Sum of others", "80", "3"],
    ]
    graph = build_meta_graph(Table.from_rows(rows))
    assert graph.row_path[1] == ("Canada", "Ontario")
    assert graph.row_path[2] == ("Canada", "Quebec")
    assert graph.row_path[3] == ("Other",)
    assert {0, 5} <= graph.layout.additive_rows  # a parent and a trailing total
    frame = build_frame(graph)
    assert frame.df[AGGREGATE_COLUMN].tolist() == [True, False, False, False, False, True]


def test_additive_nesting_is_innermost_first() -> None:
    numbers = {i: row_numbers([v], [0]) for i, v in enumerate(["10", "6", "4", "2", "4"])}
    # 10 = 6 + 4 where 6 = 2 + 4 must be folded first
    numbers = {0: row_numbers(["10"], [0]), 1: row_numbers(["6"], [0])}
    numbers.update({2: row_numbers(["2"], [0]), 3: row_numbers(["4"], [0])})
    numbers[4] = row_numbers(["4"], [0])
    assert nest([0, 1, 2, 3, 4], numbers) == ({2: 1, 3: 1, 1: 0, 4: 0}, {0, 1})
    assert trailing_totals([2, 3, 1], numbers) == {1}
    # a grand total over subtotals only stays their sibling (still an aggregation row)
    values = ["10", "6", "2", "4", "4", "1", "3"]
    numbers = {i: row_numbers([v], [0]) for i, v in enumerate(values)}
    assert nest(list(range(7)), numbers) == ({2: 1, 3: 1, 5: 4, 6: 4}, {0, 1, 4})


def hitab_paths(raw: dict[str, Any], key: str, root: str) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    stack = [(child, ()) for child in raw[root]["children"]]
    while stack:
        node, prefix = stack.pop()
        path = (*prefix, raw["texts"][node["row_index"]][node["column_index"]])
        if node["children"]:
            stack.extend((child, path) for child in node["children"])
        else:
            out[node[key]] = path
    return out


def test_hitab_fixture_paths_agree_with_header_trees() -> None:
    path = HITAB_100 / "100.json"
    raw = json.loads(path.read_text())
    graph = build_meta_graph(read_tables(path)[0])
    head = graph.n_header_rows
    rows = hitab_paths(raw, "row_index", "left_root")
    cols = hitab_paths(raw, "column_index", "top_root")
    assert rows and cols
    for r, gold in rows.items():
        assert graph.row_path[r - head] == gold
    for c, gold in cols.items():
        assert graph.col_path[c] == gold


def test_header_row_with_a_year_in_the_stub_is_body() -> None:
    table = Table.from_rows(
        [["Season", "League"], ["", "Points"], ["1971-72", "none"], ["1972-73", "12"]],
        n_header_rows=3,
    )
    graph = build_meta_graph(table)
    assert graph.n_header_rows == 2
    assert graph.row_path == {0: ("1971-72",), 1: ("1972-73",)}
    assert list(build_frame(graph).df.index) == [-1, 0]


@pytest.mark.parametrize(
    ("rows", "columns", "frame_rows", "first_triple"),
    [
        ([["a"]], ["a"], [], "(table, has_column_header, a)"),
        ([["a", "b"]], ["a", "b"], [], "(table, has_column_header, a)"),
        ([["a", "b"], ["", ""]], ["a", "b"], [], "(table, has_column_header, a)"),
        ([["x", "1"], ["y", "2"]], ["x", "1"], [["y", 2.0, False]],
         "(table, has_row_dimension, x)"),
    ],
)  # fmt: skip
def test_degenerate_tables_give_a_frame_and_triples(
    rows: list[list[str]], columns: list[str], frame_rows: list[list[Any]], first_triple: str
) -> None:
    """A header-only, an empty-row and a one-row table: the header becomes the columns, the
    frame holds only real data rows (an empty row is no data), triples name the headers."""
    graph = build_meta_graph(Table.from_rows(rows))
    frame = build_frame(graph).df
    assert list(frame.columns) == [*columns, "_aggregate"]
    assert frame.values.tolist() == frame_rows
    assert triples(graph)[0] == first_triple
