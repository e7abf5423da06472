"""Row and column header paths of the meta graph on small HiTab-like tables (layout rules).

Each fixture is hand-written in the shape HiTab's StatCan, NSF and ToTTo tables have, with the
paths HiTab's header trees give them; see `layout` for the rules and
benchmarks/dtr_header_paths.py for the measurement on the 538 HiTab test tables.
"""

from __future__ import annotations

from tablequest.methods.research.additive import nest, row_numbers, trailing_totals
from tablequest.methods.research.meta import build_meta_graph
from tablequest.table import Merge, Table


def _paths(rows: list[list[str]], **kwargs: object) -> dict[int, tuple[str, ...]]:
    graph = build_meta_graph(Table.from_rows(rows, **kwargs))  # type: ignore[arg-type]
    return graph.row_path


def test_small_integers_that_add_up_by_chance_are_not_nested() -> None:
    medals = [
        ["Nation", "Gold", "Silver", "Total"],
        ["Australia", "1", "1", "2"],
        ["Bangladesh", "1", "0", "1"],
        ["Belarus", "0", "1", "1"],
        ["Canada", "1", "1", "2"],
    ]
    paths = _paths(medals)
    assert paths[1] == ("Bangladesh",)
    assert paths[2] == ("Belarus",)
    counts = [
        ["Area", "Cases", "Deaths"],
        ["Canada", "35,151", "2,210"],
        ["Ontario", "20,100", "1,400"],
        ["Quebec", "15,051", "810"],
    ]
    assert _paths(counts)[1] == ("Canada", "Ontario")


def test_evidence_is_opt_in_for_the_arithmetic_itself() -> None:
    numbers = {i: row_numbers([v], [0]) for i, v in enumerate(["2", "1", "1", "4"])}
    assert nest([0, 1, 2], numbers) == ({1: 0, 2: 0}, {0})
    assert nest([0, 1, 2], numbers, min_evidence=1.8) == ({}, set())
    assert trailing_totals([1, 2, 0], numbers) == {0}
    assert trailing_totals([1, 2, 0], numbers, min_evidence=1.8) == set()


def test_a_total_above_section_rows_is_their_sibling() -> None:
    rows = [
        ["", "Number"],
        ["Total", "1,000"],
        ["Age group", ""],
        ["15 to 34", "400"],
        ["35 and over", "600"],
        ["Sex", ""],
        ["Men", "480"],
        ["Women", "520"],
    ]
    paths = _paths(rows)
    assert paths[0] == ("Total",)
    assert paths[2] == ("Age group", "15 to 34")
    assert paths[6] == ("Sex", "Women")


def test_rows_after_a_total_label_are_its_parts_even_when_they_do_not_add_up() -> None:
    rows = [
        ["Province", "Rate", "Percent"],
        ["Rate per 100,000", "", ""],
        ["Provinces overall", "3,391", "12.5"],
        ["Quebec", "2,279", "10.1"],
        ["Ontario", "2,734", "11.0"],
        ["Territories overall", "9,886", "40.2"],
        ["Yukon", "7,153", "33.3"],
        ["Nunavut", "13,886", "51.0"],
    ]
    paths = _paths(rows)
    assert paths[2] == ("Rate per 100,000", "Provinces overall", "Quebec")
    assert paths[5] == ("Rate per 100,000", "Territories overall", "Yukon")
    assert paths[4] == ("Rate per 100,000", "Territories overall")
    plain = [["Industry", "Share (%)"], ["Mining", "12.0"], ["Total", "30.0"], ["Farms", "8.0"]]
    assert _paths(plain)[2] == ("Farms",)  # only a first row heads


def test_a_section_row_right_above_another_is_a_super_section() -> None:
    rows = [
        ["Characteristic", "Percent"],
        ["Socio-demographic", ""],
        ["Sex", ""],
        ["Men", "40.1"],
        ["Women", "41.3"],
        ["Health", ""],
        ["Conditions", ""],
        ["None", "70.2"],
        ["One or more", "29.8"],
    ]
    paths = _paths(rows)
    assert paths[2] == ("Socio-demographic", "Sex", "Men")
    assert paths[6] == ("Health", "Conditions", "None")


def test_a_repeated_unmerged_header_value_is_a_level_not_a_section() -> None:
    rows = [
        ["State", "Total", "Rate"],
        ["", "Count", "Per 100,000"],
        ["none", "none", "none"],
        ["Alabama", "99,800", "2,640"],
        ["Alaska", "12,900", "2,320"],
    ]
    graph = build_meta_graph(Table.from_rows(rows, n_header_rows=3, n_header_cols=1))
    assert graph.row_path[0] == ("Alabama",)
    assert graph.col_path[1] == ("Total", "Count", "none")
    merged = [row[:] for row in rows]
    merged[2] = ["", "Thousands", "Thousands"]
    spans = [Merge(2, 1, 2, 2)]
    graph = build_meta_graph(
        Table.from_rows(merged, n_header_rows=3, n_header_cols=1, merges=spans)
    )
    assert graph.row_path[0] == ("Thousands", "Alabama")


