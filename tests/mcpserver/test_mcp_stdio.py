"""`tablequest mcp STORE` over stdio, driven by the SDK's own client (a real child process)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from tests.mcpserver.conftest import Bed, stdio_params, text

from tablequest.llm.stub import StubServer

TOOLS = {
    "list_tables", "search_tables", "get_table", "query_sql", "run_pandas", "ask", "research",
    "list_conversations", "get_conversation", "delete_conversation",
}  # fmt: skip


def _session(bed: Bed, *args: str, body: Any) -> Any:
    async def main() -> Any:
        async with Client(stdio_params(bed, *args), read_timeout_seconds=60) as client:
            return await body(client)

    return anyio.run(main)


def test_stdio_lists_tools_with_schemas_and_calls_each(bed: Bed, stub: StubServer) -> None:
    lakes = bed.ids["lakes.html"]

    async def body(client: Client) -> dict[str, Any]:
        listed = await client.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        out["page"] = await client.call_tool("list_tables", {"limit": 5, "offset": 5})
        out["search"] = await client.call_tool("search_tables", {"question": "Quillsee depth"})
        out["table"] = await client.call_tool("get_table", {"table_id": lakes, "format": "json"})
        out["code"] = await client.call_tool(
            "run_pandas", {"code": "int(lakes.shape[0])", "tables": {"lakes": lakes}}
        )
        out["ask"] = await client.call_tool("ask", {"question": "How deep is Quillsee?"})
        out["bad"] = await client.call_tool("list_tables", {"limit": 0})
        out["after"] = await client.call_tool("list_tables", {"limit": 1})
        return out

    out = _session(bed, "--llm-url", stub.url, "--model", "stub-model", body=body)
    tools = out["tools"]
    assert set(tools) == TOOLS
    schema = tools["get_table"].input_schema
    assert schema["required"] == ["table_id"]
    assert schema["properties"]["format"]["enum"] == ["markdown", "json"]
    assert tools["list_tables"].input_schema["properties"]["limit"]["maximum"] == 1000

    page = out["page"].structured_content
    assert page["total"] == bed.count and page["offset"] == 5 and len(page["tables"]) == 5
    assert page["next_offset"] == 10
    hits = out["search"].structured_content["hits"]
    assert hits[0]["table_id"] == lakes and hits[0]["matched_rows"] == [2]
    table = out["table"].structured_content
    assert table["header_rows"][1][1:3] == ["Area km2", "Depth m"]
    assert {"top": 0, "left": 1, "bottom": 0, "right": 2} in table["merges"]
    assert not out["code"].is_error and "value:\n3" in text(out["code"])
    answer = out["ask"].structured_content
    assert answer["answer"] == "61" and answer["status"] == "answered"
    assert answer["trace_id"] and answer["trace"] == f"/v1/traces/{answer['trace_id']}"
    assert out["bad"].is_error and "limit" in text(out["bad"])
    assert not out["after"].is_error  # a bad call leaves the server serving


def test_stdio_without_model_refuses_ask_and_research_clearly(bed: Bed) -> None:
    lakes = bed.ids["lakes.html"]

    async def body(client: Client) -> tuple[Any, Any, Any]:
        ask = await client.call_tool("ask", {"question": "How deep is Quillsee?"})
        research = await client.call_tool("research", {"table_id": lakes, "task": "Compare"})
        table = await client.call_tool("get_table", {"table_id": lakes, "limit": 1})
        return ask, research, table

    ask, research, table = _session(bed, body=body)
    for result, tool in ((ask, "ask"), (research, "research")):
        assert result.is_error
        assert f"{tool} needs a model and this server has none configured" in text(result)
    assert not table.is_error and "| Mirrow | 412 | 38 | North |" in text(table)


def test_stdio_resources_page_and_prompt(bed: Bed) -> None:
    async def body(client: Client) -> tuple[Any, Any, Any, Any]:
        first = await client.list_resources()
        templates = await client.list_resource_templates()
        read = await client.read_resource(first.resources[0].uri)
        prompt = await client.get_prompt("answer_from_corpus", {"question": "Deepest lake?"})
        return first, templates, read, prompt

    first, templates, read, prompt = _session(bed, body=body)
    assert len(first.resources) == bed.count and first.next_cursor is None
    uris = {r.uri for r in first.resources}
    assert {f"tablequest://tables/{t}" for t in bed.ids.values()} <= uris
    assert templates.resource_templates[0].uri_template == "tablequest://tables/{table_id}"
    assert read.contents[0].text.startswith("| ")
    message = prompt.messages[0].content.text
    assert "Deepest lake?" in message and "cite every cell" in message


def test_two_servers_read_one_store_at_once(bed: Bed) -> None:
    """Two MCP clients (Claude Desktop and an editor) start their own server on one store."""

    async def main() -> tuple[Any, Any]:
        async with (
            Client(stdio_params(bed), read_timeout_seconds=60) as first,
            Client(stdio_params(bed), read_timeout_seconds=60) as second,  # while first runs
        ):
            return (
                await first.call_tool("list_tables", {"limit": 1}),
                await second.call_tool("list_tables", {"limit": 1}),
            )

    first, second = anyio.run(main)
    assert first.structured_content["total"] == second.structured_content["total"] == bed.count
