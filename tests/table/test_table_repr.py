"""Issue 39, Python: `repr(Table)` is bounded (shape, title, a few rows; at most 10 KB for
any table) and search hits have a rich display in a notebook."""

from __future__ import annotations

from pathlib import Path

import tablequest as tq
from tablequest.table import Source, Table


def test_repr_of_a_huge_table_is_shape_title_and_a_few_rows() -> None:
    rows = [["id", "name", *(f"c{i}" for i in range(48))]]
    rows += [[str(i), f"row {i}", *(["x"] * 48)] for i in range(100_000)]
    table = Table.from_rows(rows, title="Big one", source=Source("/data/big.csv", "csv"))
    text = repr(table)
    assert len(text.encode()) <= 10_000
    first = text.splitlines()[0]
    assert first == "<Table 'Big one' 100000 rows x 50 cols, csv /data/big.csv>"
    assert "'row 0'" in text and "'row 4'" in text and "'row 5'" not in text
    assert "99995 more rows, 38 more cols" in text


def test_repr_cuts_a_huge_cell_title_and_source() -> None:
    huge = "word " * 400_000
    table = Table.from_rows([[huge, "b"], ["v", huge]], title=huge, source=Source(huge, "csv"))
    text = repr(table)
    assert len(text.encode()) <= 10_000 and "…" in text
    assert text.startswith("<Table 'word word") and "1 rows x 2 cols" in text


def test_search_hits_show_as_a_table_in_a_notebook(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "rivers.csv").write_text("river,length km\nVarna,120\nRhine,1230\n")
    hits = tq.search("length of the Varna", data)
    assert hits and hits[0].table_id
    shown = hits._repr_markdown_()
    assert "| # | table id | score | source | matched rows |" in shown
    assert hits[0].table_id in shown and "rivers.csv" in shown
