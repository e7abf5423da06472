"""Reader details: format detection, Markdown, JSON shapes, HTML headers, xlsx heuristics."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import pytest
from openpyxl import Workbook

from tablequest.table import Merge, detect_format, read_tables, read_tables_report
from tablequest.table.readers import format_for_extension, registered_formats, sniff_format
from tablequest.table.readers._cells import looks_numeric, value_text
from tablequest.table.readers.xlsx import sheet_table

# -- detection -------------------------------------------------------------------------


def test_extensions_and_registry() -> None:
    assert format_for_extension("a/B.TSV") == "tsv"
    assert format_for_extension("x.table") == "markdown"
    assert format_for_extension("x.pq") == "parquet"
    assert format_for_extension("x.unknown") is None
    formats = registered_formats()
    assert set(formats) == {"csv", "tsv", "markdown", "html", "json", "xlsx", "parquet", "sqlite"}
    assert ".sqlite3" in formats["sqlite"]


@pytest.mark.parametrize(
    ("path", "head", "expected"),
    [
        ("a.csv", b"a,b\n1,2\n", "csv"),
        ("a.csv", b"PK\x03\x04rest", "xlsx"),
        ("a.xlsx", b"PK\x03\x04rest", "xlsx"),
        ("a.xlsx", b"a,b\n1,2\n", "csv"),
        ("a.xlsx", b"garbage", "xlsx"),
        ("a.db", b"SQLite format 3\x00", "sqlite"),
        ("a.bin", b"PAR1....", "parquet"),
        ("a.md", b"a,b\n1,2\n3,4\n", "csv"),
        ("a.json", b"x\ty\n1\t2\n", "tsv"),
        ("a.csv", b"a\tb\n1\t2\n", "csv"),
        ("a.tsv", b"a,b\n1,2\n", "tsv"),
        ("a.csv", b"  <!DOCTYPE html><html><table>", "html"),
        ("a.txt", b"| a | b |\n| 1 | 2 |\n", "markdown"),
        ("a.txt", b"\xef\xbb\xbf[1, 2]", "json"),
        ("a.txt", "a,b\n1,2\n".encode("utf-16"), "csv"),
        ("a.txt", b"\x00\x01\x02\x03" * 10, None),
        ("a.txt", b"%PDF-1.4", None),
        ("a.html", b"one line only", "html"),
    ],
)
def test_detect_format(path: str, head: bytes, expected: str | None) -> None:
    assert detect_format(path, head) == expected


def test_sniff_format_needs_structure() -> None:
    assert sniff_format(b"Hello there, friend.\n") is None
    assert sniff_format(b"one\ntwo\nthree\n") is None
    assert sniff_format(b"[x] todo\n") is None


# -- markdown --------------------------------------------------------------------------


def test_markdown_variants() -> None:
    text = (
        b"Intro text.\n\n"
        b"## First\n"
        b"a | b\n--- | :---:\n1 | 2\n\n"
        b"| c | d |\n|---|---|\n| x <br> y | \\| |\n"
    )
    first, second = read_tables("m.md", data=text)
    assert first.title == "First" and first.cells == (("a", "b"), ("1", "2"))
    assert second.title is None and second.body == (("x \n y", "|"),)
    assert (first.source.sheet, second.source.sheet) == ("table 1", "table 2")


def test_markdown_wtq_continuation_and_aligned_pipes() -> None:
    text = (
        "| Name  | Sign | Notes   |\n"
        "| bar   | |    | pipe    |\n"
        "| multi | x    | line one\n"
        "\n"
        "line two |\n"
        "| last  | y    | z       |\n"
    )
    (t,) = read_tables("w.table", data=text.encode())
    assert t.body == (
        ("bar", "|", "pipe"),
        ("multi", "x", "line one\n\nline two"),
        ("last", "y", "z"),
    )


# -- json ------------------------------------------------------------------------------


def js(value: object) -> bytes:
    return json.dumps(value).encode()


def test_json_shapes() -> None:
    (split,) = read_tables("s.json", data=js({"columns": ["a", "b"], "data": [[1, None]]}))
    assert split.cells == (("a", "b"), ("1", ""))
    (cols,) = read_tables("c.json", data=js({"a": [1, 2], "b": [True, 2.5]}))
    assert cols.cells == (("a", "b"), ("1", "true"), ("2", "2.5"))
    (rows,) = read_tables("r.json", data=js([["h1", "h2"], ["v", {"k": 1}]]))
    assert rows.body == (("v", '{"k": 1}'),)
    (wrapped,) = read_tables("w.json", data=js({"title": "T", "data": [{"x": 1}, {"y": 2}]}))
    assert wrapped.title == "T" and wrapped.cells == (("x", "y"), ("1", ""), ("", "2"))
    many = read_tables(
        "t.json",
        data=js(
            {"tables": [{"header": ["a"], "rows": [["1"]]}, {"columns": ["b"], "data": [[2]]}]}
        ),
    )
    assert [t.source.sheet for t in many] == ["table 1", "table 2"]
    listed = read_tables("l.json", data=js([{"header": ["a"], "rows": []}, {"texts": [["x"]]}]))
    assert len(listed) == 2
    lines = read_tables("t.jsonl", data=b'{"header": ["a"], "rows": [["1"]]}\n{"texts": [["b"]]}\n')
    assert len(lines) == 2


def test_json_header_rows_with_merges_dicts_and_bad_merges() -> None:
    data = {
        "header": [["A", "A"], ["x", "y"]],
        "rows": [["1", "2"]],
        "merges": [{"top": 0, "left": 0, "bottom": 0, "right": 1}, [5, 5, 6, 6]],
        "n_header_cols": 1,
    }
    (t,) = read_tables("h.json", data=js(data))
    assert t.n_header_rows == 2 and t.n_header_cols == 1 and t.merges == (Merge(0, 0, 0, 1),)
    with pytest.raises(Exception, match="a merge must be"):
        read_tables("bad.json", data=js({"header": ["a"], "rows": [], "merges": ["x"]}))


def test_hitab_shape_header_rows_from_tree_and_unit_rows() -> None:
    hitab = {
        "title": "career",
        "top_root": {
            "row_index": -1,
            "children": [{"row_index": 0, "children": [{"row_index": 1, "children": []}]}],
        },
        "texts": [
            ["year", "stats", ""],
            ["", "games", "goals"],
            ["", "number", ""],
            ["2013", "6", "1"],
        ],
        "merged_regions": [
            {"first_row": 0, "last_row": 2, "first_column": 0, "last_column": 0},
            {"first_row": 0, "last_row": 0, "first_column": 1, "last_column": 2},
            {"first_row": 9, "last_row": 9, "first_column": 0, "last_column": 0},
        ],
        "top_header_rows_num": 4,
        "left_header_columns_num": 1,
    }
    (t,) = read_tables("h.json", data=js(hitab))
    assert t.n_header_rows == 3  # tree depth 2, plus the text-only "number" row
    assert t.columns == ("year", "stats / games / number", "stats / goals")
    assert t.body == (("2013", "6", "1"),)
    assert len(t.merges) == 2 and t.title == "career"


def test_aitqa_shape() -> None:
    ait = {
        "column_header": [["Year"], ["Fuel", "Gallons"], ["Fuel", "Expense"]],
        "row_header": [["Mainline"], ["Regional", "Total"]],
        "data": [["2018", "4,137", "$9,307"], ["2017", "4,000", "$7,000"]],
        "id": "tab-0",
    }
    (t,) = read_tables("a.json", data=js(ait))
    assert t.n_header_rows == 2 and t.n_header_cols == 2
    assert t.columns[2:] == ("Year", "Fuel / Gallons", "Fuel / Expense")
    assert t.body[1][:2] == ("Regional", "Total") and t.body[0][:2] == ("Mainline", "")
    assert Merge(0, 3, 0, 4) in t.merges and Merge(0, 2, 1, 2) in t.merges


# -- html ------------------------------------------------------------------------------


def test_html_thead_td_headers_xml_declaration_and_banner_rows() -> None:
    page = (
        b'<?xml version="1.0" encoding="utf-8"?>\n'
        b"<table><thead><tr><td>k</td><td>v</td></tr></thead>"
        b"<tbody><tr><td>a</td><td>1</td></tr></tbody></table>"
    )
    (t,) = read_tables("x.html", data=page)
    assert t.n_header_rows == 1 and t.body == (("a", "1"),)
    banner = (
        b"<table><caption>Cap</caption><tr><th colspan='2'>Banner</th></tr>"
        b"<tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
    )
    (b,) = read_tables("b.html", data=banner)
    assert b.title == "Cap\nBanner" and b.cells[0] == ("k", "v") and b.merges == ()
    only_th = b"<table><tr><th>a</th></tr><tr><th>b</th></tr></table>"
    assert read_tables("t.html", data=only_th)[0].n_header_rows == 1
    no_header = b"<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
    assert read_tables("n.html", data=no_header)[0].columns == ("a", "b")


def test_html_tables_of_a_page_are_named_after_the_heading_above() -> None:
    row = b"<table><tr><th>k</th></tr><tr><td>1</td></tr></table>"
    page = (
        b"<h1>Energy</h1><h2>Fuel <small>prices</small></h2>" + row
        + b"<p>text</p><h3>Electricity</h3><div>" + row + b"</div>"
        + row  # no heading of its own: the one above named the table before it
        + b"<table><caption>Gas</caption><tr><th>k</th></tr><tr><td>1</td></tr></table>"
        + b"<h2>Electricity</h2>" + row
    )  # fmt: skip
    names = [t.source.sheet for t in read_tables("p.html", data=page)]
    assert names == ["Fuel prices", "Electricity", "table 3", "Gas", "Electricity (table 5)"]
    (single,) = read_tables("s.html", data=b"<h1>Only</h1>" + row)
    assert single.source.sheet is None and single.title is None


def test_html_block_elements_break_lines() -> None:
    page = (
        b"<table><tr><th>h</th></tr>"
        b"<tr><td><p>one</p><ul><li>two</li><li>three</li></ul></td></tr></table>"
    )
    assert read_tables("p.html", data=page)[0].body[0][0] == "one\ntwo\nthree"


# -- xlsx ------------------------------------------------------------------------------


def grid(rows: list[list[object]]) -> dict[tuple[int, int], object]:
    return {
        (r, c): v
        for r, row in enumerate(rows, start=1)
        for c, v in enumerate(row, start=1)
        if v is not None
    }


def test_xlsx_two_level_header_title_and_spacers() -> None:
    values = grid(
        [
            ["Annual report", None, None, None],
            [None, None, None, None],
            ["Region", None, "Sales", None, None],
            [None, None, 2022, 2023],
            ["North", None, 10, 12.5],
            ["South", None, 7, 0.1 + 0.2],
        ]
    )
    t = sheet_table(values, [(1, 1, 1, 4), (3, 3, 3, 4), (3, 1, 4, 1)], sheet="S")
    assert t is not None
    assert t.title == "Annual report"
    assert t.n_header_rows == 2
    assert t.columns == ("Region", "Sales / 2022", "Sales / 2023")  # spacer column B dropped
    assert t.body == (("North", "10", "12.5"), ("South", "7", "0.3"))
    assert Merge(0, 1, 0, 2) in t.merges and Merge(0, 0, 1, 0) in t.merges
    assert t.source.sheet == "S"


def test_xlsx_unmerged_two_level_and_header_columns() -> None:
    values = grid(
        [
            ["Group", "Item", "Cost", None],
            [None, None, "net", "gross"],
            ["Tools", "Saw", 10, 12],
            [None, "Drill", 30, 36],
            ["Paint", "Blue", 5, 6],
        ]
    )
    t = sheet_table(values, [(3, 1, 4, 1)])
    assert t is not None
    assert t.n_header_rows == 2 and t.n_header_cols == 1
    assert t.body[1][0] == "Tools"


def test_xlsx_row_label_merges_are_not_headers() -> None:
    rows: list[list[object]] = [["Parameter", None, "A7", "A9"]]
    rows += [[name, None, "x", "y"] for name in ("Body", "Type", "Sensor", "Mount")]
    boxes = [(r, 1, r, 2) for r in range(1, 6)]
    t = sheet_table(grid(rows), boxes)
    assert t is not None and t.n_header_rows == 1 and t.n_cols == 4


def test_xlsx_values_dates_and_empty_sheets() -> None:
    values = grid(
        [["when", "flag"], [dt.datetime(2024, 3, 1), True], [dt.datetime(2024, 3, 1, 9, 30), False]]
    )
    t = sheet_table(values, [])
    assert t is not None and t.body == (("2024-03-01", "true"), ("2024-03-01 09:30:00", "false"))
    assert sheet_table({}, []) is None
    assert sheet_table({(1, 1): "   "}, []) is None


def test_xlsx_file_with_formula_and_several_sheets() -> None:
    wb = Workbook()
    ws = wb.active
    ws.append(["a", "b", "sum"])
    ws.append([1, 2, "=A2+B2"])
    wb.create_sheet("Empty")
    other = wb.create_sheet("Other")
    other.append(["x"])
    other.append(["y"])
    buf = io.BytesIO()
    wb.save(buf)
    tables = read_tables("f.xlsx", data=buf.getvalue())
    assert [t.source.sheet for t in tables] == ["Sheet", "Other"]
    # openpyxl saves no value for a formula: its cell shows the formula, and says so
    assert tables[0].body == (("1", "2", "=A2+B2"),)
    assert tables[0].notes == (
        "1 formula cell(s) had no saved value (the workbook was saved without being "
        "calculated): they show their formula, e.g. '=A2+B2'",
    )
    report = read_tables_report("f.xlsx", data=buf.getvalue())
    assert report.warnings == [f"sheet 'Sheet': {tables[0].notes[0]}"]


def test_value_text_and_looks_numeric() -> None:
    assert value_text(None) == ""
    assert value_text(float("nan")) == ""
    assert value_text(float("inf")) == "inf"
    assert value_text(Decimal("1.50")) == "1.50"
    assert value_text(dt.date(2020, 1, 2)) == "2020-01-02"
    assert value_text(dt.time(9, 5)) == "09:05:00"
    assert value_text([1, "a"]) == '[1, "a"]'
    assert value_text(1e-7) == "1e-07"
    for s in ("1,094", "-3.5%", "$9,307", "(12)", "4.2e3", "52a", "x", "..."):
        assert looks_numeric(s), s
    for s in ("", "Total", "4th, Western", "USL A-League"):
        assert not looks_numeric(s), s
