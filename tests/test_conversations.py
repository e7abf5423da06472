"""Issue 39, "Follow-up questions": conversations kept per store, a follow-up rewritten into
a standalone question by one model call (in the trace, shown to the user) that prefers the
previous answer's tables, through the library, the CLI (`chat`, `ask --continue`,
`conversations`), the API (`conversation_id`) and Python (`tq.chat()`).

Every test runs in process over a two-table store written here, with a `Scripted` model and
a registered method ("convtest") that answers from the sales table when it is given it,
recording the question and the tables it saw."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tablequest
from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.llm import Scripted, register_llm_backend
from tablequest.methods import (
    Conversations,
    MethodOptions,
    Result,
    UnknownConversation,
    ask,
    register_method,
    unregister_method,
)
from tablequest.table import CellRef
from tablequest.trace import read_trace

runner = CliRunner()
SEEN: list[tuple[str, list[str]]] = []
"""(question, table ids of the source) per answer of the test method."""
REWRITTEN = "What was the revenue of the North region in Q4?"


class Recording:
    """Answers "42" from the sales table (else the first) of its source, citing a cell."""

    name = "convtest"

    def __init__(self, options: Any = None, context: Any = None) -> None:
        pass

    def answer(self, question: str, source: Any, *, task: Any = "tableqa", budget: Any = None,
               trace: Any = None) -> Result:  # fmt: skip
        ids = list(source.table_ids())
        SEEN.append((question, ids))
        final = next((t for t in ids if source.source(t).path.endswith("sales.csv")), ids[0])
        return Result(answer="42", status="answered", tables_consulted=ids, final_table=final,
                      evidence=[CellRef(final, 1, 1, "42", "cited")])  # fmt: skip

    def close(self) -> None:
        pass


@pytest.fixture
def method() -> Iterator[None]:
    SEEN.clear()
    register_method("convtest", Recording, MethodOptions, input="corpus", needs_llm=False,
                    description="records what it was asked")  # fmt: skip
    yield
    unregister_method("convtest")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "sales.csv").write_text("region,Q3,Q4\nNorth,42,50\nSouth,7,9\n")
    (data / "rivers.csv").write_text("river,length km\nVarna,120\nRhine,1230\n")
    path = tmp_path / "s.duckdb"
    with Store(path) as opened:
        assert ingest(opened, [data]).ok
    return path


def sales_id(store: Path) -> str:
    with Store(store, read_only=True) as opened:
        return next(t for t in opened.table_ids() if opened.source(t).path.endswith("sales.csv"))


def rewriter() -> Scripted:
    """Answers every rewrite request with `REWRITTEN`."""
    return Scripted(lambda messages, params: REWRITTEN)


def test_a_follow_up_is_rewritten_once_prefers_the_previous_tables_and_is_kept(
    store: Path, method: None, tmp_path: Path
) -> None:
    llm = rewriter()
    kept = Conversations.for_source(store)
    assert kept.folder == store.with_name("s.duckdb.conversations")
    conv = kept.new()
    first = ask("What was North's Q3 revenue?", store, method="convtest", llm=llm,
                conversation=conv, trace_dir=tmp_path / "t")  # fmt: skip
    assert llm.calls == [] and first.to_json()["rewritten_question"] is None  # not rewritten
    assert first.to_json()["conversation_id"] == conv.id
    assert len(SEEN[0][1]) == 2  # the whole store
    follow = ask("and for Q4?", store, method="convtest", llm=llm, conversation=conv,
                 trace_dir=tmp_path / "t")  # fmt: skip
    assert len(llm.calls) == 1  # one rewrite call
    prompt = llm.calls[0].prompt
    assert "North's Q3 revenue" in prompt and "A1: 42" in prompt and "and for Q4?" in prompt
    assert SEEN[1] == (REWRITTEN, [sales_id(store)])  # the previous answer's table only
    assert follow.to_json()["rewritten_question"] == REWRITTEN
    events = read_trace(Path(str(follow.trace_path)))
    call = next(e for e in events if e["kind"] == "llm_call")
    assert call["replies"] == [REWRITTEN] and "and for Q4?" in call["messages"][-1]["content"]
    decision = next(e for e in events if e.get("stage") == "rewrite")
    assert decision["standalone"] == REWRITTEN and decision["table_ids"] == [sales_id(store)]
    # kept per store: listed, read back, deleted
    listed = kept.list()
    assert [c.id for c in listed] == [conv.id]
    assert [t.question for t in listed[0].turns] == ["What was North's Q3 revenue?", "and for Q4?"]
    assert listed[0].turns[1].standalone == REWRITTEN
    assert kept.get("latest").id == conv.id
    kept.delete(conv.id)
    assert kept.list() == []
    with pytest.raises(UnknownConversation, match="no conversation"):
        kept.get(conv.id)


def test_without_a_model_a_follow_up_is_asked_as_it_is(store: Path, method: None,
                                                       tmp_path: Path) -> None:  # fmt: skip
    conv = Conversations(None).new()  # in memory
    ask("North's Q3?", store, method="convtest", conversation=conv, trace_dir=tmp_path)
    result = ask("and Q4?", store, method="convtest", conversation=conv, trace_dir=tmp_path)
    assert SEEN[1][0] == "and Q4?" and result.to_json()["rewritten_question"] is None
    decision = next(e for e in read_trace(Path(str(result.trace_path)))
                    if e.get("stage") == "rewrite")  # fmt: skip
    assert decision["reason"] == "no LLM configured"


# -- CLI -----------------------------------------------------------------------------------
@pytest.fixture
def cli_llm() -> Iterator[Scripted]:
    llm = rewriter()
    register_llm_backend("convtest", lambda options: llm)
    yield llm


def test_ask_continue_rewrites_with_the_latest_conversation_and_conversations_lists_it(
    store: Path, method: None, cli_llm: Scripted
) -> None:
    base = ["-s", str(store), "-m", "convtest", "--llm", "convtest", "--no-cache"]
    first = runner.invoke(app, ["ask", "What was North's Q3 revenue?", *base, "--json"])
    assert first.exit_code == 0, first.output
    conv_id = json.loads(first.stdout)["conversation_id"]
    follow = runner.invoke(app, ["ask", "--continue", "and for Q4?", *base])
    assert follow.exit_code == 0, follow.output
    assert f"asked as: {REWRITTEN}" in " ".join(follow.stdout.split())
    assert SEEN[-1] == (REWRITTEN, [sales_id(store)])
    again = runner.invoke(app, ["ask", "--continue", conv_id, "and South?", *base, "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["conversation_id"] == conv_id
    listed = runner.invoke(app, ["conversations", "-s", str(store), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["turns"]) for r in rows] == [(conv_id, 3)]
    assert rows[0]["title"] == "What was North's Q3 revenue?"
    gone = runner.invoke(app, ["conversations", "-s", str(store), "--rm", conv_id])
    assert gone.exit_code == 0, gone.output
    unknown = runner.invoke(app, ["ask", "--continue", conv_id, "and West?", *base])
    assert unknown.exit_code == 2 and "no conversation" in unknown.output


def test_chat_keeps_the_history_and_answers_slash_commands_from_stdin(
    store: Path, method: None, cli_llm: Scripted
) -> None:
    lines = ["What was North's Q3 revenue?", "/tables", f"/show {sales_id(store)}",
             "and for Q4?", "/show nope", "/exit", "never asked"]  # fmt: skip
    out = runner.invoke(app, ["chat", "-s", str(store), "-m", "convtest", "--llm", "convtest",
                              "--no-cache"], input="\n".join(lines) + "\n",
                        env={"COLUMNS": "200"})  # fmt: skip
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert "sales.csv" in text and "rivers.csv" in text  # /tables
    assert "North" in text and "Q4" in text  # /show
    assert f"asked as: {REWRITTEN}" in " ".join(text.split())
    assert "no table 'nope'" in out.output
    assert [q for q, _ in SEEN] == ["What was North's Q3 revenue?", REWRITTEN]
    listed = Conversations.for_source(store).list()
    assert len(listed) == 1 and len(listed[0].turns) == 2


def test_chat_reports_a_question_it_cannot_ask_and_goes_on(
    store: Path, method: None, cli_llm: Scripted
) -> None:
    """An error ends the question, not the chat: one ``error:`` line each, as `fail_on`
    prints it, and the next line is asked."""
    out = runner.invoke(app, ["chat", "-s", str(store), "-m", "convtest", "--llm", "convtest",
                              "--no-cache", "-o", "nope", "1"],
                        input="What was North's Q3 revenue?\nand for Q4?\n")  # fmt: skip
    assert out.exit_code == 0, out.output
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and all("'nope'" in line for line in errors), out.stderr
    assert SEEN == []


# -- API -----------------------------------------------------------------------------------
TOKEN = "conversation-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_api_takes_and_returns_conversation_id_and_lists_and_deletes_them(
    store: Path, method: None, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from tablequest.serve import ServeConfig, create_app

    config = ServeConfig(store=store, trace_dir=tmp_path / "traces", token=TOKEN)
    body = {"method": "convtest", "stream": False}
    with TestClient(create_app(config, llm=rewriter()), base_url="http://127.0.0.1") as client:
        first = client.post("/v1/ask", json={**body, "question": "North's Q3?"}, headers=AUTH)
        assert first.status_code == 200, first.text
        conv_id = first.json()["conversation_id"]
        follow = client.post(
            "/v1/ask",
            headers=AUTH,
            json={**body, "question": "and Q4?", "conversation_id": conv_id},
        )
        assert follow.status_code == 200, follow.text
        answer = follow.json()
        assert answer["conversation_id"] == conv_id and answer["rewritten_question"] == REWRITTEN
        assert SEEN[-1] == (REWRITTEN, [sales_id(store)])
        assert client.get("/v1/conversations").status_code == 401
        listed = client.get("/v1/conversations", headers=AUTH).json()["conversations"]
        assert [(c["id"], c["turns"]) for c in listed] == [(conv_id, 2)]
        one = client.get(f"/v1/conversations/{conv_id}", headers=AUTH).json()
        assert [t["standalone"] for t in one["turns"]] == ["North's Q3?", REWRITTEN]
        assert client.delete(f"/v1/conversations/{conv_id}").status_code == 401
        assert client.delete(f"/v1/conversations/{conv_id}", headers=AUTH).status_code == 200
        missing = client.post(
            "/v1/ask",
            headers=AUTH,
            json={**body, "question": "and Q1?", "conversation_id": conv_id},
        )
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_conversation"


# -- Python --------------------------------------------------------------------------------
def test_tq_chat_keeps_history(store: Path, method: None) -> None:
    with tablequest.chat(store, llm=rewriter(), method="convtest") as chat:
        assert chat.ask("North's Q3?").answer == "42"
        follow = chat.ask("and Q4?")
        assert follow.to_json()["rewritten_question"] == REWRITTEN
        assert [t.question for t in chat.history] == ["North's Q3?", "and Q4?"]
        assert Conversations.for_source(store).get(chat.id).turns[1].standalone == REWRITTEN


def test_the_ask_page_keeps_the_conversation_and_shows_the_rewritten_question(
    store: Path, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from tablequest.serve import ServeConfig, create_app

    config = ServeConfig(store=store, trace_dir=tmp_path / "traces", token=TOKEN)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        page = client.get("/ask", headers=AUTH).text
        assert 'id="follow-up"' in page and 'id="conversation-id"' in page
        assert 'id="rewritten"' in page
        script = client.get("/static/app.js", headers=AUTH).text
        assert "body.conversation_id = conversation" in script
        assert '"Asked as: " + result.rewritten_question' in script
