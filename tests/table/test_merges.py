"""Merges are cleaned when a Table is built (table/merges.py): duplicates, overlaps, cells
outside the grid and single cells, with the repair counted and reported by the JSON reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.table import Merge, Table, read_tables_report
from tablequest.table import merges as merges_module
from tablequest.table.merges import MergeRepair, normalize_merges, span_map


def grid(rows: int, cols: int) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(f"{r}.{c}" for c in range(cols)) for r in range(rows))


def test_exact_duplicates_keep_the_first_copy() -> None:
    t = Table(cells=grid(4, 3), merges=(Merge(1, 0, 2, 0),) * 3 + (Merge(0, 0, 0, 2),))
    assert t.merges == (Merge(1, 0, 2, 0), Merge(0, 0, 0, 2))
    assert t.merge_repair == MergeRepair(duplicate=2)
    assert t.merge_repair.describe() == "merged ranges repaired: 2 duplicates dropped"


def test_overlaps_keep_the_first_and_drop_what_meets_a_kept_one() -> None:
    a = Merge(0, 0, 1, 1)
    b = Merge(1, 1, 2, 2)  # shares (1, 1) with a: dropped
    c = Merge(2, 1, 2, 2)  # overlapped only b, which was dropped: kept
    d = Merge(0, 2, 1, 2)  # disjoint from a and c: kept
    t = Table(cells=grid(3, 3), merges=(a, b, c, d))
    assert t.merges == (a, c, d)
    assert t.merge_repair == MergeRepair(overlapping=1)


def test_outside_inverted_single_and_clipped() -> None:
    given_merges = (
        Merge(5, 0, 6, 1),  # below the 3-row grid: invalid
        Merge(0, -3, 0, -1),  # left of it: invalid
        Merge(2, 0, 1, 0),  # inverted: invalid
        Merge(1, 1, 1, 1),  # one cell: single
        Merge(2, 2, 9, 9),  # clipped to (2, 2, 2, 2): one cell, single
        Merge(1, 1, 7, 1),  # clipped to (1, 1, 2, 1): kept
    )
    t = Table(cells=grid(3, 3), merges=given_merges)
    assert t.merges == (Merge(1, 1, 2, 1),)
    assert t.merge_repair == MergeRepair(invalid=3, single_cell=2, clipped=1)


def test_clean_merges_are_kept_as_given_with_the_same_hash() -> None:
    clean = (Merge(2, 0, 3, 0), Merge(0, 0, 0, 1))  # not sorted: order is content
    t = Table(cells=grid(4, 2), merges=clean)
    assert t.merges == clean
    assert not t.merge_repair
    again = Table.from_dict(t.to_dict())
    assert again.merges == clean and again.content_hash == t.content_hash


def test_duplicates_of_a_stored_table_are_cleaned_on_load() -> None:
    data = Table(cells=grid(5, 3)).to_dict()
    data["merges"] = [[1, 0, 3, 2]] * 1000 + [[0, 0, 9, 9]]
    t = Table.from_dict(data)
    assert t.merges == (Merge(1, 0, 3, 2),)
    assert t.merge_repair == MergeRepair(duplicate=999, clipped=1, overlapping=1)
    # The repair is not content: a clean copy equals it and is not re-counted.
    assert Table.from_dict(t.to_dict()) == t
    assert not Table.from_dict(t.to_dict()).merge_repair


def test_the_issue_json_with_20000_copies_reads_as_one_merge(tmp_path: Path) -> None:
    rows = [[f"r{i}c{j}" for j in range(50)] for i in range(300)]
    obj = {
        "header": [f"h{j}" for j in range(50)],
        "rows": rows,
        "merges": [[1, 0, 200, 49]] * 20000,
    }
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    report = read_tables_report(path)
    (table,) = report.tables
    assert table.merges == (Merge(1, 0, 200, 49),)
    assert report.warnings == ["merged ranges repaired: 19999 duplicates dropped"]


def test_overlap_work_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # Grid 2x4 = 8 cells; work 1 per cell and no floor = 8 cells of probes. The full-grid
    # merge (8 cells) is probed first and kept; the next clashing ones find the budget spent.
    monkeypatch.setattr(merges_module, "OVERLAP_WORK", 1)
    monkeypatch.setattr(merges_module, "OVERLAP_FLOOR", 0)
    given_merges = (Merge(0, 0, 1, 3), Merge(0, 0, 0, 1), Merge(1, 2, 1, 3))
    kept, repair = normalize_merges(given_merges, 2, 4)
    assert kept == (Merge(0, 0, 1, 3),)
    assert repair == MergeRepair(over_limit=2)


def test_many_distinct_overlapping_merges_cost_little() -> None:
    # 20,000 200x50 merges (200 distinct) sliding down a 400x60 grid: every later one
    # shares a row and column with the first.
    given_merges = [Merge(i % 200, i % 10, i % 200 + 199, i % 10 + 49) for i in range(20000)]
    kept, repair = normalize_merges(given_merges, 400, 60)
    assert kept == (Merge(0, 0, 199, 49),)
    assert repair == MergeRepair(duplicate=20000 - 200, overlapping=199)


rects = st.tuples(
    st.integers(-2, 7), st.integers(-2, 7), st.integers(-2, 7), st.integers(-2, 7)
).map(lambda v: Merge(*v))


def naive(merges: list[Merge], height: int, width: int) -> tuple[Merge, ...]:
    """The module docstring's rule, cell by cell."""
    kept: list[Merge] = []
    taken: set[tuple[int, int]] = set()
    for m in merges:
        if m.top > m.bottom or m.left > m.right:
            continue
        box = Merge(
            max(m.top, 0), max(m.left, 0), min(m.bottom, height - 1), min(m.right, width - 1)
        )
        cells = {
            (r, c) for r in range(box.top, box.bottom + 1) for c in range(box.left, box.right + 1)
        }
        if len(cells) < 2 or box in kept or cells & taken:
            continue
        kept.append(box)
        taken |= cells
    return tuple(kept)


