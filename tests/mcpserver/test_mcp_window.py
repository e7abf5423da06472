"""`table_window`: rows and columns picked, header levels and merges kept, size budget held."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.mcpserver.window import WindowError, table_window
from tablequest.table import Table, read_tables

LAKES = """<table><caption>Lakes</caption><thead>
<tr><th rowspan="2">Lake</th><th colspan="2">Size</th></tr>
<tr><th>Area</th><th>Depth</th></tr></thead><tbody>
<tr><td>Mirrow</td><td>412</td><td>38</td></tr>
<tr><td>Tarnel</td><td>95</td><td>12</td></tr>
<tr><td>Quillsee</td><td>230</td><td>61</td></tr>
</tbody></table>"""


@pytest.fixture
def lakes(tmp_path: Path) -> Table:
    path = tmp_path / "lakes.html"
    path.write_text(LAKES, encoding="utf-8")
    return read_tables(path)[0]


def _wide(n_rows: int, cell: str) -> Table:
    grid = [("a", "b")] + [(str(i), cell) for i in range(n_rows)]
    return Table(cells=tuple(grid), n_header_rows=1)


def test_columns_by_name_and_id_keep_header_levels(lakes: Table) -> None:
    window = table_window(lakes, "t1", columns=["Lake", 2], fmt="json")
    data = window.data
    assert data["col_ids"] == [0, 2]
    assert data["header_paths"] == [["Lake"], ["Size", "Depth"]]
    assert data["rows"] == [["Mirrow", "38"], ["Tarnel", "12"], ["Quillsee", "61"]]
    assert data["n_cols"] == 3 and data["next_offset"] is None


def test_merges_of_the_window_come_back(lakes: Table) -> None:
    merges = table_window(lakes, "t1").data["merges"]  # markdown: in the structured part
    assert merges == table_window(lakes, "t1", fmt="json").data["merges"]
    assert {"top": 0, "left": 1, "bottom": 0, "right": 2} in merges
    assert {"top": 0, "left": 0, "bottom": 1, "right": 0} in merges


def test_explicit_rows_and_unknown_ids(lakes: Table) -> None:
    window = table_window(lakes, "t1", rows=[2, 0])
    assert window.data["row_ids"] == [0, 2] and window.data["next_offset"] is None
    assert "| Quillsee | 230 | 61 |" in window.text and "Tarnel" not in window.text
    with pytest.raises(WindowError, match=r"no body row 7 .* 0\.\.2"):
        table_window(lakes, "t1", rows=[7])
    with pytest.raises(WindowError, match="no column 'Width'"):
        table_window(lakes, "t1", columns=["Width"])


def test_paging_walks_every_row_once() -> None:
    table = _wide(25, "x")
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        window = table_window(table, "t", offset=offset, limit=10)
        seen += window.data["row_ids"]
        offset = window.data["next_offset"]
    assert seen == list(range(25))


def test_size_budget_cuts_rows_and_says_so() -> None:
    table = _wide(100, "y" * 200)
    window = table_window(table, "t", limit=100, max_chars=2000)
    assert len(window.text) <= 2000
    assert window.data["cut_by_size"] is True
    kept = len(window.data["row_ids"])
    assert 0 < kept < 100 and window.data["next_offset"] == kept
    huge = table_window(_wide(3, "z" * 5000), "t", max_chars=1000)
    assert huge.data["row_ids"] == [0]  # one row at least, so paging moves on


def test_markdown_names_the_row_ids_of_a_partial_window(lakes: Table) -> None:
    """The model reads the text: a page says which row ids it shows and where the next starts."""
    assert "body rows" not in table_window(lakes, "t1").text  # the whole table: no note
    page = table_window(_wide(25, "x"), "t", offset=10, limit=10).text
    assert page.endswith("\n\n_10 of 25 body rows, row ids 10..19; next page: offset 20._")
    picked = table_window(lakes, "t1", rows=[2, 0]).text
    assert picked.endswith("_2 of 3 body rows, row ids 0, 2._")
    past = table_window(lakes, "t1", offset=9).text
    assert "No body rows in this window: the table has 3 (row ids 0..2)" in past
    cut = table_window(_wide(100, "y" * 200), "t", limit=100, max_chars=2000)
    assert len(cut.text) <= 2000 and cut.data["cut_by_size"] is True
    kept = len(cut.data["row_ids"])
    assert cut.text.endswith(f"row ids 0..{kept - 1}; next page: offset {kept}._")
