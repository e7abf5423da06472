"""`tablequest ask FILE "q" --method rag` through typer, the real HTTP client and a stub server."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.rag import TableRAG, embedding_cache_path
from tablequest.trace import read_trace

# ask's documented exit statuses (README, "Exit statuses")
EXIT_FOR = {"answered": 0, "failed": 1, "insufficient": 3}

runner = CliRunner()
Q = "What is the average price for wallets?"
CATS = ["wallet", "handbag", "belt", "scarf"]


def write_orders(path: Path, n: int = 120) -> float:
    """An orders CSV; returns the average wallet price."""
    rows, wallet = [], []
    for i in range(n):
        cat = CATS[i % len(CATS)]
        price = 10 + (i * 37) % 500 + 0.5
        if cat == "wallet":
            wallet.append(price)
        rows.append([f"A{i:04d}", cat, f"${price:,.2f}", str(1 + i % 3), ["Pune", "Agra"][i % 2]])
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["order_no", "category", "item_total", "quantity", "ship_city"])
        writer.writerows(rows)
    return sum(wallet) / len(wallet)


def react_server(answer: str | None = None) -> Any:
    """Schema queries, cell queries, then a 3-step ReAct run over the sandbox."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "suggest some column names" in prompt:
            return '["product category", "price"]'
        if "extract some keywords" in prompt:
            return '["wallet"]'
        step = prompt.split("Begin!")[-1].count("\nObservation: ")
        if step == 0:
            return (
                "Thought: clean the prices\nAction: df['p'] = df['item_total']"
                ".str.replace('$', '').str.replace(',', '').astype(float)"
            )
        if step == 1:
            return "Thought: filter\nAction: df[df['category'] == 'wallet']['p'].mean()"
        found = re.findall(r"Observation: (.*)\n", prompt)[-1]
        return f"Thought: done\nFinal Answer: {answer or found}"

    return reply


def ask(path: Path, tmp_path: Path, *extra: str, question: str = Q) -> Any:
    return runner.invoke(
        app,
        ["ask", str(path), question, "--method", "rag", "--trace-dir", str(tmp_path), *extra],
    )


def test_rag_without_model_previews_retrieval(tmp_path: Path) -> None:
    table = tmp_path / "orders.csv"
    write_orders(table)
    human = ask(table, tmp_path, "-o", "encoder", "bm25", question="average item_total of wallet")
    assert human.exit_code == 4, human.output  # no model configured
    assert "No LLM configured" in human.stdout and "item_total" in human.stdout
    assert "Traceback" not in human.output
    result = ask(table, tmp_path, "-o", "encoder", "bm25", "--json", question="total of wallet")
    assert result.exit_code == 4, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["reason"] == "no LLM configured"
    assert ["category", "wallet"] in [
        [c["column"], c["value"]] for c in payload["details"]["retrieval"]["cells"]
    ]
    assert payload["details"]["retrieval"]["columns"][0]["column"] == "item_total"
    assert payload["details"]["databases"]["shape"] == [120, 5]
    assert payload["tables_consulted"][0]["source"].endswith("orders.csv")
    events = read_trace(payload["trace"])
    assert any(e["kind"] == "fallback" for e in events) and events[-1]["stage"] == "end"
    assert not [e for e in events if e["kind"] in ("exec", "llm_call")]


def test_rag_end_to_end_with_api_encoder_and_embedding_cache(tmp_path: Path) -> None:
    table = tmp_path / "orders.csv"
    expected = write_orders(table)
    with StubServer(react_server(), embedding_dim=8) as stub:
        args = ["--llm-url", stub.url, "--model", "stub", "-o", "encoder", "api",
                "-o", "embed_model", "emb", "--json"]  # fmt: skip
        first = ask(table, tmp_path, *args)
        assert first.exit_code == 0, first.output
        payload = json.loads(first.stdout)
        assert payload["status"] == "answered"
        assert float(payload["answer"]) == pytest.approx(expected)
        assert (
            len(payload["details"]["samples"][0]["retrieved_cells"]) == 5
        )  # K = 5, one cell query
        events = read_trace(payload["trace"])
        assert [e["ok"] for e in events if e["kind"] == "exec"] == [True, True]
        encode = [e for e in events if e.get("stage") == "encode"]
        assert encode[0]["cache_hits"] == {"schema": False, "cell": False}
        assert embedding_cache_path().is_file()
        second = ask(table, tmp_path, *args, "--no-cache")  # no LLM cache; no embedding cache
        again = json.loads(second.stdout)
        assert again["answer"] == payload["answer"] and again["usage"]["cache_hits"] == 0
        third = ask(table, tmp_path, *args)
        cached = [e for e in read_trace(json.loads(third.stdout)["trace"])
                  if e.get("stage") == "encode"]  # fmt: skip
        assert cached[0]["cache_hits"] == {"schema": True, "cell": True}
        human = ask(table, tmp_path, *args[:-1], "--no-cache")
    assert human.exit_code == 0 and "answered" in human.stdout and "trace:" in human.stdout