def test_stub_columns_next_to_a_column_group_of_the_same_name() -> None:
    rows = [
        ["Club", "Season", "League", "League", "League", "FA Cup", "FA Cup"],
        ["Club", "Season", "League", "Apps", "Goals", "Apps", "Goals"],
        ["Port Vale", "1992-93", "Division 2", "41", "15", "4", "1"],
        ["", "1993-94", "Division 2", "42", "13", "2", "0"],
        ["Aston Villa", "1994-95", "Premier League", "22", "1", "2", "0"],
    ]
    merges = [Merge(0, c, 1, c) for c in range(3)] + [Merge(0, 3, 0, 4), Merge(0, 5, 0, 6)]
    graph = build_meta_graph(Table.from_rows(rows, n_header_rows=2, merges=merges))
    assert graph.layout.stub_cols == (0, 1, 2)
    assert graph.row_path[1] == ("Port Vale", "1993-94", "Division 2")
    assert graph.col_path[4] == ("League", "Goals")


def test_a_section_row_inside_the_header_does_not_hide_a_stub_column() -> None:
    rows = [
        ["Team", "Year", "Won", "Lost"],
        ["Team", "Year", "Won", "Lost"],
        ["National Football League"] * 4,
        ["CLE", "1984", "4", "4"],
        ["CLE", "1985", "8", "8"],
        ["KC", "1989", "8", "7"],
    ]
    merges = [Merge(0, 0, 1, 0), Merge(0, 1, 1, 1), Merge(2, 0, 2, 3)]
    for r, c in ((0, 2), (0, 3)):
        merges.append(Merge(r, c, r + 1, c))
    graph = build_meta_graph(Table.from_rows(rows, n_header_rows=3, merges=merges))
    assert graph.layout.stub_cols == (0, 1)
    assert graph.row_path[1][-2:] == ("CLE", "1985")


def test_counts_randomly_rounded_to_five_still_add_up() -> None:
    rows = [
        ["Province", "Tumours", "Treated"],
        ["Canada", "6,070", "5,745"],
        ["Nova Scotia", "140", "135"],
        ["New Brunswick", "140", "145"],
        ["Ontario", "4,095", "3,855"],
        ["Manitoba", "185", "170"],
        ["Alberta", "1,505", "1,430"],
    ]
    paths = _paths(rows)
    assert paths[3] == ("Canada", "Ontario")  # 6,065 and 5,735 against 6,070 and 5,745
    unrounded = [row[:] for row in rows]
    unrounded[2][1:] = ["141", "136"]
    assert _paths(unrounded)[3] == ("Ontario",)  # exact digits: a 4 and 9 miss is no match


def test_a_last_part_smaller_than_the_rounding_is_still_a_child() -> None:
    rows = [
        ["Relationship", "Victims", "Accused"],
        ["Spousal", "51", "49"],
        ["Husband", "16", "15"],
        ["Common-law", "21", "20"],
        ["Separated", "8", "8"],
        ["Divorced", "5", "5"],
        ["Same-sex", "1", "1"],
        ["Acquaintance", "30", "31"],
    ]
    paths = _paths(rows)
    assert paths[4] == ("Spousal", "Divorced")
    assert paths[5] == ("Spousal", "Same-sex")  # 50 and 48 already match within rounding
    assert paths[6] == ("Acquaintance",)


def test_the_unit_of_a_lone_data_column_stays_in_its_column_path() -> None:
    rows = [
        ["Industry", "Type", "Assets"],
        ["", "", "$ millions"],
        ["Construction", "MNEs", "3.80"],
        ["", "Domestic", "0.13"],
    ]
    graph = build_meta_graph(Table.from_rows(rows, n_header_rows=2, n_header_cols=2))
    assert graph.col_path[2] == ("Assets", "$ millions")
    assert graph.row_path[1] == ("Construction", "Domestic")


def test_a_sum_of_unlabelled_subtotals_is_their_parent() -> None:
    fields = [
        ["Field", "2017", "2018"],
        ["Science and engineering", "20,542", "21,848"],
        ["Science", "17,268", "18,278"],
        ["Biology", "8,203", "8,250"],
        ["Physics", "9,065", "10,028"],
        ["Engineering", "3,274", "3,570"],
        ["Civil", "1,422", "1,414"],
        ["Chemical", "1,852", "2,156"],
    ]
    assert _paths(fields)[2] == ("Science and engineering", "Science", "Biology")
    crimes = [row[:] for row in fields]
    crimes[0][0], crimes[1][0] = "Offence", "Total crime"
    crimes[2][0], crimes[5][0] = "Total violent crime", "Total property crime"
    paths = _paths(crimes)
    assert paths[2] == ("Total violent crime", "Biology")  # a grand total over totals: a sibling
    assert paths[0] == ("Total crime",)
