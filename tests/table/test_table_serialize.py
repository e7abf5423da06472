"""Serializers: exact text for each format, escapes, multi-level headers, sub-table ids."""

from __future__ import annotations

import json

import pytest

from tablequest.table import Merge, Table, read_tables, render, serialize
from tablequest.table.serialize import row_line


def small() -> Table:
    return Table.from_rows(
        [["City", "Note"], ["Oslo", "a|b"], ["Rome", 'say "hi", <now>']], title="Cities"
    )


def grouped() -> Table:
    return Table.from_rows(
        [
            ["Region", "Sales", "Sales"],
            ["Region", "2022", "2023"],
            ["North", "10", "12"],
            ["North", "7", "9"],
        ],
        n_header_rows=2,
        n_header_cols=1,
        merges=[Merge(0, 0, 1, 0), Merge(0, 1, 0, 2), Merge(2, 0, 3, 0)],
    )


def test_markdown() -> None:
    assert serialize(small(), "markdown") == (
        '| City | Note |\n| --- | --- |\n| Oslo | a\\|b |\n| Rome | say "hi", <now> |'
    )
    assert serialize(grouped(), "markdown").splitlines()[0] == (
        "| Region | Sales / 2022 | Sales / 2023 |"
    )
    assert serialize(Table.from_rows([["a"], ["x\ny"]]), "markdown").endswith("| x<br>y |")


def test_csv_and_tsv() -> None:
    assert serialize(small(), "csv") == 'City,Note\nOslo,a|b\nRome,"say ""hi"", <now>"'
    assert serialize(small(), "tsv") == 'City\tNote\nOslo\ta|b\nRome\t"say ""hi"", <now>"'
    assert serialize(grouped(), "csv").splitlines()[0] == "Region,Sales / 2022,Sales / 2023"


def test_html_with_spans_and_caption() -> None:
    assert serialize(grouped(), "html") == (
        "<table>\n"
        "<thead>\n"
        '<tr><th rowspan="2">Region</th><th colspan="2">Sales</th></tr>\n'
        "<tr><th>2022</th><th>2023</th></tr>\n"
        "</thead>\n"
        "<tbody>\n"
        '<tr><th rowspan="2">North</th><td>10</td><td>12</td></tr>\n'
        "<tr><td>7</td><td>9</td></tr>\n"
        "</tbody>\n"
        "</table>"
    )
    html = serialize(small(), "html")
    assert "<caption>Cities</caption>" in html
    assert '<td>say "hi", &lt;now&gt;</td>' in html


def test_html_merge_crossing_header_is_cut_at_the_boundary() -> None:
    t = Table.from_rows([["A", "B"], ["A", "1"]], merges=[Merge(0, 0, 1, 0)])
    html = serialize(t, "html")
    assert "<th>A</th>" in html and "<td>A</td>" in html and "rowspan" not in html


def test_json_is_valid_and_complete() -> None:
    text = serialize(grouped(), "json")
    data = json.loads(text)
    assert data["header"] == [["Region", "Sales", "Sales"], ["Region", "2022", "2023"]]
    assert data["rows"] == [["North", "10", "12"], ["North", "7", "9"]]
    assert data["merges"] == [[0, 0, 1, 0], [0, 1, 0, 2], [2, 0, 3, 0]]
    assert data["n_header_cols"] == 1 and data["title"] is None
    assert "row_ids" not in data
    assert json.loads(serialize(Table.from_rows([["a"]]), "json"))["rows"] == []


def test_linearized_uses_row_ids() -> None:
    t = Table.from_rows([["a", "b"], ["1", "x\ny"], ["2", "z"], ["3", "w"]], title="T")
    assert serialize(t.sub_table(rows=[2, 0]), "linearized") == (
        "[TITLE] T\n[HEADER] a | b\n[ROW 0] 1 | x y\n[ROW 2] 3 | w"
    )
    assert serialize(grouped(), "linearized").splitlines()[0] == (
        "[HEADER] Region | Sales / 2022 | Sales / 2023"
    )


def test_row_ends_point_at_row_lines() -> None:
    for fmt in ("markdown", "csv", "tsv", "html", "json", "linearized"):
        r = render(grouped(), fmt)  # type: ignore[arg-type]
        text = r.text
        for line, end in zip(r.rows, r.row_ends(), strict=True):
            assert text[end - len(line) : end] == line


def test_row_line_standalone() -> None:
    t = grouped()
    assert row_line(t, 1, "html") == "<tr><th>North</th><td>7</td><td>9</td></tr>"
    assert row_line(t, 1, "markdown") == "| North | 7 | 9 |"
    assert row_line(t, 1, "csv") == "North,7,9"
    assert row_line(t, 1, "tsv") == "North\t7\t9"
    assert row_line(t, 1, "json") == '["North", "7", "9"]'
    assert row_line(t, 1, "linearized") == "North | 7 | 9"
    with pytest.raises(ValueError, match="unknown format"):
        row_line(t, 0, "xml")  # type: ignore[arg-type]


def test_unknown_format_and_empty_table() -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        serialize(small(), "xml")  # type: ignore[arg-type]
    assert serialize(Table(cells=(), n_header_rows=0), "markdown") == ""


def test_header_less_table_gets_generated_names() -> None:
    t = Table.from_rows([["1", "2"]], n_header_rows=0)
    assert serialize(t, "csv") == "column_1,column_2\n1,2"


def test_markdown_reads_back_what_it_wrote() -> None:
    (back,) = read_tables("x.md", data=serialize(small(), "markdown").encode())
    assert back.cells == small().cells
