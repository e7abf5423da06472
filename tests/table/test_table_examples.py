"""Readers against every file in examples/corpus (the repo's own demo corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.table import Merge, read_tables, serialize

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def only(name: str):  # type: ignore[no-untyped-def]
    tables = read_tables(CORPUS / name)
    assert len(tables) == 1
    return tables[0]


def test_every_example_file_reads() -> None:
    files = sorted(p for p in CORPUS.iterdir() if p.is_file())
    assert len(files) >= 12
    formats = set()
    for path in files:
        for table in read_tables(path):
            assert table.n_rows > 0 and table.n_cols > 1, path
            assert table.source.path == str(path)
            formats.add(table.source.format)
    assert formats == {"csv", "tsv", "markdown", "html", "json", "xlsx", "parquet", "sqlite"}


def test_csv_league() -> None:
    t = only("league_standings.csv")
    assert t.columns[:3] == ("Pos", "Team", "Played")
    assert t.body[0][1] == "Harbour City Rovers" and t.body[-1][-1] == "6"
    assert t.source.format == "csv" and t.source.sheet is None


def test_semicolon_csv_is_sniffed() -> None:
    t = only("bird_survey_2023.csv")
    assert t.n_cols == 5
    assert t.body[0] == ("Common crane", "Lake Varna", "212", "1 048", "up")


def test_tsv_climate_with_utf8_header() -> None:
    t = only("city_climate_lindqvist.tsv")
    assert t.source.format == "tsv"
    assert t.columns[1] == "Mean high (°C)"
    assert t.body[6] == ("July", "23.4", "13.7", "76", "284")


def test_markdown_with_title_separator_and_escaped_pipe() -> None:
    t = only("product_catalogue.md")
    assert t.title == "Trailhead Outfitters spring catalogue"
    assert t.n_rows == 10
    assert t.body[5][1] == "Bivy sack | ultralight"


def test_wtq_style_table_without_separator() -> None:
    t = only("museum_visitors.table")
    assert t.source.format == "markdown"
    assert t.header_rows[0][3] == "Visitors 2022"
    assert t.body[4] == ("Lantern House of Science", "Port Selby", "2012", "356,900", "402,250")


def test_html_rowspan_is_expanded_and_recorded() -> None:
    t = only("train_timetable.html")
    assert t.title == "Coastal Line weekday departures, Port Selby to Aldergrove"
    assert [r[1] for r in t.body[:3]] == ["Regional (all stops)"] * 3
    assert Merge(1, 1, 3, 1) in t.merges  # grid coordinates: header row is row 0
    assert t.body[7][2:4] == ("23:50 (boarding from 23:20)",) * 2
    assert Merge(8, 2, 8, 3) in t.merges


def test_html_two_level_header_and_row_headers() -> None:
    t = only("school_enrollment.html")
    assert t.n_header_rows == 2 and t.n_header_cols == 1
    assert t.columns == (
        "District",
        "Primary / 2021",
        "Primary / 2023",
        "Secondary / 2021",
        "Secondary / 2023",
    )


def test_json_records_header_rows_jsonl_and_hitab() -> None:
    medals = only("northern_games_medals.json")
    assert medals.columns == ("rank", "nation", "gold", "silver", "bronze", "total")
    assert medals.body[0][1] == "Auroria"
    loans = only("library_loans.json")
    assert loans.title.startswith("Aldergrove public libraries")  # type: ignore[union-attr]
    assert loans.body[-1][0] == "Harbour"
    bakery = only("bakery_sales.jsonl")
    assert bakery.n_rows == 9 and bakery.body[1][3] == "313.6"
    staff = only("hospital_staff_hierarchical.json")
    assert staff.n_header_rows == 2 and staff.n_header_cols == 2
    assert staff.columns[5] == "part-time / nurses"
    assert staff.body[2][0] == "medicine" and staff.body[4][0] == "medicine"  # merge filled
    assert staff.row_header_path(5) == ("emergency",)


def test_xlsx_title_two_level_header_and_row_groups() -> None:
    results, headcount = read_tables(CORPUS / "quarterly_results.xlsx")
    assert results.source.sheet == "Results 2023" and headcount.source.sheet == "Headcount"
    assert results.title == "Nordlicht Devices plc — quarterly results 2023 (EUR million)"
    assert results.n_header_rows == 2 and results.n_header_cols == 1
    assert results.columns[2] == "Revenue / Q1"
    assert results.columns[9] == "Operating profit / Q4"
    assert Merge(0, 2, 0, 5) in results.merges
    assert [r[0] for r in results.body] == ["Consumer"] * 3 + ["Enterprise"] * 2 + ["Other"]
    assert results.body[3][5] == "281.5"
    assert headcount.n_header_rows == 1 and headcount.body[0] == (
        "Consumer",
        "4120",
        "4180",
        "4305",
        "4390",
    )


def test_parquet_and_sqlite() -> None:
    rivers = only("river_lengths.parquet")
    assert rivers.columns == ("river", "length_km", "source", "mouth", "navigable")
    assert rivers.body[4] == ("Varna", "143.8", "Lake Varna", "Reed delta", "true")
    stages, shows = read_tables(CORPUS / "harbour_festival.sqlite")
    assert (stages.source.sheet, shows.source.sheet) == ("stages", "performances")
    assert stages.body[0] == ("Main", "Harbour quay", "5000")
    assert shows.n_rows == 8


@pytest.mark.parametrize("fmt", ["markdown", "csv", "tsv", "html", "json", "linearized"])
def test_every_example_serializes(fmt: str) -> None:
    for path in sorted(CORPUS.iterdir()):
        for table in read_tables(path):
            text = serialize(table, fmt)  # type: ignore[arg-type]
            assert table.body[0][0].split("\n")[0][:10] in text
