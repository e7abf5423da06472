"""Readers say what they repaired: each repair is a warning next to the tables (issue 12)."""

from __future__ import annotations

import pytest

from tablequest.table import Table, read_tables, read_tables_report, serialize
from tablequest.table.readers.html import parse_html

NESTED = (
    b"<table><tr><td><table><tr><th>a</th><th>b</th></tr>"
    b"<tr><td>1</td><td>2</td></tr></table></td></tr></table>"
)


def test_unterminated_quote_is_read_as_text_and_reported() -> None:
    report = read_tables_report("q.csv", data=b'a,b\n1,"2\n3,4\n5,6\n7,8\n')
    (table,) = report.tables
    # the open quote no longer swallows the rest of the file into one cell
    assert table.body == (("1", '"2'), ("3", "4"), ("5", "6"), ("7", "8"))
    (warning,) = report.warnings
    assert "broken quoting (line 2" in warning and "plain characters" in warning


def test_lenient_quote_recovery_is_reported() -> None:
    report = read_tables_report("q.csv", data=b'a,b\n5" pipe,x\n"ok" tail,y\n')
    assert report.tables[0].body[1][1] == "y"
    (warning,) = report.warnings
    assert "broken quoting (line 3" in warning and "read leniently" in warning


def test_removed_nul_bytes_are_counted() -> None:
    report = read_tables_report("n.csv", data=b"a,b\n1\x00,2\n3,\x004\n")
    assert report.tables[0].body == (("1", "2"), ("3", "4"))
    assert report.warnings == ["2 NUL bytes removed"]
    utf16 = "a,b\n1,2\n".encode("utf-16-le")  # NULs that are part of the encoding
    assert read_tables_report("u.csv", data=utf16).warnings == []


def test_header_only_file_is_a_table_without_rows_and_says_so() -> None:
    report = read_tables_report("h.csv", data=b"a,b\n")
    assert report.tables[0].n_rows == 0
    assert report.warnings == ["no data rows (only 1 header row(s))"]


def test_nested_table_flattened_into_a_cell_is_reported() -> None:
    report = read_tables_report("n.html", data=NESTED)
    assert report.tables[0].n_rows == 0
    assert len(report.warnings) == 2
    assert "nested in 1 cell were kept as cell text" in report.warnings[0]
    assert "no data rows" in report.warnings[1]
    seen: list[str] = []
    parse_html(NESTED.decode(), nested=True, warn=seen.append)
    assert seen == []  # read as tables of their own: nothing was flattened


def test_empty_table_of_many_is_named() -> None:
    data = (
        b"<table><tr><th>x</th></tr><tr><td>1</td></tr></table><table><tr><th>y</th></tr></table>"
    )
    report = read_tables_report("two.html", data=data)
    assert report.warnings == ["table 2: no data rows (only 1 header row(s))"]


def test_warnings_of_a_reader_that_failed_are_not_kept() -> None:
    # sniffed as JSON, whose reader removes the NUL and then fails; the .csv reader reads it
    data = b'{"a": 1,b\n' + b"2,3\n" * 400 + b"4,\x005\n"
    report = read_tables_report("odd.csv", data=data)
    assert report.tables[0].cells[0] == ('{"a": 1', "b")
    assert report.tables[0].body[-1] == ("4", "5")
    assert report.warnings == ["1 NUL byte removed"]  # once, not once per reader tried


@pytest.mark.parametrize("fmt", ["csv", "tsv", "markdown", "html", "json"])
def test_clean_files_have_no_warnings(fmt: str) -> None:
    table = Table.from_rows([["city", "pop"], ["Oslo", "709,037"], ["Lima", '"10" m']])
    data = serialize(table, fmt).encode()  # type: ignore[arg-type]
    report = read_tables_report(f"t.{'md' if fmt == 'markdown' else fmt}", data=data)
    assert report.warnings == []
    assert [t.body for t in report.tables] == [t.body for t in read_tables("x", data=data)]


def test_mixed_utf8_and_cp1252_lines_are_each_decoded_and_named() -> None:
    data = (
        "Stadt,Einwohner\nZürich,421878\n".encode()
        + "Genève,203856\n".encode("cp1252")
        + "Köln,1084831\n".encode()
        + "Besançon,117912\n".encode("cp1252")
    )
    report = read_tables_report("staedte.csv", data=data)
    (table,) = report.tables
    assert [r[0] for r in table.body] == ["Zürich", "Genève", "Köln", "Besançon"]
    (warning,) = report.warnings
    assert "mixed encodings" in warning and "line(s) 3, 5" in warning
    only_cp1252 = read_tables_report("alt.csv", data="a,b\nGenève,1\n".encode("cp1252"))
    assert only_cp1252.tables[0].body == (("Genève", "1"),) and only_cp1252.warnings == []
