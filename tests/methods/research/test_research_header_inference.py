"""DTR's own header regions (`research.header`): header rows and stub columns from the grid.

Each sheet is hand-written in the shape of a HiTab (StatCan, NSF, ToTTo) table read without
HiTab's layout annotation, and exercises one rule of the module docstring; see
benchmarks/dtr_header_paths.py (``--no-annotation``) for the measurement on HiTab.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tablequest.methods.research.header import extend_header, ordinal, stub_columns
from tablequest.methods.research.meta import MetaGraph, build_meta_graph
from tablequest.table import Merge, Table
from tablequest.table.readers.jsonfmt import parse_json_value


def _graph(rows: list[list[str]], merges: Sequence[Merge] = ()) -> MetaGraph:
    """The meta graph of a sheet read with one header row and no stub (no annotation)."""
    return build_meta_graph(Table.from_rows(rows, merges=merges))


def _hitab(annotation: bool) -> dict[str, Any]:
    regions = [(0, 0, 1, 2), (0, 0, 3, 4), (0, 2, 0, 0), (2, 2, 1, 4)]
    sheet: dict[str, Any] = {
        "title": "agri-food sub-groups",
        "texts": [
            ["sub-groups", "eastern ontario", "", "northern ontario", ""],
            ["", "french-language", "other", "french-language", "other"],
            ["", "percent", "", "", ""],
            ["food retail", "35.3", "31.3", "39.1", "37.3"],
            ["food service", "52.1", "60.6", "55.0", "58.1"],
        ],
        "merged_regions": [
            {"first_row": t, "last_row": b, "first_column": left, "last_column": right}
            for t, b, left, right in regions
        ],
    }
    if annotation:
        sheet.update(top_header_rows_num=3, left_header_columns_num=1)
    return sheet


def test_the_top_left_block_extends_the_header_to_what_the_annotation_says() -> None:
    bare = parse_json_value(_hitab(annotation=False))[0]
    assert (bare.n_header_rows, bare.n_header_cols) == (1, 0)
    graph = build_meta_graph(bare)
    annotated = build_meta_graph(parse_json_value(_hitab(annotation=True))[0])
    assert graph.n_header_rows == annotated.n_header_rows == 3
    assert graph.col_path == annotated.col_path
    assert graph.row_path == annotated.row_path
    assert graph.col_path[2] == ("eastern ontario", "other")
    assert graph.row_path[0] == ("percent", "food retail")
    assert extend_header(bare).row_ids == (2, 3)  # body rows keep their ids


def test_a_first_cell_with_a_label_of_its_own_starts_the_body() -> None:
    text_rows = [["Name", "Team", "Role"], ["Smith", "Reds", "pitcher"], ["Jones", "Blues", "c"]]
    assert extend_header(Table.from_rows(text_rows)).n_header_rows == 1
    years = [["Region", "2019", "2020"], ["North", "12", "13"], ["South", "8", "9"]]
    assert extend_header(Table.from_rows(years)).n_header_rows == 1


def test_whole_numbers_under_a_merged_label_are_column_labels() -> None:
    weeks = [
        ["contestant", "week", "week", "week"],
        ["contestant", "1", "2", "3"],
        ["ali", "8.12%", "1.40%", "2.83%"],
        ["roger", "5.51%", "0.87%", "2.65%"],
    ]
    graph = _graph(weeks, [Merge(0, 0, 1, 0), Merge(0, 1, 0, 3)])
    assert graph.n_header_rows == 2
    assert graph.col_path[2] == ("week", "2")
    shares = [
        ["", "men", "women"],
        ["", "percent", "percent"],
        ["", "10.7", "9.6"],
        ["total", "52.1", "47.9"],
    ]
    graph = _graph(shares, [Merge(0, 0, 2, 0), Merge(1, 1, 1, 2)])
    assert graph.n_header_rows == 2  # decimals that do not rise are data, not labels


def test_a_number_followed_by_a_word_is_a_label() -> None:
    rows = [
        ["age group", "exercised", "exercised", "exercised"],
        ["age group", "%", "95% ci", "95% ci"],
        ["men", "62.5", "58.7", "66.0"],
        ["women", "54.9", "51.5", "58.4"],
    ]
    graph = _graph(rows, [Merge(0, 0, 1, 0), Merge(0, 1, 0, 3), Merge(1, 2, 1, 3)])
    assert graph.col_path[2] == ("exercised", "95% ci")
    events = [
        ["athlete", "event", "final", "final"],
        ["athlete", "event", "time", "rank"],
        ["Smith", "800 m", "1:59.2", "4"],
        ["Jones", "1500 m", "3:50.1", "7"],
    ]
    merges = [Merge(0, 0, 1, 0), Merge(0, 1, 1, 1), Merge(0, 2, 0, 3)]
    graph = _graph(events, merges)
    assert graph.layout.stub_cols == (0, 1)
    assert graph.row_path[1] == ("Jones", "1500 m")


def test_a_few_number_like_labels_among_labels_stay_in_the_header() -> None:
    rows = [
        ["year", "team", "rushing", "rushing", "rushing", "2pt"],
        ["year", "team", "att", "yds", "avg", "2pt"],
        ["2008", "chicago", "316", "1,238", "3.9", "0"],
        ["2009", "chicago", "258", "929", "3.6", "1"],
    ]
    merges = [Merge(0, 0, 1, 0), Merge(0, 1, 1, 1), Merge(0, 2, 0, 4), Merge(0, 5, 1, 5)]
    graph = _graph(rows, merges)
    assert graph.n_header_rows == 2
    assert graph.col_path[3] == ("rushing", "yds")


def test_the_stub_name_under_merged_column_groups_is_a_header_row() -> None:
    rows = [
        ["", "total area", "total area", "land area", "land area"],
        ["state", "rank", "sq mi", "rank", "sq mi"],
        ["alaska", "1", "665,384", "1", "570,640"],
        ["texas", "2", "268,596", "2", "261,231"],
    ]
    graph = _graph(rows, [Merge(0, 1, 0, 2), Merge(0, 3, 0, 4)])
    assert graph.n_header_rows == 2
    assert graph.col_path[4] == ("land area", "sq mi")
    assert graph.row_path[1] == ("texas",)


def test_placeholder_words_in_the_header_are_blanks() -> None:
    rows = [
        ["none", "none", "regular season", "regular season"],
        ["season", "team", "gp", "w"],
        ["1983-84", "drummondville", "28", "10"],
        ["1984-85", "chicoutimi", "56", "40"],
    ]
    graph = _graph(rows, [Merge(0, 2, 0, 3)])
    assert graph.n_header_rows == 2
    assert graph.layout.stub_cols == (0, 1)
    assert graph.row_path[1] == ("1984-85", "chicoutimi")


def test_small_ascending_whole_numbers_are_row_labels() -> None:
    ranks = [["Rank", "Name", "Points"], ["1", "Ann", "98"], ["2", "Bob", "91"], ["3", "Cy", "85"]]
    table = Table.from_rows(ranks)
    assert ordinal(table, 0) and not ordinal(table, 2)
    assert stub_columns(table) == (0,)
    totals = [["Total", "A"], ["65873", "1"], ["67145", "2"], ["71935", "3"]]
    assert stub_columns(Table.from_rows(totals)) == ()  # large numbers: data, not ranks
    squad = [
        ["province", "rank", "gdp", "gdp"],
        ["province", "rank", "cny", "usd"],
        ["beijing", "1", "140,211", "21,188"],
        ["shanghai", "2", "134,982", "20,398"],
        ["tianjin", "3", "120,711", "18,241"],
    ]
    merges = [Merge(0, 0, 1, 0), Merge(0, 1, 1, 1), Merge(0, 2, 0, 3)]
    assert _graph(squad, merges).layout.stub_cols == (0, 1)


def test_a_blank_corner_heads_the_stub_even_over_numbers() -> None:
    rows = [
        ["", "regular season", "regular season"],
        ["", "gc", "w"],
        ["12", "16", "4"],
        ["7", "210", "97"],
        ["30", "28", "13"],
    ]
    graph = _graph(rows, [Merge(0, 0, 1, 0), Merge(0, 1, 0, 2)])
    assert graph.n_header_rows == 2
    assert graph.layout.stub_cols == (0,)
    assert graph.row_path[1] == ("7",)
