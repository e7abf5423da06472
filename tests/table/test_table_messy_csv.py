"""Messy CSVs (issue 24, point 12): title and footer lines, decimal commas, typed DataFrames.

Before: a German statistics export read its title as the header and "Quelle: …" /
"Stand: 31.03.2024" as data rows, and `Table.to_dataframe()` gave strings only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import tablequest
from tablequest.cli import app
from tablequest.corpus import Store
from tablequest.table import Table, read_tables_report, serialize

GERMAN = (
    "Bevölkerung nach Ländern;;;\n"
    "Land;Einwohner;Anteil %;Stichtag\n"
    "Bayern;13.369.393;15,8;31.12.2023\n"
    "Berlin;3.878.100;4,6;31.12.2023\n"
    "Saarland;992.666;;30.06.2023\n"
    ";;;\n"
    "Quelle: Statistisches Landesamt, Fortschreibung;;;\n"
    "Stand: 31.03.2024\n"
    "* vorläufige Werte;;;\n"
).encode("cp1252")

ENGLISH = (
    b"city,population,area,founded,code,share\n"
    b'Springfield,"1,234",12.5,1821-03-04,007,12%\n'
    b'Shelbyville,"12,345",3,1799-12-31,011,n/a\n'
    b"Ogdenville,980,,,120,7%\n"
    b"\n"
    b"Source: census bureau, 2020 estimates\n"
)


def test_german_export_title_and_footer_become_title_and_notes() -> None:
    report = read_tables_report("bevoelkerung.csv", data=GERMAN)
    (table,) = report.tables
    assert table.title == "Bevölkerung nach Ländern"
    assert table.header_rows == (("Land", "Einwohner", "Anteil %", "Stichtag"),)
    assert [r[0] for r in table.body] == ["Bayern", "Berlin", "Saarland"]
    assert table.notes == (
        "Quelle: Statistisches Landesamt, Fortschreibung",
        "Stand: 31.03.2024",
        "* vorläufige Werte",
    )
    title_warning, notes_warning = report.warnings
    assert "1 line(s) before the header read as the title" in title_warning
    assert "3 line(s) after the data kept as table notes, not rows" in notes_warning
    assert "Quelle: Statistisches Landesamt" in notes_warning and "(+2 more)" in notes_warning


def test_german_export_types_decimal_commas_and_dotted_dates() -> None:
    (table,) = tablequest.read_tables("bevoelkerung.csv", data=GERMAN)
    df = table.to_dataframe()
    assert df["Einwohner"].dtype == "int64"
    assert df["Einwohner"].tolist() == [13369393, 3878100, 992666]
    assert df["Anteil %"].dtype == "float64"
    assert df["Anteil %"].iloc[:2].tolist() == [15.8, 4.6] and pd.isna(df["Anteil %"].iloc[2])
    assert pd.api.types.is_datetime64_any_dtype(df["Stichtag"])
    assert df["Stichtag"].iloc[2] == pd.Timestamp("2023-06-30")
    assert df["Land"].dtype == object
    strings = table.to_dataframe(typed=False)
    assert strings["Einwohner"].tolist() == ["13.369.393", "3.878.100", "992.666"]


def test_english_csv_keeps_thousands_and_leaves_mixed_columns_as_text() -> None:
    report = read_tables_report("cities.csv", data=ENGLISH)
    (table,) = report.tables
    assert table.notes == ("Source: census bureau, 2020 estimates",)  # rejoined at its comma
    assert table.n_rows == 3 and len(report.warnings) == 1
    df = table.to_dataframe()
    assert df["population"].dtype == "int64"
    assert df["population"].tolist() == [1234, 12345, 980]  # "1,234" is thousands here
    assert df["area"].dtype == "float64" and pd.isna(df["area"].iloc[2])
    assert pd.api.types.is_datetime64_any_dtype(df["founded"]) and pd.isna(df["founded"].iloc[2])
    assert df["code"].dtype == object and df["code"].tolist() == ["007", "011", "120"]
    assert df["share"].dtype == object and df["share"].tolist() == ["12%", "n/a", "7%"]


def _frame(rows: list[list[str]]) -> pd.DataFrame:
    return Table.from_rows(rows).to_dataframe()


def test_ambiguous_thousands_follow_the_tables_other_columns() -> None:
    german = _frame([["a", "b"], ["1,234", "12,5"], ["2,5", "7"]])
    assert german["a"].tolist() == [1.234, 2.5]  # "2,5" decides: decimal comma
    mixed = _frame([["a", "b", "c"], ["1,234", "12,5", "1,234.5"], ["5,678", "3", "2"]])
    assert mixed["a"].dtype == object  # one column decimal-comma, one English: undecided
    assert mixed["b"].tolist() == [12.5, 3.0] and mixed["c"].tolist() == [1234.5, 2.0]
    english = _frame([["a", "b"], ["1,234", "12.5"], ["5,678", "7"]])
    assert english["a"].tolist() == [1234, 5678]
    assert _frame([["a"], ["12,5"], ["12.5"]])["a"].dtype == object
    dotted = _frame([["a", "b"], ["1.234", "2,5"], ["−1.000.000", "1"]])
    assert dotted["a"].tolist() == [1234, -1000000]


def test_date_rules_need_consistent_evidence() -> None:
    df = _frame(
        [
            ["iso", "dmy", "unclear", "bad", "mixed", "year", "stamp"],
            ["2024-03-31", "31/03/2024", "01/02/2024", "2024-02-30", "2024-01-01", "2020", ""],
            ["2024-04-01", "01/04/2024", "03/04/2024", "2024-03-01", "02.01.2024", "2021", "-"],
            ["", "", "", "", "", "2022", "2024-03-31T12:30:05.25"],
        ]
    )
    assert pd.api.types.is_datetime64_any_dtype(df["iso"]) and pd.isna(df["iso"].iloc[2])
    assert df["dmy"].iloc[1] == pd.Timestamp("2024-04-01")  # 31/03 says: day first
    assert df["unclear"].dtype == object  # 01/02 could be either order
    assert df["bad"].dtype == object  # February 30th is no date
    assert df["mixed"].dtype == object  # two forms in one column
    assert df["year"].dtype == "int64"
    assert df["stamp"].iloc[2] == pd.Timestamp("2024-03-31 12:30:05.250")
    month_first = _frame([["d"], ["12/31/2023"], ["1/2/2024"]])["d"]
    assert month_first.iloc[1] == pd.Timestamp("2024-01-02")


def test_missing_markers_and_huge_integers() -> None:
    df = _frame([["a", "b", "c"], ["1", "..", "99999999999999999999"], ["—", "x", "1"]])
    assert df["a"].dtype == "float64" and pd.isna(df["a"].iloc[1])
    assert df["b"].dtype == object  # "x" is text
    assert df["c"].dtype == object  # beyond int64: kept as written
    blank = _frame([["a", "b"], ["", "1"], ["-", "2"]])
    assert blank["a"].dtype == object and blank["b"].dtype == "int64"


@pytest.mark.parametrize(
    "data",
    [
        b"name,age\nAnn,31\nBob,\n",  # a missing value, not a note
        b"a,b,c\n1,2,3\nSource: x,4,5\n",  # note-like text in a full data row
        b"a,b,c\n1,2,3\nTotal,,\n",  # a total row with its values missing
        b"name,\nAnn,1\nBob,2\n",  # a header with a blank second name
    ],
)
def test_data_rows_that_look_short_stay_rows(data: bytes) -> None:
    report = read_tables_report("d.csv", data=data)
    (table,) = report.tables
    assert table.notes == () and table.title is None and report.warnings == []
    assert len(table.cells) == data.count(b"\n")


def test_notes_inside_the_data_block_are_rows() -> None:
    data = b"a,b,c\n1,2,3\n* provisional\n4,5,6\nNote: all figures in EUR\n"
    (table,) = tablequest.read_tables("d.csv", data=data)
    assert table.notes == ("Note: all figures in EUR",)
    assert [r[0] for r in table.body] == ["1", "* provisional", "4"]


def test_notes_round_trip_and_hash() -> None:
    plain = Table.from_rows([["a", "b"], ["1", "2"]])
    noted = Table.from_rows([["a", "b"], ["1", "2"]], notes=["Stand: 31.03.2024"])
    old_dict = {k: v for k, v in plain.to_dict().items() if k != "notes"}  # stored before notes
    assert Table.from_dict(old_dict) == plain
    assert Table.from_dict(json.loads(json.dumps(noted.to_dict()))) == noted
    assert noted.content_hash != plain.content_hash
    assert noted.sub_table(rows=[0]).notes == noted.notes == noted.transpose().notes
    assert serialize(noted, "linearized").splitlines()[-1] == "[NOTE] Stand: 31.03.2024"
    assert "Stand" not in serialize(noted, "csv")


def test_cli_ingest_reports_the_notes_and_stores_them(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bevoelkerung.csv").write_bytes(GERMAN)
    store = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "bevoelkerung.csv" in result.stdout
    assert "kept as table notes" in " ".join(result.stdout.split())
    opened = Store(store, read_only=True)
    try:
        ((_, table),) = list(opened.iter_tables())
    finally:
        opened.close()
    assert table.notes[1] == "Stand: 31.03.2024" and table.title == "Bevölkerung nach Ländern"
    assert table.to_dataframe()["Anteil %"].dtype == "float64"
    shown = CliRunner().invoke(app, ["show", opened_id(store), "--store", str(store)])
    assert shown.exit_code == 0, shown.output
    assert "note: Stand: 31.03.2024" in shown.stdout  # the notes are shown, not lost


def opened_id(store: Path) -> str:
    with Store(store, read_only=True) as opened:
        (only,) = opened.table_ids()
    return only


FUEL = (
    b"Average fuel prices by country, March 2024\n"
    b"Country,Petrol,Diesel\n"
    b"Germany,1.79,1.69\n"
    b"France,1.85,1.75\n"
    b"Italy,1.90,1.80\n"
    b"Source: European Commission, Weekly Oil Bulletin\n"
)


def test_title_holding_a_comma_is_the_title_and_the_source_a_note() -> None:
    # Before: the title split at its comma was the header, the real header row 0, the
    # footer a data row, and the third column was called column_3.
    report = read_tables_report("fuel.csv", data=FUEL)
    (table,) = report.tables
    assert table.title == "Average fuel prices by country, March 2024"
    assert table.columns == ("Country", "Petrol", "Diesel")
    assert [r[0] for r in table.body] == ["Germany", "France", "Italy"]
    assert table.notes == ("Source: European Commission, Weekly Oil Bulletin",)
    assert "read as the title" in report.warnings[0]


def test_short_multi_word_header_over_ragged_rows_is_not_a_title() -> None:
    data = b"first name,last name\nAnn,Lee,x\nBob,Li\nCy,Wu,y,z\n"
    (table,) = tablequest.read_tables("n.csv", data=data)
    assert table.title is None and table.cells[0][:2] == ("first name", "last name")


def test_semicolon_file_with_decimal_commas_is_split_at_semicolons() -> None:
    rows = [f"Land{i};1,{i:02d}" for i in range(30)]
    data = ("Land;Preis\n" + "\n".join(rows) + "\n").encode()
    (table,) = tablequest.read_tables("preise.csv", data=data)
    assert table.columns == ("Land", "Preis") and table.title is None
    assert table.n_rows == 30 and table.body[29] == ("Land29", "1,29")
    assert table.to_dataframe()["Preis"].iloc[1] == 1.01