def test_rag_self_consistency_votes(tmp_path: Path) -> None:
    table = tmp_path / "orders.csv"
    write_orders(table, n=40)
    answers = iter(["7", "8", "7"])
    solver_calls: list[int] = []

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "suggest some column names" in prompt:
            return '["price"]'
        if "extract some keywords" in prompt:
            return '["wallet"]'
        solver_calls.append(1)
        assert body["temperature"] == pytest.approx(0.8)
        return f"Thought: ok\nFinal Answer: {next(answers)}"

    with StubServer(reply) as stub:
        result = ask(table, tmp_path, "--llm-url", stub.url, "--model", "m", "-o", "encoder",
                     "bm25", "-o", "sc", "3", "--json")  # fmt: skip
    payload = json.loads(result.stdout)
    assert payload["answer"] == "7" and payload["details"]["votes"] == {"7": 2, "8": 1}
    assert len(payload["details"]["samples"]) == 3 and len(solver_calls) == 3


def test_rag_baselines_through_the_cli(tmp_path: Path) -> None:
    table = tmp_path / "orders.csv"
    write_orders(table, n=1500)  # 7,500 cells: ReadTable needs ~22,500 tokens > 16,385
    with StubServer(react_server("42")) as stub:
        common = ["--llm-url", stub.url, "--model", "m", "-o", "encoder", "bm25", "--json"]
        refused = ask(table, tmp_path, *common, "-o", "baseline", "read-table")
        payload = json.loads(refused.stdout)
        assert payload["status"] == "failed" and "context budget" in payload["reason"]
        assert stub.chat_requests == []  # refused before any prompt
        schema = json.loads(ask(table, tmp_path, *common, "-o", "baseline", "read-schema").stdout)
        assert schema["status"] == "answered" and schema["details"]["config"] == "read-schema"
        prompt = stub.chat_requests[0]["messages"][-1]["content"]
        assert "item_total" in prompt and "A0001" not in prompt
        rows = json.loads(ask(table, tmp_path, *common, "-o", "baseline", "rand-rows").stdout)
        assert rows["details"]["config"] == "rand-rows,K=30" and rows["answer"] == "42"
        rowcol = ask(table, tmp_path, *common, "-o", "baseline", "rowcol", "--no-cache")
        assert json.loads(rowcol.stdout)["details"]["config"] == "rowcol,K=30"


@pytest.mark.parametrize(
    "replies",
    [
        ["Let me talk about wallets instead.", "{[not json", "no action here"] * 6,
        [Fault.malformed_json(), Fault.empty_choices(), Fault.status(500)] * 6,
        [Fault.delay(2.0, '["price"]')] * 12,
        [Fault.truncated('["pri'), '["wallet"]', "Thought: x\nAction: df[", Fault.status(503)] * 4,
    ],
    ids=["malformed-text", "malformed-http", "timeouts", "mixed"],
)
def test_rag_against_a_misbehaving_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[Any]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tablequest.toml").write_text("[llm]\ntimeout = 0.5\nmax_retries = 0\n")
    table = tmp_path / "orders.csv"
    write_orders(table, n=60)
    with StubServer(replies, default_reply="still no answer") as stub:
        result = ask(table, tmp_path, "--llm-url", stub.url, "--model", "m", "-o", "encoder",
                     "bm25", "--no-cache", "--steps", "3", "--json")  # fmt: skip
    assert result.exit_code == EXIT_FOR[json.loads(result.stdout)["status"]], result.output
    assert "Traceback" not in result.output
    payload = json.loads(result.stdout)
    assert payload["status"] in ("failed", "insufficient") and payload["answer"] is None
    assert payload["reason"]
    events = read_trace(payload["trace"])
    assert events[-1]["stage"] == "end"
    calls = [e for e in events if e["kind"] == "llm_call"]
    assert payload["usage"]["calls"] == len(calls) <= 2 * 2 + 3  # expansion (+repairs), 3 steps


def test_rag_on_a_store_table(tmp_path: Path) -> None:
    write_orders(tmp_path / "orders.csv", n=30)
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    store = tmp_path / "s.duckdb"
    ingest = runner.invoke(app, ["ingest", str(tmp_path), "--store", str(store), "--json"])
    assert ingest.exit_code == 0, ingest.output
    ambiguous = ask(store, tmp_path, "-o", "encoder", "bm25")
    assert ambiguous.exit_code == 2 and "--table-id" in ambiguous.output
    ids = json.loads(
        runner.invoke(app, ["search", "--store", str(store), "wallet", "--json"]).stdout
    )
    tid = next(h["table_id"] for h in ids if h["source"].endswith("orders.csv"))
    with StubServer(['["price"]', '["wallet"]', "Thought: t\nFinal Answer: 5"]) as stub:
        result = ask(store, tmp_path, "--table-id", tid, "--llm-url", stub.url, "--model",
                     "m", "-o", "encoder", "bm25", "--json")  # fmt: skip
    payload = json.loads(result.stdout)
    assert payload["answer"] == "5" and payload["final_table"]["table_id"] == tid


