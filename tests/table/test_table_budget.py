"""Reading budgets (issue 25): hostile small files are refused while reading, by name and limit.

Each hostile file is built here, as measured in the issue: a 10 KB Parquet holding two
million equal strings, an 8 KB SQLite database with a 50 MB generated column, a 64 KB JSON
Lines file of 5,000 records that each bring their own key, an HTML file of colspan tables
that are each under the cell limit but over it together.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import time
from pathlib import Path

import pytest

from tablequest.settings import SettingsError
from tablequest.table.budget import ENV, OverBudget, ReadBudget
from tablequest.table.errors import UnreadableTable
from tablequest.table.readers import read_tables

QUICK = 5.0  # seconds: the target for a file under 1 MB (generous, deterministic)


def parquet_equal_strings(path: Path, n: int = 2_000_000) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.array(["the same string"] * n).dictionary_encode()
    pq.write_table(pa.table({"s": column}), path, use_dictionary=True, compression="zstd")
    return path


def sqlite_generated(path: Path, rows: int = 40) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.executemany("INSERT INTO t (a) VALUES (?)", [(i,) for i in range(rows)])
    # Added after the rows: an INSERT would compute the 50 MB value for each row.
    conn.execute(
        "ALTER TABLE t ADD COLUMN b TEXT GENERATED ALWAYS AS "
        "(printf('%.*c', 50000000, 'x')) VIRTUAL"
    )
    conn.commit()
    conn.close()
    return path


def jsonl_distinct_keys(path: Path, n: int = 5_000) -> Path:
    path.write_text("".join(json.dumps({f"k{i}": i}) + "\n" for i in range(n)))
    return path


def html_colspan_tables(path: Path, tables: int = 3, rows: int = 400) -> Path:
    table = "<table>" + '<tr><td colspan="1000">x</td></tr>' * rows + "</table>"
    path.write_text("<html><body>" + table * tables + "</body></html>")
    return path


def refused(path: Path, limit: str, budget: ReadBudget | None = None) -> OverBudget:
    start = time.monotonic()
    with pytest.raises(OverBudget) as info:
        read_tables(path, budget=budget or ReadBudget())
    assert time.monotonic() - start < QUICK
    exc = info.value
    assert isinstance(exc, UnreadableTable)
    assert exc.path == str(path) and exc.limit == limit
    assert str(path) in str(exc) and limit in exc.reason and ENV[limit] in exc.reason
    return exc


def test_parquet_of_equal_strings_is_refused_from_its_metadata(tmp_path: Path) -> None:
    path = parquet_equal_strings(tmp_path / "equal.parquet")
    assert path.stat().st_size < 100_000
    exc = refused(path, "free_cells")
    assert "2,000,000" in exc.reason


def test_parquet_decoded_bytes_are_spent_before_python_values(tmp_path: Path) -> None:
    # 300 rows of one 100 KB string: 30 MB decoded from a dictionary of one value.
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"s": ["y" * 100_000] * 300}), path, compression="zstd")
    refused(path, "max_decoded_bytes", ReadBudget(max_decoded_bytes=10_000_000))
    table = read_tables(path, budget=ReadBudget(max_decoded_bytes=40_000_000))[0]
    assert table.n_rows == 300 and table.cells[1][0] == "y" * 100_000


def test_parquet_within_budget_reads_row_groups_and_nulls(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "ok.parquet"
    data = pa.table({"name": ["a", None, "c"] * 10, "n": list(range(30))})
    pq.write_table(data, path, row_group_size=7)
    table = read_tables(path)[0]
    assert table.cells[0] == ("name", "n")
    assert [row[0] for row in table.cells[1:4]] == ["a", "", "c"]
    assert table.cells[-1] == ("c", "29") and table.n_rows == 30


def test_sqlite_generated_column_is_bounded(tmp_path: Path) -> None:
    path = sqlite_generated(tmp_path / "gen.sqlite")
    assert path.stat().st_size < 20_000
    refused(path, "max_decoded_bytes")
    # A value longer than the whole budget is stopped inside SQLite (value-length limit).
    refused(path, "max_decoded_bytes", ReadBudget(max_decoded_bytes=1_000_000))


def test_sqlite_generated_columns_within_budget_read_as_sqlite_computes_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ok.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE t (a INTEGER, code TEXT GENERATED ALWAYS AS (printf('%05d-%s', a, 'x')) "
        "VIRTUAL, pad TEXT GENERATED ALWAYS AS (format('%.*c', a, 'z')) VIRTUAL)"
    )
    conn.executemany("INSERT INTO t (a) VALUES (?)", [(3,), (12,)])
    conn.commit()
    conn.close()
    table = read_tables(path)[0]
    assert table.cells == (
        ("a", "code", "pad"),
        ("3", "00003-x", "zzz"),
        ("12", "00012-x", "z" * 12),
    )
    conn = sqlite3.connect(path)  # a value past 32 bytes per byte of the file
    conn.execute("INSERT INTO t (a) VALUES (?)", (40 * path.stat().st_size,))
    conn.commit()
    conn.close()
    refused(path, "max_decoded_bytes", ReadBudget(max_decoded_bytes=10))


def test_sqlite_rows_are_limited_by_the_cell_budget(tmp_path: Path) -> None:
    path = tmp_path / "rows.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(1000)])
    conn.commit()
    conn.close()
    refused(path, "max_cells", ReadBudget(max_cells=1000))
    assert read_tables(path, budget=ReadBudget(max_cells=2000))[0].n_rows == 1000


def test_sqlite_statement_is_interrupted_when_time_is_spent(tmp_path: Path) -> None:
    path = tmp_path / "slow.sqlite"
    conn = sqlite3.connect(path)
    # Each row's generated value costs many VM steps; the progress handler stops it.
    conn.execute(
        "CREATE TABLE t (a INTEGER, b TEXT GENERATED ALWAYS AS "
        "(length(replace(hex(zeroblob(200000)), '0', 'ab'))) VIRTUAL)"
    )
    conn.executemany("INSERT INTO t (a) VALUES (?)", [(i,) for i in range(5)])
    conn.commit()
    conn.close()
    refused(path, "max_seconds", ReadBudget(max_seconds=1e-6))


def test_jsonl_with_a_key_per_record_is_refused_before_the_grid(tmp_path: Path) -> None:
    path = jsonl_distinct_keys(tmp_path / "keys.jsonl")
    assert path.stat().st_size < 100_000
    exc = refused(path, "free_cells")
    assert "25,005,000" in exc.reason
    refused(path, "max_columns", ReadBudget(max_columns=1000))


def test_json_ragged_rows_are_spent_padded(tmp_path: Path) -> None:
    path = tmp_path / "ragged.json"
    path.write_text(json.dumps([list(range(3000))] + [[1]] * 1000))
    refused(path, "free_cells")


def test_html_budget_is_per_file_not_per_table(tmp_path: Path) -> None:
    one = html_colspan_tables(tmp_path / "one.html", tables=1)
    assert read_tables(one)[0].n_cols == 1000
    three = html_colspan_tables(tmp_path / "three.html", tables=3)
    exc = refused(three, "free_cells")
    assert "1,000,000" in exc.reason


def test_html_padding_counts(tmp_path: Path) -> None:
    rows = '<tr><td colspan="1000">wide</td></tr>' + "<tr><td>a</td></tr>" * 1500
    path = tmp_path / "pad.html"
    path.write_text(f"<table>{rows}</table>")
    refused(path, "free_cells")


def test_csv_one_wide_line_cannot_pad_a_huge_grid(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("," * 4_000 + "\n" + "a,b\n" * 1_000)
    refused(path, "free_cells")
    refused(path, "max_columns", ReadBudget(max_columns=100))


def test_markdown_grid_is_spent(tmp_path: Path) -> None:
    path = tmp_path / "wide.md"
    path.write_text("|" + "h|" * 3000 + "\n" + "|a|\n" * 500)
    refused(path, "free_cells")


def test_no_limit_reads_what_the_default_refuses(tmp_path: Path) -> None:
    path = jsonl_distinct_keys(tmp_path / "keys.jsonl", n=400)
    refused(path, "max_cells", ReadBudget(max_cells=100_000))
    unlimited = ReadBudget(max_cells=None, max_columns=None)
    assert read_tables(path, budget=unlimited)[0].n_cols == 400


def test_budget_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    budget = ReadBudget.from_env(
        {ENV["max_cells"]: "5_000", ENV["max_seconds"]: "2.5", ENV["ingest_cells"]: "none"}
    )
    assert budget == ReadBudget(max_cells=5000, max_seconds=2.5, ingest_cells=None)
    assert ReadBudget.from_env({ENV["max_columns"]: "0"}).max_columns is None
    with pytest.raises(SettingsError, match="TABLEQUEST_READ_MAX_CELLS='many'"):
        ReadBudget.from_env({ENV["max_cells"]: "many"})
    with pytest.raises(SettingsError, match="must not be negative"):
        ReadBudget.from_env({ENV["max_seconds"]: "-1"})
    # read_tables takes the environment when no budget is given
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n")
    monkeypatch.setenv(ENV["max_cells"], "4")
    with pytest.raises(OverBudget, match="max_cells=4"):
        read_tables(path)
    monkeypatch.setenv(ENV["max_cells"], "lots")
    with pytest.raises(UnreadableTable, match="TABLEQUEST_READ_MAX_CELLS='lots'"):
        read_tables(path)


def test_over_budget_survives_pickling() -> None:
    exc = OverBudget("f.csv", "max_cells", "9 cells", "8")
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, OverBudget)
    assert (back.path, back.reason, back.setting) == (exc.path, exc.reason, exc.setting)