@settings(max_examples=300, deadline=None)
@given(st.lists(rects, max_size=25), st.integers(1, 6), st.integers(1, 6))
def test_normalisation_matches_the_cell_by_cell_rule(
    merges: list[Merge], height: int, width: int
) -> None:
    kept, repair = normalize_merges(merges, height, width)
    assert repair.over_limit == 0  # at most 25 probes of at most 36 cells: within the floor
    assert kept == naive(merges, height, width)
    assert len(merges) - repair.dropped == len(kept)
    # Disjoint, so never more merges than half the cells (the implied cap).
    assert len(kept) <= height * width // 2


def naive_cut(table: Table, rows: list[int], cols: list[int]) -> list[Merge]:
    """What sub_table did before: cut each merge to the kept rows and columns."""
    row_map = {old: new for new, old in enumerate(rows)}
    col_map = {old: new for new, old in enumerate(cols)}
    out = []
    for m in table.merges:
        rs = [row_map[r] for r in range(m.top, m.bottom + 1) if r in row_map]
        cs = [col_map[c] for c in range(m.left, m.right + 1) if c in col_map]
        if rs and cs and (len(rs) > 1 or len(cs) > 1):
            out.append(Merge(min(rs), min(cs), max(rs), max(cs)))
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(rects, max_size=20),
    st.sets(st.integers(0, 5), min_size=1),
    st.sets(st.integers(0, 5), min_size=1),
)
def test_sub_table_cuts_merges_as_cell_by_cell(
    merges: list[Merge], body_rows: set[int], cols: set[int]
) -> None:
    table = Table(cells=grid(7, 6), merges=tuple(merges))
    part = table.sub_table(rows=sorted(body_rows), cols=sorted(cols))
    kept_rows = [0] + [1 + r for r in sorted(body_rows)]
    assert list(part.merges) == naive_cut(table, kept_rows, sorted(cols))


def test_merges_meeting_a_window_of_rows() -> None:
    ms = (Merge(0, 0, 0, 1), Merge(1, 0, 3, 0), Merge(5, 1, 6, 1), Merge(8, 0, 8, 1))
    t = Table(cells=grid(10, 2), merges=ms)
    assert t.merges_meeting([(0, 0), (3, 5)]) == ms[:3]
    assert t.merges_meeting([(7, 7)]) == ()
    assert t.merges_meeting([(8, 100)]) == (ms[3],)


def test_span_map_cuts_at_the_header_boundary() -> None:
    starts, covered = span_map((Merge(0, 0, 2, 0), Merge(1, 1, 1, 2)), 1)
    # (0,0..2,0) crosses the boundary after row 0: the header part is one cell, no span.
    assert starts == {(1, 0): (2, 1), (1, 1): (1, 2)}
    assert covered == {(2, 0), (1, 2)}
