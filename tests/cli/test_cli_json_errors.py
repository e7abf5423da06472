"""With --json every command's errors are JSON on stdout (issue 12, defects 1, 4 and 8).

`{"error": {"code", "message"}}` on stdout, one `error:` line on stderr, no traceback; status
2 for bad input, 1 for a run that could not complete.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.testdata import free_port
from typer.testing import CliRunner

from tablequest.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
runner = CliRunner()


def _error(args: list[str], code: str, status: int) -> str:
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == status, result.output
    payload = json.loads(result.stdout)
    assert payload["error"]["code"] == code, payload
    assert "error:" in result.stderr and "Traceback" not in result.output
    return str(payload["error"]["message"])


def test_not_a_store_is_refused_by_ingest_and_search(tmp_path: Path) -> None:
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n")
    message = _error(["ingest", str(EXAMPLES), "--store", str(csv), "--json"], "not_a_store", 2)
    assert "a text file" in message and csv.read_text() == "a,b\n1,2\n"
    _error(["search", str(csv), "gold", "--json"], "not_a_store", 2)


def test_a_held_store_is_named_by_ask_search_and_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["ingest", str(EXAMPLES), "--store", str(store)]).exit_code == 0
    code = textwrap.dedent(
        f"""
        import sys
        from tablequest.corpus import Store
        with Store({str(store)!r}):
            print("open", flush=True)
            sys.stdin.read()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        monkeypatch.setenv("TABLEQUEST_LOCK_TIMEOUT", "0")
        message = _error(["ask", str(store), "gold?", "--json"], "store_locked", 1)
        assert f"PID {holder.pid}" in message
        _error(["search", "--store", str(store), "gold", "--json"], "store_locked", 1)
        token = tmp_path / "token"
        served = runner.invoke(
            app,
            ["serve", "--store", str(store), "--token-file", str(token),
             "--port", str(free_port())],
        )  # fmt: skip
        assert isinstance(served.exception, SystemExit), served.exception  # no traceback
        assert served.exit_code == 1 and f"PID {holder.pid}" in served.stderr
        assert "error:" in served.stderr and "Traceback" not in served.output
    finally:
        holder.communicate("", timeout=120)


def test_eval_cannot_build_or_write(evalrun_wtq: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    base = ["eval", "retrieval", "wtq", "--data", str(evalrun_wtq), "--json"]
    message = _error([*base, "--cache-dir", str(blocker / "cache")], "usage", 2)
    assert "cannot build the wtq corpus" in message
    run = ["eval", "run", "wtq", "--data", str(evalrun_wtq), "--method", "no-table", "--json"]
    llm = ["--llm-url", "http://127.0.0.1:9/v1", "--model", "m", "--limit", "1"]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    message = _error([*run, *llm, *cache, "--out", str(blocker / "run.jsonl")], "usage", 2)
    assert "cannot write" in message and "run.jsonl" in message


def test_other_commands(tmp_path: Path) -> None:
    _error(["methods", "nope", "--json"], "unknown_method", 2)
    _error(["trace", "show", str(tmp_path / "none.jsonl"), "--json"], "trace", 2)
    cleared = runner.invoke(app, ["cache", "clear", "--dir", str(tmp_path / "c"), "--json"])
    assert cleared.exit_code == 0 and json.loads(cleared.stdout)["removed"] == 0


def test_research_memory_and_subtab(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    out = ["--out", str(blocker / "out")]
    message = _error(["research", str(table), "sum of b?", *out, "--json"], "usage", 2)
    assert "cannot create the output folder" in message
    missing = ["research", str(tmp_path / "none.csv"), "q", "--out", str(tmp_path / "o"), "--json"]
    _error(missing, "usage", 2)
    _error(["research", str(table), "q", *out, "-o", "nope=1", "--json"], "bad_option", 2)
    _error(["memory", "show", "--store", str(tmp_path / "none.duckdb"), "--json"], "usage", 2)
    _error(["memory", "show", "--store", str(table), "--json"], "not_a_store", 2)
    ref = ["--ref", str(tmp_path / "none.jsonl"), "--json"]
    message = _error(["eval", "score-subtab", str(table), *ref], "usage", 2)
    assert "cannot read references" in message
    build = ["eval", "build-subtab", "nope", "--data", str(tmp_path), "--out", str(blocker)]
    _error([*build, "--approx", "--json"], "usage", 2)
