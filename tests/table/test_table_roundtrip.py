"""Round-trip properties: serialize → read_tables(data=...) → the same table.

Alphabet (documented choice): letters, digits, punctuation and symbols including the
characters each format must escape (`| , ; " ' < > & \\`), and single inner spaces. Left out,
because some format cannot tell them apart: leading/trailing or repeated whitespace, tabs and
line breaks (HTML collapses whitespace, Markdown strips cells), cells that look like a
Markdown separator (`---`, `:-:`), and the text `<br` (our Markdown line-break marker).
Delimited formats are tested with at least two columns (one column has no delimiter to sniff),
and without the tables whose first rows read as title lines or whose last rows read as footer
notes under the CSV reader's documented rule (`readers/_notes.py`): those are read as the
title and notes on purpose.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tablequest.table import Merge, Table, read_tables, serialize
from tablequest.table.readers._notes import split_title_and_notes
from tablequest.table.serialize import SerialFormat

_CHARS = st.characters(
    codec="utf-8",
    categories=("L", "N", "P", "S"),
    include_characters="|,;\"'<>&\\ ",
)
_SEPARATOR = re.compile(r":?-+:?")


def _ok(s: str) -> bool:
    return s == " ".join(s.split()) and not _SEPARATOR.fullmatch(s) and "<br" not in s.lower()


cells = st.text(_CHARS, max_size=12).filter(_ok)


@st.composite
def tables(draw: st.DrawFn, min_cols: int = 1) -> Table:
    n_cols = draw(st.integers(min_cols, 5))
    n_rows = draw(st.integers(0, 6))
    row = st.lists(cells, min_size=n_cols, max_size=n_cols)
    rows = draw(st.lists(row, min_size=n_rows + 1, max_size=n_rows + 1))
    # A table with no text at all is an empty file, not a table (documented reader choice).
    rows[0][0] = rows[0][0] or "h"
    return Table.from_rows(rows)


def _unframed(table: Table, delimiter: str) -> bool:
    framed = split_title_and_notes([list(r) for r in table.cells], delimiter)
    return framed.title is None and not framed.notes


def _round_trip(table: Table, fmt: SerialFormat, ext: str) -> Table:
    text = serialize(table, fmt)
    (back,) = read_tables(f"t.{ext}", data=text.encode("utf-8"), format=fmt)  # type: ignore[arg-type]
    return back


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tables(min_cols=2))
def test_csv_round_trip(table: Table) -> None:
    assume(_unframed(table, ","))
    back = _round_trip(table, "csv", "csv")
    assert back.cells == table.cells and back.n_header_rows == 1


@SETTINGS
@given(tables(min_cols=2))
def test_tsv_round_trip(table: Table) -> None:
    assume(_unframed(table, "\t"))
    back = _round_trip(table, "tsv", "tsv")
    assert back.cells == table.cells and back.n_header_rows == 1


@SETTINGS
@given(tables())
def test_markdown_round_trip(table: Table) -> None:
    back = _round_trip(table, "markdown", "md")
    assert back.cells == table.cells and back.n_header_rows == 1


@SETTINGS
@given(tables())
def test_html_round_trip(table: Table) -> None:
    back = _round_trip(table, "html", "html")
    assert back.cells == table.cells and back.n_header_rows == 1


@SETTINGS
@given(
    tables(),
    st.one_of(st.none(), cells.filter(bool)),
    st.lists(cells.filter(bool), max_size=2),
)
def test_json_round_trip(table: Table, title: str | None, notes: list[str]) -> None:
    table = Table.from_rows(table.cells, title=title, notes=notes)
    back = _round_trip(table, "json", "json")
    assert back.cells == table.cells and back.n_header_rows == 1
    assert back.notes == table.notes
    assert back.content_hash == table.content_hash
    assert Table.from_dict(table.to_dict()) == table


def test_structured_tables_round_trip_through_json_and_html() -> None:
    table = Table.from_rows(
        [
            ["Region", "Sales", "Sales"],
            ["Region", "2022", "2023"],
            ["North", "10", "12"],
            ["North", "7", "9"],
            ["South", "3", "8"],
        ],
        n_header_rows=2,
        n_header_cols=1,
        merges=[Merge(0, 0, 1, 0), Merge(0, 1, 0, 2), Merge(2, 0, 3, 0)],
        title="Sales & staff <2023>",
    )
    for fmt, ext in (("json", "json"), ("html", "html")):
        back = _round_trip(table, fmt, ext)  # type: ignore[arg-type]
        assert back.cells == table.cells
        assert (back.n_header_rows, back.n_header_cols) == (2, 1)
        assert set(back.merges) == set(table.merges)
        assert back.title == table.title
        assert back.content_hash == table.content_hash


def test_sub_table_ids_survive_json() -> None:
    table = Table.from_rows([["a", "b", "c"], ["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]])
    sub = table.sub_table(rows=[0, 2], cols=[1, 2])
    back = _round_trip(sub, "json", "json")
    assert back.row_ids == (0, 2) and back.col_ids == (1, 2)


def test_line_breaks_round_trip_where_the_format_has_them() -> None:
    table = Table.from_rows([["a", "b"], ["line 1\nline 2", "x"]])
    for fmt, ext in (("csv", "csv"), ("tsv", "tsv"), ("markdown", "md"), ("html", "html")):
        assert _round_trip(table, fmt, ext).cells == table.cells, fmt  # type: ignore[arg-type]
