"""Honest failures (issue 24): an unreachable or misconfigured model ends the question at
once with one line naming the URL and the cause, for every method and through the CLI; ask's
exit statuses; blank questions refused; ``--table-id`` honoured by corpus methods."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest import Store, ingest
from tablequest.cli import app
from tablequest.errors import BadValue
from tablequest.llm import Deadline, Fault, Instrumented, ModelUnreachable, OpenAICompatible
from tablequest.llm.stub import StubServer
from tablequest.methods.registry import get_method
from tablequest.methods.run import SourceError, ask
from tablequest.trace import read_trace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
QUESTION = "Which nation won the most gold medals?"
METHODS = ["auto", "seek", "rag", "scope", "research", "direct", "bm25", "no-table"]
runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "corpus.duckdb"
    with Store(path) as st:
        ingest(st, [EXAMPLES])
    return path


@pytest.fixture(scope="module")
def medals_id(store: Path) -> str:
    with Store(store, read_only=True) as st:
        return st.ids_for_path(str(EXAMPLES / "northern_games_medals.json"))[0]


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("method", METHODS)
def test_unreachable_model_ends_the_question_at_once(
    store: Path, medals_id: str, method: str, tmp_path: Path
) -> None:
    url = refused_url()
    llm = OpenAICompatible(url, "m", max_retries=3)
    one_table = get_method(method).input in ("table", "tables")
    result = ask(QUESTION, store, method=method, llm=llm, trace_dir=tmp_path,
                 table_ids=[medals_id] if one_table else ())  # fmt: skip
    assert result.status == "failed" and result.answer is None
    assert result.reason == f"cannot reach the model server {url}: connection refused " \
        "(is the server running, and is the port right?)"  # fmt: skip
    assert llm.http_requests == 1  # no retry, and no later call of the question was sent
    events = read_trace(result.trace_path or "")
    assert sum(e.get("requests", 0) for e in events if e["kind"] == "llm_call") == 1


def test_later_calls_sharing_the_question_are_refused_without_a_request() -> None:
    url = refused_url()
    backend = OpenAICompatible(url, "m")
    deadline = Deadline(None)
    first = Instrumented(backend, deadline=deadline)
    with pytest.raises(ModelUnreachable):
        first.chat([{"role": "user", "content": "hi"}])
    second = Instrumented(backend, deadline=deadline)  # e.g. a router's sub-method
    with pytest.raises(ModelUnreachable, match="connection refused"):
        second.chat([{"role": "user", "content": "hi"}])
    assert backend.http_requests == 1


def ask_cli(store: str, question: str, *args: str) -> Any:
    return runner.invoke(app, ["ask", question, "--store", store, *args])


def test_cli_old_spelling_still_works_with_a_note(store: Path, tmp_path: Path) -> None:
    out = runner.invoke(app, ["ask", str(store), QUESTION, "--trace-dir", str(tmp_path)])
    assert out.exit_code == 4  # no model configured, but the source was understood
    assert f"use `tablequest ask QUESTION --store {store}`" in out.stderr


def test_cli_missing_store_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.duckdb"
    out = ask_cli(str(missing), QUESTION)
    assert out.exit_code == 2 and "no store, table file or folder at" in out.output
    assert not missing.exists()


def test_cli_unreachable_model_exits_1_naming_the_url(store: Path, tmp_path: Path) -> None:
    url = refused_url()
    human = ask_cli(str(store), QUESTION, "--llm-url", url, "--model", "m",
                    "--trace-dir", str(tmp_path))  # fmt: skip
    assert human.exit_code == 1, human.output
    assert "connection refused" in human.output and url in human.output
    out = ask_cli(str(store), QUESTION, "--llm-url", url, "--model", "m", "--json",
                  "--trace-dir", str(tmp_path), "--method", "seek")  # fmt: skip
    assert out.exit_code == 1
    payload = json.loads(out.stdout)
    assert payload["status"] == "failed" and url in payload["reason"]
    assert payload["usage"]["requests"] == 1


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (Fault.status(401, message="invalid api key"), "refused the API key"),
        (Fault.status(403, message="forbidden"), "refused the API key"),
        (Fault.status(404, message="The model `m` does not exist."), "does not serve the model"),
        (Fault.status(400, message="model 'm' not found, try pulling it"), "does not serve"),
    ],
    ids=["401", "403", "404", "400-unknown-model"],
)
def test_cli_rejected_key_or_unknown_model_fails_after_one_request(
    store: Path, medals_id: str, tmp_path: Path, fault: Fault, words: str
) -> None:
    with StubServer([fault], default_reply="should never be asked") as stub:
        out = ask_cli(str(store), QUESTION, "--llm-url", stub.url, "--model", "m", "--json",
                      "--no-cache", "--trace-dir", str(tmp_path))  # fmt: skip
        assert len(stub.chat_requests) == 1
    assert out.exit_code == 1, out.output
    payload = json.loads(out.stdout)
    assert payload["status"] == "failed" and words in payload["reason"]
    assert stub.url.rstrip("/") in payload["reason"]


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        ('{"status": "answered", "answer": "Norway"}', "answered", 0),
        ('{"status": "insufficient", "answer": ""}', "insufficient", 3),
    ],
)
def test_cli_exit_status_says_what_happened(
    store: Path, medals_id: str, tmp_path: Path, reply: str, status: str, code: int
) -> None:
    with StubServer([], default_reply=reply) as stub:
        out = ask_cli(str(store), QUESTION, "--method", "direct", "--table-id", medals_id,
                      "--llm-url", stub.url, "--model", "m", "--json", "--no-cache",
                      "--trace-dir", str(tmp_path))  # fmt: skip
    assert json.loads(out.stdout)["status"] == status
    assert out.exit_code == code, out.output


def test_cli_no_model_exits_4(store: Path, tmp_path: Path) -> None:
    out = ask_cli(str(store), QUESTION, "--trace-dir", str(tmp_path))
    assert out.exit_code == 4, out.output
    assert "tablequest doctor" in out.output or "--llm-url" in out.output


@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_cli_blank_question_is_a_usage_error(store: Path, question: str) -> None:
    out = ask_cli(str(store), question)
    assert out.exit_code == 2
    assert "question is empty" in out.output


@pytest.mark.parametrize("method", ["seek", "bm25", "auto"])
def test_table_id_restricts_corpus_methods(
    store: Path, medals_id: str, method: str, tmp_path: Path
) -> None:
    # a question about rivers: the corpus has a river table, but the user named the medals
    reply = '{"status": "insufficient", "answer": ""}'
    with StubServer([], default_reply=reply) as stub:
        llm = OpenAICompatible(stub.url, "m")
        result = ask("How long is the river Varna?", store, method=method, llm=llm,
                     table_ids=[medals_id], trace_dir=tmp_path)  # fmt: skip
    consulted = {*result.tables_consulted, *result.sources}
    assert consulted <= {medals_id}
    prompts = " ".join(m["content"] for r in stub.chat_requests for m in r["messages"])
    assert "Varna" not in prompts.replace("How long is the river Varna?", "")


def test_table_id_errors_name_the_fix(store: Path) -> None:
    with pytest.raises(SourceError, match=r"no table 'nope'.*tablequest tables --store"):
        ask(QUESTION, store, method="seek", table_ids=["nope"])
    with pytest.raises(SourceError, match="without tables"):
        ask(QUESTION, store, method="no-table", table_ids=["nope"])
    # the library's words reach the API and MCP too: they name `table_ids` and `list_tables`
    with pytest.raises(
        SourceError, match=r"pass --table-id ID \(`table_ids` in the API and MCP;.*list_tables"
    ):
        ask(QUESTION, store, method="scope")


@pytest.mark.parametrize("question", ["", "  ", "\n\t"])
def test_library_refuses_a_blank_question(store: Path, question: str) -> None:
    with pytest.raises(BadValue, match="the question is empty"):
        ask(question, store)


def test_cli_failed_ask_shows_no_table_as_evidence(store: Path, tmp_path: Path) -> None:
    url = refused_url()
    out = ask_cli(str(store), "How long is the river Varna?", "--llm-url", url, "--model",
                  "m", "--trace-dir", str(tmp_path))  # fmt: skip
    assert out.exit_code == 1
    assert "evidence ·" not in out.stdout and "answered from ·" not in out.stdout


def test_auto_searches_the_sheets_of_a_multi_table_file(tmp_path: Path) -> None:
    book = EXAMPLES / "quarterly_results.xlsx"
    auto = ask_cli(str(book), "Revenue of Phones in Q4?", "--json", "--trace-dir",
                   str(tmp_path))  # fmt: skip
    assert auto.exit_code == 4, auto.output  # ran (no model), not refused
    routes = json.loads(auto.stdout)["details"]["routes"]
    assert len(routes) == 2  # both sheets considered
    scope = ask_cli(str(book), "Revenue of Phones in Q4?", "-m", "scope")
    assert scope.exit_code == 2
    assert "sheet Results 2023" in scope.output and "--table-id" in scope.output


def test_cli_missing_table_file_is_not_called_a_store(tmp_path: Path) -> None:
    out = ask_cli(str(tmp_path / "typo.csv"), QUESTION)
    assert out.exit_code == 2
    assert "no store, table file or folder at" in out.output
    assert not (tmp_path / "typo.csv").exists()


@pytest.mark.parametrize("method", ["scope", "seek"])
def test_an_ask_without_a_model_ends_its_trace_with_its_status(
    method: str, store: Path, medals_id: str, tmp_path: Path
) -> None:
    """The trace list reads a trace's status from its last events: a method that never ran
    (no model) still ends with one, not "unfinished"."""
    from tablequest.serve.tracelist import trace_row

    with Store(store, read_only=True) as st:
        result = ask(QUESTION, st, method=method, table_ids=[medals_id], trace_dir=tmp_path)
    assert result.status == "failed" and result.trace_path is not None
    events = read_trace(result.trace_path)
    assert events[-1]["kind"] == "decision" and events[-1]["stage"] in ("result", "end")
    assert events[-1]["status"] == "failed"
    assert trace_row("t", Path(result.trace_path)).status == "failed"


def test_a_method_refused_at_build_starts_no_trace(store: Path, tmp_path: Path) -> None:
    """A refused ask (rerank without its server) leaves no trace file to list as unfinished."""
    with Store(store, read_only=True) as st, pytest.raises(BadValue, match="rerank"):
        ask(QUESTION, st, method="rerank", trace_dir=tmp_path)
    assert list(tmp_path.glob("*.jsonl")) == []
