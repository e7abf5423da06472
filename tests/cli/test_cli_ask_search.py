"""`ingest`, `search` and `ask` through the real CLI, the real HTTP client and a stub server."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.llm.stub import Fault, StubServer
from tablequest.trace import read_trace

# ask's documented exit statuses (README, "Exit statuses")
EXIT_FOR = {"answered": 0, "failed": 1, "insufficient": 3}

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "demo.duckdb"
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["tables_stored"] >= 12 and report["files_failed"] == []
    return path


def test_ingest_human_output_and_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.xlsx").write_text("this is text, not a workbook")
    result = runner.invoke(app, ["ingest", str(bad), "--store", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 1
    assert "broken.xlsx" in result.stdout and "Traceback" not in result.stdout
    (bad / "good.csv").write_text("a,b\n1,2\n")
    ok = runner.invoke(app, ["ingest", str(bad), "--store", str(tmp_path / "s.duckdb")])
    assert ok.exit_code == 0 and "1 tables stored" in ok.stdout
    strict = runner.invoke(
        app, ["ingest", str(bad), "--store", str(tmp_path / "s.duckdb"), "--strict"]
    )
    assert strict.exit_code == 1


def test_ingest_unopenable_store(tmp_path: Path) -> None:
    bogus = tmp_path / "x.duckdb"
    bogus.write_text("nope")
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "--store", str(bogus)])
    assert result.exit_code == 2 and "not a DuckDB store" in result.output


@pytest.mark.parametrize("method", ["grep", "bm25"])
def test_search_json(store: Path, method: str) -> None:
    result = runner.invoke(
        app,
        [
            "search",
            str(store),
            "Which nation won the most gold medals?",
            "-k",
            "3",
            "--method",
            method,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert 1 <= len(hits) <= 3
    assert set(hits[0]) == {"table_id", "score", "source", "format", "matched_rows"}
    assert "medals" in hits[0]["source"]


def test_search_human_output_and_errors(store: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["search", "--store", str(store), "How long is the river Varna?"])
    assert result.exit_code == 0 and "river_lengths" in result.stdout
    none = runner.invoke(app, ["search", "--store", str(store), "qwxyzzy"])
    assert "No table matches" in none.stdout
    bad = runner.invoke(app, ["search", "--store", str(store), "x", "--method", "magic"])
    assert bad.exit_code == 2
    missing = runner.invoke(app, ["search", str(tmp_path / "none.duckdb"), "x"])
    assert missing.exit_code == 2 and "no store at" in missing.output
    assert "tablequest ingest PATH... --store" in missing.output


def test_ask_without_model_runs_llm_free_part(store: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["ask", str(store), "How long is the river Varna?", "--trace-dir", str(tmp_path)]
    )
    assert result.exit_code == 4  # no model configured: the LLM-free part ran
    assert "No LLM configured" in result.stdout and "river_lengths" in result.stdout
    as_json = runner.invoke(
        app,
        ["ask", str(store), "How long is the river Varna?", "--json", "--trace-dir", str(tmp_path)],
    )
    payload = json.loads(as_json.stdout)
    assert payload["status"] == "failed" and payload["reason"] == "no LLM configured"
    assert payload["details"]["candidates"] and Path(payload["trace"]).exists()
    first = payload["details"]["candidates"][0]
    assert payload["tables_consulted"] == [] and "Varna" in first["preview"]


def _seek_reply(request: dict[str, object]) -> str:
    prompt = request["messages"][-1]["content"]  # type: ignore[index]
    if "Candidate tables" in prompt:
        return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
    if "grep patterns" in prompt:
        return json.dumps({"patterns": ["Varna", "river", "length"]})
    return json.dumps(
        {
            "status": "answered",
            "answer": "412",
            "evidence": [{"table": "Table_0", "column": "Length (km)", "value": "412"}],
        }
    )


def test_ask_end_to_end_through_http(store: Path, tmp_path: Path) -> None:
    with StubServer(_seek_reply) as server:
        args = [
            "ask",
            str(store),
            "How long is the river Varna?",
            "--llm-url",
            server.url,
            "--model",
            "stub",
            "--trace-dir",
            str(tmp_path),
            "--json",
        ]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        payload = json.loads(first.stdout)
        assert payload["status"] == "answered" and payload["answer"] == "412"
        assert payload["usage"]["calls"] == 3
        assert payload["tables_consulted"][0]["source"].endswith("river_lengths.parquet")
        requests_after_first = len(server.chat_requests)
        assert requests_after_first == 3
        second = runner.invoke(app, args)
        assert json.loads(second.stdout)["usage"]["cache_hits"] == 3
        assert len(server.chat_requests) == requests_after_first  # 0 HTTP requests
        human = runner.invoke(app, [*args[:-1], "--no-cache"])
        assert "412" in human.stdout  # 412 is in no cell: the table is not called evidence
        assert "answered from · " in human.stdout and "(no cell cited)" in human.stdout
        assert len(server.chat_requests) == requests_after_first + 3


@pytest.mark.parametrize(
    "config",
    [
        ["--steps", "5", "--method", "seek", "-c", "5s1-small"],
        ["--steps", "10", "--method", "seek", "-c", "10s3-big"],
        ["--steps", "10", "--method", "seek", "-c", "r5", "-o", "evidence", "medium"],
    ],
)
def test_ask_against_a_misbehaving_server(store: Path, tmp_path: Path, config: list[str]) -> None:
    replies = [
        "Sure! Here are some thoughts about rivers, no JSON at all.",
        "",
        Fault.truncated('{"patterns": ["Varna", "riv'),
        '{"action": "select", "selected_tables": ["Table_42", "t0000"]}',
        Fault.status(500),
        Fault.status(429, retry_after=0),
        '{"status": "insufficient", "answer": ""}',
    ] * 4
    steps = int(config[1])
    with StubServer(replies) as server:
        result = runner.invoke(
            app,
            [
                "ask",
                str(store),
                "How long is the river Varna?",
                "--llm-url",
                server.url,
                "--model",
                "stub",
                "--no-cache",
                "--trace-dir",
                str(tmp_path),
                "--json",
                *config,
            ],
        )
        assert result.exit_code == EXIT_FOR[json.loads(result.stdout)["status"]], result.output
        assert "Traceback" not in result.output
        payload = json.loads(result.stdout)
        assert (payload["answer"] is not None) == (payload["status"] == "answered"), payload
        assert payload["status"] != "failed" or payload["reason"], payload
        events = read_trace(payload["trace"])
        calls = [e for e in events if e["kind"] == "llm_call"]
        assert payload["usage"]["calls"] == len(calls) <= steps
        prompts = "\n".join(m["content"] for e in calls for m in e["messages"])
        assert not re.search(r"\.(csv|tsv|md|table|html|json|jsonl|xlsx|parquet|sqlite)\b", prompts)
        assert str(EXAMPLES) not in prompts and "examples" not in prompts


def test_ask_errors_are_one_line(store: Path, tmp_path: Path) -> None:
    bad_method = runner.invoke(app, ["ask", str(store), "q", "--method", "magic"])
    assert bad_method.exit_code == 2
    no_model = runner.invoke(app, ["ask", str(store), "q", "--llm-url", "http://127.0.0.1:9/v1"])
    # no model given and the server is unreachable: a run failure, as with --model
    assert no_model.exit_code == 1 and "cannot be listed" in no_model.output
    missing = runner.invoke(app, ["ask", str(tmp_path / "nothing"), "q"])
    assert missing.exit_code == 2 and "no store" in missing.output
    with StubServer(['{"answer": "x"}']) as server:
        direct = runner.invoke(
            app,
            ["ask", str(store), "q", "--method", "direct", "--llm-url", server.url, "--model", "m"],
        )
        assert direct.exit_code == 2 and "--table-id" in direct.output


def test_ask_on_a_table_file_and_direct_method(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("Nation,Gold\nNorway,16\nGermany,12\n")
    cited = '[{"table": "Table_0", "column": "Nation", "value": "Norway"}]'
    with StubServer([f'{{"answer": "Norway", "evidence": {cited}}}'] * 2) as server:
        result = runner.invoke(
            app,
            [
                "ask",
                str(table),
                "Who won most gold?",
                "--method",
                "bm25",
                "--llm-url",
                server.url,
                "--model",
                "m",
                "--json",
                "--trace-dir",
                str(tmp_path),
            ],
        )
        payload = json.loads(result.stdout)
        assert payload["answer"] == "Norway" and payload["evidence"][0]["value"] == "Norway"


def test_ask_dense_with_hash_encoder(store: Path, tmp_path: Path) -> None:
    with StubServer(['{"answer": "412"}']) as server:
        result = runner.invoke(
            app,
            [
                "ask",
                str(store),
                "river Varna length",
                "--method",
                "dense",
                "-o",
                "encoder",
                "hash",
                "--llm-url",
                server.url,
                "--model",
                "m",
                "--json",
                "--trace-dir",
                str(tmp_path),
            ],
        )
        assert json.loads(result.stdout)["status"] == "answered"


def test_ask_deadline_bounds_a_silent_server(store: Path, tmp_path: Path) -> None:
    with StubServer([Fault.delay(30.0, then='{"patterns": ["Varna"]}')] * 8) as server:
        started = time.monotonic()
        result = runner.invoke(
            app,
            [
                "ask", str(store), "How long is the river Varna?", "--method", "seek",
                "--llm-url", server.url, "--model", "stub", "--no-cache", "--deadline", "2",
                "--trace-dir", str(tmp_path), "--json",
            ],
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.output  # failed: the deadline passed
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["answer"] is None
    assert "deadline of 2 s" in payload["reason"]
    assert elapsed < 20  # one silent call cut at the deadline, not 4 tries × 60 s


def test_an_unreachable_model_ends_auto_at_its_first_table(store: Path, tmp_path: Path) -> None:
    """auto neither tries the next ranked table nor reports it as consulted once the model
    proved unreachable (issue 24, point 1: the question ends at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connection refused
    result = runner.invoke(
        app,
        [
            "ask", "Which nation won the most gold medals?", "--store", str(store),
            "--llm-url", url, "--model", "m", "--trace-dir", str(tmp_path), "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and f"{url}: connection refused" in payload["reason"]
    assert payload["usage"]["requests"] == 1
    consulted = payload["tables_consulted"]
    assert len(consulted) == 1 and consulted[0]["source"].endswith("northern_games_medals.json")
    assert payload["final_table"] == consulted[0]
