"""`tables`, `show` and `search` through the CLI runner: ids and sql names, readable tables
without markup, typed exports and Markdown through the serializer, the store rule
(--store/-s, $TABLEQUEST_STORE, the old positional spelling with its note) and refusals that
never create a store."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store
from tablequest.table import Merge, Source, Table

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
runner = CliRunner()
MARKUP = re.compile(r"</?(table|tr|td|th|thead|tbody|caption)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "demo.duckdb"
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "-s", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path


def _listing(store: Path, *extra: str) -> list[dict[str, object]]:
    result = runner.invoke(app, ["tables", "--store", str(store), "--json", *extra])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def _id_of(store: Path, needle: str) -> str:
    (row,) = [r for r in _listing(store) if needle in str(r["source"])]
    return str(row["table_id"])


def test_tables_lists_id_name_size_format_source(store: Path) -> None:
    rows = _listing(store)
    assert len(rows) == 16
    assert set(rows[0]) == {
        "table_id", "name", "n_rows", "n_cols", "format", "source", "title", "sql_name",
        "ingested_at",
    }  # fmt: skip
    school = next(r for r in rows if str(r["source"]).endswith("school_enrollment.html"))
    assert school["name"] == "Enrollment by district and level, 2021 and 2023"
    assert (school["n_rows"], school["n_cols"], school["format"]) == (4, 5, "html")
    sheets = [r["name"] for r in rows if "quarterly_results" in str(r["source"])]
    assert "quarterly_results.xlsx#Headcount" in sheets
    human = runner.invoke(app, ["tables", "-s", str(store)], env={"COLUMNS": "250"})
    assert human.exit_code == 0
    assert str(school["table_id"]) in human.stdout and "4 × 5" in human.stdout
    assert "sql name" in human.stdout and str(school["sql_name"]) in human.stdout
    assert school["sql_name"] == "enrollment_by_district_and_level_2021"
    assert "16 tables in" in human.stdout


def test_tables_filter(store: Path) -> None:
    rows = _listing(store, "--filter", "QUARTERLY")
    assert {str(r["format"]) for r in rows} == {"xlsx"} and len(rows) == 2
    none = runner.invoke(app, ["tables", "-s", str(store), "-f", "no-such-thing"])
    assert none.exit_code == 0 and "No table matches 'no-such-thing'" in none.stdout


def test_show_readable_has_header_levels_merges_and_no_markup(store: Path) -> None:
    table_id = _id_of(store, "quarterly_results.xlsx#Results")
    result = runner.invoke(app, ["show", table_id, "--store", str(store)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not MARKUP.search(out)
    lines = out.splitlines()
    # two header levels: the merged group once, then the quarters under it
    top = next(line for line in lines if "Revenue" in line)
    assert top.count("Revenue") == 1 and "Operating profit" in top
    assert "Q1" in lines[lines.index(top) + 1] and "Q4" in lines[lines.index(top) + 1]
    assert "2 header levels" in out and "merged ranges" in out
    assert "Smart home" in out and "Nordlicht Devices" in out


def test_show_exports_typed_values_and_markdown_through_the_serializer(store: Path) -> None:
    table_id = _id_of(store, "school_enrollment.html")
    as_csv = runner.invoke(app, ["show", table_id, "-s", str(store), "--format", "csv"])
    assert as_csv.exit_code == 0
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0][:2] == ["District", "Primary / 2021"] and rows[1][1] == "4812"
    assert as_csv.stdout.splitlines()[1].startswith("Aldergrove,4812,")  # quoted only if needed
    raw = runner.invoke(app, ["show", table_id, "-s", str(store), "-F", "csv", "--raw"])
    assert list(csv.reader(io.StringIO(raw.stdout)))[1][1] == "4,812"
    as_json = runner.invoke(app, ["show", table_id, "-s", str(store), "--format", "json"])
    data = json.loads(as_json.stdout)
    assert data[0]["District"] == "Aldergrove" and data[0]["Secondary / 2023"] == 4105
    as_md = runner.invoke(app, ["show", table_id, "-s", str(store), "-F", "markdown"])
    assert as_md.stdout.startswith("| District | Primary / 2021 |")
    html = runner.invoke(app, ["show", table_id, "-s", str(store), "--format", "html"])
    assert html.exit_code == 2 and "csv" in html.output and not MARKUP.search(html.output)


def test_show_limits_rows_and_names_the_listing_command(tmp_path: Path) -> None:
    path = tmp_path / "big.duckdb"
    with Store(path) as st:
        rows = [["k", "v"]] + [[f"row{i}", str(i)] for i in range(80)]
        st.add_table(Table.from_rows(rows, source=Source("big.csv", "csv")), key="big.csv")
        (table_id,) = st.table_ids()
    short = runner.invoke(app, ["show", table_id, "-s", str(path)])
    assert "row49" in short.stdout and "row50" not in short.stdout
    assert "rows 1–50 of 80 (--offset 50: the next rows, --rows 0: all)" in short.stdout
    full = runner.invoke(app, ["show", table_id, "-s", str(path), "--rows", "0"])
    assert "row79" in full.stdout
    missing = runner.invoke(app, ["show", "tnope", "-s", str(path)])
    assert missing.exit_code == 2
    assert "no table 'tnope'" in missing.stderr
    assert f"`tablequest tables --store {path}` lists ids" in missing.stderr


def test_show_blanks_covered_cells_of_a_merge(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    grid = [["Region", "Sales", "Sales"], ["Region", "2023", "2024"], ["North", "1", "2"]]
    table = Table.from_rows(
        grid,
        n_header_rows=2,
        merges=[Merge(0, 0, 1, 0), Merge(0, 1, 0, 2)],
        source=Source("m.xlsx", "xlsx", "S"),
    )
    with Store(path) as st:
        table_id = st.add_table(table, key="m.xlsx")
    out = runner.invoke(app, ["show", table_id, "-s", str(path)]).stdout
    assert out.count("Sales") == 1 and out.count("Region") == 1 and "2024" in out


def test_search_prints_ids_and_no_html_markup(store: Path) -> None:
    result = runner.invoke(
        app,
        ["search", "enrollment primary secondary district", "-s", str(store), "-k", "3"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    school = _id_of(store, "school_enrollment.html")
    assert school in result.stdout
    assert "Primary / 2021" in result.stdout  # the HTML table previewed as Markdown
    assert not MARKUP.search(result.stdout)
    xlsx = runner.invoke(
        app, ["search", "Nordlicht Revenue Wearables", "-s", str(store), "-k", "1"]
    )
    assert xlsx.exit_code == 0 and "Wearables" in xlsx.stdout
    assert not MARKUP.search(xlsx.stdout)


def test_search_store_rule_and_old_spelling(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    question = "How long is the river Varna?"
    new = runner.invoke(app, ["search", question, "--store", str(store), "--json"])
    assert new.exit_code == 0 and "note:" not in new.stderr
    old = runner.invoke(app, ["search", str(store), question, "--json"])
    assert old.exit_code == 0 and json.loads(old.stdout) == json.loads(new.stdout)
    assert "deprecated" in old.stderr and "--store" in old.stderr
    assert len(old.stderr.strip().splitlines()) == 1
    monkeypatch.setenv("TABLEQUEST_STORE", str(store))
    env = runner.invoke(app, ["search", question, "--json"])
    assert env.exit_code == 0 and json.loads(env.stdout) == json.loads(new.stdout)
    listing = runner.invoke(app, ["tables", "--json"])
    assert len(json.loads(listing.stdout)) == 16


@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_search_refuses_a_blank_question(store: Path, question: str) -> None:
    result = runner.invoke(app, ["search", question, "-s", str(store)])
    assert result.exit_code == 2 and "question is empty" in result.stderr
    as_json = runner.invoke(app, ["search", question, "-s", str(store), "--json"])
    assert json.loads(as_json.stdout)["error"]["code"] == "usage"


@pytest.mark.parametrize("command", [["search", "gold"], ["tables"], ["show", "t123"]])
def test_a_missing_store_is_refused_and_never_created(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.duckdb"
    result = runner.invoke(app, [*command, "--store", str(missing)])
    assert result.exit_code == 2 and "no store at" in result.stderr
    assert "tablequest ingest" in result.stderr
    old = runner.invoke(app, [command[0], str(missing), *command[1:]])
    assert old.exit_code == 2 and "no store at" in old.stderr
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_the_default_store_is_not_created_either(isolated_env: Path) -> None:
    result = runner.invoke(app, ["tables"])
    assert result.exit_code == 2 and "corpus.duckdb" in result.stderr
    assert str(isolated_env) in result.stderr  # the user data dir, in the test's tmp dir
    assert not list(isolated_env.rglob("*.duckdb"))


def test_search_rerank_hint_names_its_own_options(store: Path) -> None:
    result = runner.invoke(app, ["search", "river", "-s", str(store), "-m", "rerank"])
    assert result.exit_code == 2
    assert "--rerank-url URL --rerank-model NAME" in result.stderr and "-o" not in result.stderr
    help_text = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout
    assert "--rerank-url" in help_text and "-m" in help_text


def test_too_many_words_is_a_usage_error(store: Path) -> None:
    result = runner.invoke(app, ["search", "how", "long", "river", "-s", str(store)])
    assert result.exit_code == 2 and "quote a question" in result.stderr


def test_ask_candidate_previews_show_no_markup(store: Path) -> None:
    """Without a model, seek's LLM-free part shows the candidates it would read: HTML
    tables as plain rows, a merged cell's value over every column and row it spans."""
    result = runner.invoke(
        app,
        ["ask", str(store), "Coastal Line departures CL 103 Aldergrove", "--method", "seek"],
        env={"COLUMNS": "200"},
    )
    assert "CL 103 | Regional (all stops) | 07:12" in result.stdout, result.output
    assert not MARKUP.search(result.stdout)


