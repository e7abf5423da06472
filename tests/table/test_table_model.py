"""Table model: shape checks, header paths, sub_table, transpose, columns, hash, DataFrame."""

from __future__ import annotations

import pytest

from tablequest.table import HEADER_SEP, Merge, Source, Table
from tablequest.table.model import cell_text, unique_names


def two_level() -> Table:
    return Table.from_rows(
        [
            ["Region", "Sales", "Sales", "Staff"],
            ["Region", "2022", "2023", "Staff"],
            ["North", "10", "12", "5"],
            ["South", "7", "9", "4"],
            ["East", "3", "8", "2"],
        ],
        n_header_rows=2,
        n_header_cols=1,
        merges=[Merge(0, 0, 1, 0), Merge(0, 1, 0, 2), Merge(0, 3, 1, 3)],
        title="Sales",
    )


def test_from_rows_pads_ragged_rows_and_renders_values() -> None:
    t = Table.from_rows([["a", "b", "c"], [1, 2.0], [None, float("nan"), 2.5, "extra"]])
    assert t.cells == (
        ("a", "b", "c", ""),
        ("1", "2", "", ""),
        ("", "", "2.5", "extra"),
    )
    assert t.n_rows == 2 and t.n_cols == 4


def test_rectangularity_and_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="rectangular"):
        Table(cells=(("a", "b"), ("c",)))
    with pytest.raises(ValueError, match="n_header_rows"):
        Table(cells=(("a",),), n_header_rows=2)
    with pytest.raises(ValueError, match="n_header_cols"):
        Table(cells=(("a",),), n_header_cols=2)
    with pytest.raises(ValueError, match="row_ids"):
        Table(cells=(("a",), ("b",)), row_ids=(1, 2))
    with pytest.raises(ValueError, match="col_ids"):
        Table(cells=(("a",), ("b",)), col_ids=(1, 2))


def test_header_paths_and_flat_columns() -> None:
    t = two_level()
    assert t.header_path(0) == ("Region",)
    assert t.header_path(2) == ("Sales", "2023")
    assert t.columns == ("Region", f"Sales{HEADER_SEP}2022", "Sales / 2023", "Staff")
    assert t.row_header_path(1) == ("South",)


def test_columns_are_unique_and_never_empty() -> None:
    t = Table.from_rows([["a", "a", "", "  b  c ", "a"], [1, 2, 3, 4, 5]])
    assert t.columns == ("a", "a_2", "column_3", "b c", "a_3")
    assert t.header_rows[0] == ("a", "a", "", "  b  c ", "a")  # raw cells kept
    assert unique_names(["x", "x_2", "x"]) == ("x", "x_2", "x_3")


def test_sub_table_keeps_ids_header_paths_and_merges() -> None:
    t = two_level()
    sub = t.sub_table(rows=[2, 0], cols=[0, 2])
    assert sub.row_ids == (0, 2)
    assert sub.col_ids == (0, 2)
    assert sub.columns == ("Region", "Sales / 2023")
    assert sub.body == (("North", "12"), ("East", "8"))
    assert sub.n_header_cols == 1
    assert Merge(0, 0, 1, 0) in sub.merges
    assert sub.cell(2, 2) == "8"
    again = sub.sub_table(rows=[2])
    assert again.row_ids == (2,) and again.body == (("East", "8"),)


def test_sub_table_unknown_ids_are_named() -> None:
    with pytest.raises(KeyError, match=r"unknown row ids \[7\]"):
        two_level().sub_table(rows=[0, 7])
    with pytest.raises(KeyError, match="unknown column ids"):
        two_level().sub_table(cols=[9])


def test_transpose_swaps_axes_and_merges() -> None:
    t = two_level()
    tt = t.transpose()
    assert tt.n_header_rows == 1 and tt.n_header_cols == 2
    assert tt.cells[0] == ("Region", "Region", "North", "South", "East")
    assert Merge(0, 0, 0, 1) in tt.merges
    assert tt.transpose().cells == t.cells
    assert Table(cells=(), n_header_rows=0).transpose().cells == ()


def test_content_hash_is_stable_and_ignores_source() -> None:
    a = two_level()
    b = Table.from_rows(
        [list(r) for r in a.cells],
        n_header_rows=2,
        n_header_cols=1,
        merges=a.merges,
        title="Sales",
        source=Source(path="elsewhere.csv", format="csv"),
    )
    assert a.content_hash == b.content_hash
    assert len(a.content_hash) == 64
    c = Table.from_rows([list(r) for r in a.cells], n_header_rows=2, n_header_cols=1)
    assert c.content_hash != a.content_hash
    # A fixed table hashes to a fixed value across runs and machines.
    fixed = Table.from_rows([["a", "b"], ["1", "2"]])
    assert fixed.content_hash == "00b92fc95ddfb197d444caa1123adb71770f276e3b285f8c3ae24681ee218fd1"
    assert fixed.content_hash == Table.from_rows([["a", "b"], [1, 2]]).content_hash


def test_to_dataframe_uses_flat_headers_and_row_ids() -> None:
    t = two_level().sub_table(rows=[1, 2])
    df = t.to_dataframe()
    assert list(df.columns) == ["Region", "Sales / 2022", "Sales / 2023", "Staff"]
    assert list(df.index) == [1, 2]
    assert df.index.name == "row_id"
    assert df.loc[2, "Sales / 2023"] == 8  # typed: a column of whole numbers is int64
    assert t.to_dataframe(typed=False).loc[2, "Sales / 2023"] == "8"
    empty = Table.from_rows([["a", "a"]]).to_dataframe()
    assert list(empty.columns) == ["a", "a_2"] and len(empty) == 0


def test_cell_text_rendering() -> None:
    assert cell_text(None) == ""
    assert cell_text(3.0) == "3"
    assert cell_text(2.5) == "2.5"
    assert cell_text(1e20) == "1e+20"
    assert cell_text(b"caf\xc3\xa9") == "café"
    assert cell_text(7) == "7"


def test_merge_contains() -> None:
    m = Merge(1, 1, 2, 3)
    assert m.contains(2, 3) and not m.contains(0, 1) and not m.contains(1, 4)
