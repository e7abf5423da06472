"""`tablequest sql` and `tablequest migrate` through the CLI runner: readable, csv, json and
parquet results, `--json`, the row limit's note, refused statements that leave the store as
it was, errors that name line and column, a sharded corpus (bad input, exit 2) and a store of
format 1 (exit 1), refused with the library's message, and `migrate` bringing such a store to
format 2."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.sqlstores import downgrade, make_store
from typer.testing import CliRunner, Result

from tablequest.cli import app

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("sql") / "shop.duckdb")


def sql(store: Path, query: str, *extra: str) -> Result:
    return runner.invoke(app, ["sql", query, "-s", str(store), *extra], env={"COLUMNS": "200"})


def test_readable_csv_and_json_results(store: Path) -> None:
    query = "SELECT item, qty, day FROM prices WHERE qty >= 5 ORDER BY _row"
    shown = sql(store, query)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert "bread 5" in out and "2024-03-06" in out and "bigint" in out and "date" in out
    assert "8 rows" in out and "truncated" not in out
    as_csv = sql(store, query, "--format", "csv")
    text = as_csv.stdout
    assert text.splitlines()[1] == "bread 5,5,2024-03-06"  # quoted only where needed
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["item", "qty", "day"] and len(rows) == 9
    records = json.loads(sql(store, query, "-F", "json").stdout)
    assert records[0] == {"item": "bread 5", "qty": 5, "day": "2024-03-06"}
    payload = json.loads(sql(store, query, "--json").stdout)
    assert [c["type"] for c in payload["columns"]] == ["VARCHAR", "BIGINT", "DATE"]
    assert payload["row_count"] == 8 and payload["rows"][0] == ["bread 5", 5, "2024-03-06"]
    assert payload["truncated"] is False


def test_limit_truncates_and_says_so(store: Path) -> None:
    shown = sql(store, "SELECT * FROM prices", "--limit", "4")
    assert shown.exit_code == 0
    out = shown.stdout
    assert "4 rows" in out and "truncated at --limit 4 rows" in out
    as_csv = sql(store, "SELECT price FROM prices ORDER BY price", "--limit", "2", "-F", "csv")
    assert as_csv.stdout == "price\n1000\n1002.5\n"
    assert "truncated at --limit 2" in as_csv.stderr
    payload = json.loads(sql(store, "SELECT * FROM towns", "--limit", "1", "--json").stdout)
    assert payload["truncated"] is True and payload["truncated_by"] == "rows"


def test_parquet_to_a_file_a_pipe_never_a_terminal(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "SELECT town, people FROM towns"
    out = tmp_path / "towns.parquet"
    done = sql(store, query, "-F", "parquet", "--output", str(out))
    assert done.exit_code == 0 and "wrote" in done.stderr
    table = pq.read_table(out)
    assert table.column("people").to_pylist() == [1200, 800]
    assert table.schema.field("people").type == pa.int64()
    piped = sql(store, query, "-F", "parquet")
    assert pq.read_table(io.BytesIO(piped.stdout_bytes)).num_rows == 2
    monkeypatch.setattr("tablequest.cli._output.stdout_is_terminal", lambda: True)
    refused = sql(store, query, "-F", "parquet")
    assert refused.exit_code == 2 and "--output FILE" in refused.stderr


REFUSED = [
    ("DELETE FROM prices", "only SELECT statements run here (DELETE refused)"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv() is not available"),
    ("select * from tables", "no table 'tables' here"),
    ("SELECT 1; DROP TABLE prices", "exactly one SQL statement"),
]


def test_refused_statements_leave_the_store_as_it_was(store: Path) -> None:
    before = digest(store)
    for query, says in REFUSED:
        refused = sql(store, query)
        assert refused.exit_code == 2 and says in refused.stderr, query
        assert "Traceback" not in refused.output
    as_json = json.loads(sql(store, REFUSED[0][0], "--json").stdout)
    assert as_json["error"] == {
        "code": "sql_refused",
        "message": REFUSED[0][1] + ": the store is read-only",
    }
    assert digest(store) == before
    count = sql(store, "SELECT count(*) AS n FROM prices", "--json")
    assert json.loads(count.stdout)["rows"] == [[30]]


def test_errors_name_the_line_and_column(store: Path) -> None:
    syntax = sql(store, "SELECT item\nFROM prices WHER qty > 1")
    assert syntax.exit_code == 2
    assert "(line 2, column" in syntax.stderr and "syntax error" in syntax.stderr
    unknown = sql(store, "SELECT nope FROM prices", "--json")
    error = json.loads(unknown.stdout)["error"]
    assert error["code"] == "sql" and "(line 1, column 8)" in error["message"]
    bad = sql(store, "SELECT 1", "--format", "xml")
    assert bad.exit_code == 2 and "table | csv" in bad.stderr


def test_a_missing_store_and_a_sharded_corpus(tmp_path: Path) -> None:
    missing = tmp_path / "typo.duckdb"
    refused = sql(missing, "SELECT 1")
    assert refused.exit_code == 2 and "no store at" in refused.stderr
    assert not missing.exists()
    folder = tmp_path / "csv"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.csv").write_text("k,v\nx,1\n", encoding="utf-8")
    manifest = tmp_path / "corpus.json"
    done = runner.invoke(app, ["ingest", str(folder), "-s", str(manifest), "--shards", "2"])
    assert done.exit_code == 0, done.output
    sharded = sql(manifest, "SELECT * FROM a", "--json")
    assert sharded.exit_code == 2  # bad input: the fix is a shard file
    error = json.loads(sharded.stdout)["error"]
    assert error["code"] == "not_a_store"
    assert "sharded corpus" in error["message"] and "-s SHARD.duckdb" in error["message"]


def test_a_store_of_format_1_is_refused_then_migrated(tmp_path: Path) -> None:
    path = make_store(tmp_path / "old.duckdb")
    downgrade(path)
    refused = sql(path, "SELECT * FROM prices")
    assert refused.exit_code == 1
    assert f"run `tablequest migrate {path}`" in refused.stderr
    listing = runner.invoke(app, ["tables", "-s", str(path), "--json"])
    assert [r["sql_name"] for r in json.loads(listing.stdout)] == [None, None]
    migrated = runner.invoke(app, ["migrate", str(path)])
    assert migrated.exit_code == 0, migrated.output
    assert "migrated to format 2" in migrated.stdout
    again = runner.invoke(app, ["migrate", "--store", str(path), "--json"])
    assert json.loads(again.stdout) == {
        "store": str(path), "format_version": 2, "migrated": False, "notes": []
    }  # fmt: skip
    text = runner.invoke(app, ["migrate", str(path)]).stdout
    assert "already format 2" in text
    count = sql(path, "SELECT count(*), sum(qty) FROM prices", "--json")
    assert json.loads(count.stdout)["rows"] == [[30, 85]]


def test_migrate_refuses_a_missing_store_and_never_creates_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.duckdb"
    result = runner.invoke(app, ["migrate", str(missing)])
    assert result.exit_code == 2 and "no store at" in result.stderr
    assert not missing.exists() and list(tmp_path.iterdir()) == []
