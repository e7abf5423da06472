"""`tablequest ask` with a model that ignores the answer format (issue 36, must 4): the
question fails (exit 1) with the reason, never "answered" with the model's greeting."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store
from tablequest.llm.stub import StubServer
from tablequest.table import Source, Table
from tablequest.trace import read_trace

GREETING = "Hello! I am a helpful assistant. How can I help you today?"
REASON = "the model's reply had no answer in the expected format"
MEDALS = Table.from_rows(
    [["Nation", "Gold", "Silver"], ["Norway", "16", "8"], ["Germany", "12", "10"]],
    title="medals", source=Source(format="csv"),
)  # fmt: skip


def test_research_with_a_greeting_model_exits_1_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "corpus.duckdb"
    with Store(path) as store:
        store.add_table(MEDALS, key=str(tmp_path / "medals.csv"))
        tid = store.ids_for_path(str(tmp_path / "medals.csv"))[0]
    args = ["ask", "Which nation won the most gold medals?", "--store", str(path),
            "--method", "research", "--table-id", tid, "--model", "m", "--no-cache",
            "--trace-dir", str(tmp_path), "-o", "memory=off"]  # fmt: skip
    with StubServer([], default_reply=GREETING) as stub:
        human = CliRunner().invoke(app, [*args, "--llm-url", stub.url])
        as_json = CliRunner().invoke(app, [*args, "--llm-url", stub.url, "--json"])
    assert human.exit_code == 1, human.output
    assert REASON in human.output and "Hello!" not in human.stdout
    assert as_json.exit_code == 1, as_json.output
    payload = json.loads(as_json.stdout)
    assert (payload["status"], payload["answer"], payload["reason"]) == ("failed", None, REASON)
    events = read_trace(payload["trace"])
    kept = [e for e in events if e["kind"] == "fallback" and e.get("reason") == REASON]
    assert kept and kept[-1]["reply"] == GREETING