def test_rag_option_errors_are_one_line(tmp_path: Path) -> None:
    table = tmp_path / "orders.csv"
    write_orders(table, n=10)
    cases = [
        (["-o", "encoder", "nope"], "unknown encoder 'nope'"),
        (["-o", "baseline", "magic"], "option 'baseline' of method rag"),
        (
            ["-o", "encodr", "bm25"],
            "unknown option 'encodr' for method rag (did you mean 'encoder'?)",
        ),
        (["-o", "encoder", "api"], "embed_model"),
        (["--table-id", "0", "--table-id", "1"], "one table"),
        (["-o", "budget", "0", "-o", "encoder", "bm25"], "option 'budget' of method rag"),
        (["--table-id", "9", "-o", "encoder", "bm25"], "no table '9'"),
        (["-c", "B=x"], "cannot read TableRAG config 'B=x'"),
    ]
    for extra, message in cases:
        result = ask(table, tmp_path, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output and "Traceback" not in result.output
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    folder = ask(tmp_path, tmp_path, "-o", "encoder", "bm25")
    assert folder.exit_code == 2 and "holds 2 tables; pass --table-id" in folder.output
    dense = runner.invoke(
        app, ["ask", str(table), "q", "--method", "dense", "-o", "encoder", "bm25"]
    )
    assert dense.exit_code == 2 and "needs a vector encoder" in dense.output


def test_rag_unexpected_error_is_a_failed_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "orders.csv"
    write_orders(table, n=10)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(TableRAG, "answer", boom)
    with StubServer([]) as stub:
        result = ask(table, tmp_path, "--llm-url", stub.url, "--model", "m", "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["reason"] == "RuntimeError: disk on fire"
    assert read_trace(payload["trace"])[-1]["kind"] == "error"


def test_embedding_cache_falls_back_when_unusable(tmp_path: Path) -> None:
    embedding_cache_path().parent.mkdir(parents=True, exist_ok=True)
    embedding_cache_path().write_text("not a duckdb file")
    table = tmp_path / "orders.csv"
    write_orders(table, n=10)
    result = ask(table, tmp_path, "-o", "encoder", "bm25", "--json")
    assert result.exit_code == 4, result.output  # no model configured
    events = read_trace(json.loads(result.stdout)["trace"])
    assert any(e.get("stage") == "embedding_cache" for e in events)


REVENUE = (
    "Region,Q1,Q2,Q3,Q4,H2\nNorth,100,110,120,130,250\nSouth,120,130,140,150,205\n"
    "East,90,95,100,110,210\nWest,50,60,205,70,275\n"
)


def lookup_server(final: str | None = None) -> Any:
    """One lookup action, then the observed value (or `final`) as the Final Answer."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "suggest some column names" in prompt:
            return '["Q3"]'
        if "extract some keywords" in prompt:
            return '["West"]'
        if "\nObservation: " not in prompt.split("Begin!")[-1]:
            return "Thought: look it up\nAction: df.loc[df.Region == 'West', 'Q3'].iloc[0]"
        found = re.findall(r"Observation: (.*)\n", prompt)[-1]
        return f"Thought: done\nFinal Answer: {final or found}"

    return reply


def test_rag_evidence_is_the_cell_its_code_read(tmp_path: Path) -> None:
    """Issue 36: West's Q3 and South's H2 both hold 205; the answer's evidence is the one
    cell the code read, verified; an answer the code did not compute is not verified."""
    table = tmp_path / "revenue.csv"
    table.write_text(REVENUE)
    question = "What was the revenue of the West region in Q3?"
    args = ["-o", "encoder", "bm25", "--json", "--require-verified"]
    with StubServer(lookup_server()) as stub:
        out = ask(table, tmp_path, "--llm-url", stub.url, "--model", "m", *args, question=question)
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert payload["answer"] == "205" and payload["verified"] == "verified"
    cells = [(e["row"], e["col"], e["value"], e["how"]) for e in payload["evidence"]]
    assert cells == [(3, 3, "205", "computed")]  # never South's H2 (1, 5)
    events = read_trace(payload["trace"])
    assert [e["verified"] for e in events if e.get("stage") == "verify"] == ["verified"]
    with StubServer(lookup_server("210")) as stub:
        out = ask(table, tmp_path, "--llm-url", stub.url, "--model", "m", *args, question=question)
    assert out.exit_code == 5, out.output  # answered, not verified, and it says so
    assert "unverified, not verified (--require-verified)" in out.stderr
    payload = json.loads(out.stdout)
    assert payload["verified"] == "unverified" and payload["evidence"] == []
