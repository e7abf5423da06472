"""Issue 39, "Follow-up questions", through the MCP tools (the SDK's in-memory client): `ask`
takes `conversation_id` as ``POST /v1/ask`` does and returns it with the rewritten question,
and `list_conversations` / `get_conversation` / `delete_conversation` are the API's
``/v1/conversations`` routes. The store, the recording method and the rewriting model are
those of tests/test_conversations.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.mcpserver.conftest import call_tools, text
from tests.test_conversations import REWRITTEN, SEEN, Recording, rewriter, sales_id

from tablequest.corpus import Store, ingest
from tablequest.mcpserver import McpService, open_service
from tablequest.methods import MethodOptions, register_method, unregister_method
from tablequest.service import ServeConfig


@pytest.fixture
def service(tmp_path: Path) -> Iterator[McpService]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "sales.csv").write_text("region,Q3,Q4\nNorth,42,50\nSouth,7,9\n")
    (data / "rivers.csv").write_text("river,length km\nVarna,120\nRhine,1230\n")
    with Store(tmp_path / "s.duckdb") as opened:
        assert ingest(opened, [data]).ok
    SEEN.clear()
    register_method("convtest", Recording, MethodOptions, input="corpus", needs_llm=False,
                    description="records what it was asked")  # fmt: skip
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=None)
    opened_service = open_service(config, llm=rewriter(), warm=False)
    yield opened_service
    opened_service.close()
    unregister_method("convtest")


def test_ask_continues_a_conversation_and_the_tools_list_show_and_delete_it(
    service: McpService, tmp_path: Path
) -> None:
    ask = {"method": "convtest"}
    (first,) = call_tools(service, [("ask", {**ask, "question": "North's Q3?"})])
    assert not first.is_error, text(first)
    conv = first.structured_content["conversation_id"]
    assert conv and first.structured_content["rewritten_question"] is None
    follow, latest, listed, shown = call_tools(service, [
        ("ask", {**ask, "question": "and Q4?", "conversation_id": conv}),
        ("ask", {**ask, "question": "and South?", "conversation_id": "latest"}),
        ("list_conversations", {}),
        ("get_conversation", {"conversation_id": conv}),
    ])  # fmt: skip
    answer = follow.structured_content
    assert answer["conversation_id"] == conv and answer["rewritten_question"] == REWRITTEN
    assert SEEN[1] == (REWRITTEN, [sales_id(tmp_path / "s.duckdb")])  # the previous table
    assert latest.structured_content["conversation_id"] == conv
    rows = listed.structured_content["conversations"]
    assert [(c["id"], c["turns"], c["title"]) for c in rows] == [(conv, 3, "North's Q3?")]
    turns = shown.structured_content["turns"]
    assert [t["question"] for t in turns] == ["North's Q3?", "and Q4?", "and South?"]
    assert turns[1]["standalone"] == REWRITTEN and turns[1]["answer"] == "42"
    assert turns[0]["trace"].startswith("/v1/traces/")  # an API address, not a server path
    removed, again, gone, bad = call_tools(service, [
        ("delete_conversation", {"conversation_id": conv}),
        ("ask", {**ask, "question": "and West?", "conversation_id": conv}),
        ("list_conversations", {}),
        ("get_conversation", {"conversation_id": "../etc"}),
    ])  # fmt: skip
    assert removed.structured_content == {"removed": conv}
    assert again.is_error and "list_conversations gives ids" in text(again)
    assert len(SEEN) == 3  # the refused follow-up never ran
    assert gone.structured_content == {"conversations": []}
    assert bad.is_error and "conversation_id" in text(bad)
