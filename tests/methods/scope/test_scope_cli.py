"""`tablequest ask Q --store TABLE --method scope` end to end against the stub server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scope_helpers import DEFAULTS, stage_of
from typer.testing import CliRunner

from tablequest.cli.app import app
from tablequest.llm.stub import StubServer

TABLE = "Year,Division,League\n2001,2,USL A-League\n2004,2,USL A-League\n2005,2,USL First\n"


def reply(body: dict[str, Any]) -> str:
    return str(DEFAULTS[stage_of(body["messages"]).removesuffix("_repair")])


def ask(tmp_path: Path, *args: str) -> dict[str, Any]:
    path = tmp_path / "league.csv"
    path.write_text(TABLE, encoding="utf-8")
    with StubServer(reply, tokenize=True, max_model_len=8192) as stub:
        res = CliRunner().invoke(
            app,
            ["ask", "last A-League year?", "--store", str(path), "--method", "scope", "--llm-url",
             stub.url, "--model", "stub", "--trace-dir", str(tmp_path / "traces"), "--json",
             *args],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.output))


def test_ask_method_scope(tmp_path: Path) -> None:
    out = ask(tmp_path)
    assert out["status"] == "answered" and out["answer"] == "2004"
    assert out["method"] == "scope" and out["steps"] == 5
    details = out["details"]
    assert details["breakdown"] == {
        "question_type": "lookup",
        "scope": "local",
        "regime": "default",
    }
    assert details["tokenizer"] == "server:/tokenize" and details["context_tokens"] == 8192
    assert details["subtable"]["rows"] == [0, 1]
    assert [(e["row"], e["col"], e["value"]) for e in out["evidence"]] == [(1, 0, "2004")]
    events = [json.loads(x) for x in Path(out["trace"]).read_text().splitlines()]
    assert events[-1]["stage"] == "end" and events[-1]["subtable"]["rows"] == [0, 1]


def test_ask_method_scope_options_config_and_steps(tmp_path: Path) -> None:
    out = ask(tmp_path, "-c", "full-cot")
    assert out["steps"] == 1 and out["details"]["scope"]["used"] == "full"
    out = ask(tmp_path, "-o", "refine", "false", "--steps", "3")
    assert out["steps"] == 2 and out["details"]["scope"]["used"] == "full"
    assert out["status"] == "answered"