def test_tables_and_show_read_a_sharded_corpus(tmp_path: Path, store: Path) -> None:
    manifest = tmp_path / "corpus.json"
    done = runner.invoke(app, ["ingest", str(EXAMPLES), "-s", str(manifest), "--shards", "2"])
    assert done.exit_code == 0, done.output
    rows = _listing(manifest)
    assert [r["table_id"] for r in rows] == [r["table_id"] for r in _listing(store)]
    school = next(str(r["table_id"]) for r in rows if "school" in str(r["source"]))
    shown = runner.invoke(app, ["show", school, "-s", str(manifest), "-F", "csv"])
    assert shown.exit_code == 0 and shown.stdout.startswith("District,Primary / 2021")
    hits = runner.invoke(app, ["search", "enrollment district", "-s", str(manifest)])
    assert hits.exit_code == 0 and school in hits.stdout
    # every retriever ranks the sharded corpus as it ranks the same tables in one store
    args = ["search", "district", "-m", "phrase-hybrid", "--encoder", "hash", "--json"]
    sharded = runner.invoke(app, [*args, "-s", str(manifest)])
    assert sharded.exit_code == 0, sharded.output
    one = runner.invoke(app, [*args, "-s", str(store)])
    assert json.loads(sharded.stdout) == json.loads(one.stdout) != []
