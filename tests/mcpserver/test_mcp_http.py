"""`tablequest mcp --http`: Streamable HTTP behind the token, with the SDK's own client."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from tests.mcpserver.conftest import TOKEN, Bed, HttpServer, text

from tablequest.mcpserver import parse_bind
from tablequest.service import ServeError


def _run(server: HttpServer, body: Any, token: str | None = TOKEN) -> Any:
    async def main() -> Any:
        async with server.client(token) as client:
            return await body(client)

    return anyio.run(main)


def test_http_needs_the_token(http_server: HttpServer) -> None:
    probe = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
        response = httpx.post(http_server.url, json=probe, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer TOKEN" in response.json()["error"]["message"]
    foreign = httpx.post(
        http_server.url, json=probe, timeout=10,
        headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80"},
    )  # fmt: skip
    assert foreign.status_code == 400  # the serve guard: loopback Host names only


def test_http_session_calls_every_tool(http_server: HttpServer, bed: Bed) -> None:
    lakes, big = bed.ids["lakes.html"], bed.ids["big.csv"]
    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.bar(lakes['Lake'], lakes['Size / Depth m'])\n"
        "print(len(big))\nint(lakes['Size / Depth m'].max())"
    )

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": (await client.list_tools()).tools}
        out["list"] = await client.call_tool("list_tables", {"filter": "LAKES"})
        out["search"] = await client.call_tool(
            "search_tables", {"question": "Quillsee", "method": "bm25", "k": 2}
        )
        out["page"] = await client.call_tool(
            "get_table", {"table_id": big, "offset": 990, "columns": ["name", 2]}
        )
        out["code"] = await client.call_tool(
            "run_pandas", {"code": code, "tables": {"lakes": lakes, "big": big}}
        )
        out["ask"] = await client.call_tool(
            "ask", {"question": "How deep is Quillsee?", "method": "direct", "table_ids": [lakes]}
        )
        out["sql"] = await client.call_tool(
            "query_sql", {"query": "select max(size_depth_m) as deepest from lakes_of_varnholm"}
        )
        return out

    out = _run(http_server, body)
    assert len(out["tools"]) == 10
    assert out["sql"].structured_content["rows"] == [[61]]
    listed = out["list"].structured_content
    assert [t["source"] for t in listed["tables"]] == ["lakes.html"] and listed["total"] == 1
    assert out["search"].structured_content["hits"][0]["table_id"] == lakes
    page = out["page"].structured_content
    assert page["row_ids"] == list(range(990, 1000)) and page["next_offset"] is None
    assert page["col_ids"] == [1, 2]
    assert text(out["page"]).splitlines()[0] == "| _row | name | value |"  # each row's id first
    run = out["code"]
    assert not run.is_error and run.structured_content["stdout"] == "1000\n"
    assert run.structured_content["value"] == "61" and run.structured_content["figures"] == 1
    # issue 36: the value's cells, by lineage, under the table's id; the max re-run over them
    evidence = run.structured_content["evidence"]
    assert [(e["table_id"], e["value"], e["how"]) for e in evidence] == [(lakes, "61", "computed")]
    assert run.structured_content["verified"] == "verified" and "verified:" in text(run)
    image = run.content[1]
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")
    answer = out["ask"].structured_content
    assert answer["answer"] == "61" and answer["method"] == "direct"
    assert answer["tables_consulted"][0] == {"table_id": lakes, "source": "lakes.html"}


def test_ten_concurrent_http_sessions(http_server: HttpServer, bed: Bed) -> None:
    big = bed.ids["big.csv"]
    results: list[tuple[int, list[int]]] = []

    async def one(i: int) -> None:
        async with http_server.client() as client:
            listed = await client.call_tool("list_tables", {"limit": 3, "offset": i % 4})
            window = await client.call_tool(
                "get_table", {"table_id": big, "offset": i * 10, "limit": 10}
            )
            assert not listed.is_error and not window.is_error
            results.append((i, window.structured_content["row_ids"]))

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for i in range(10):
                group.start_soon(one, i)

    anyio.run(main)
    assert sorted(results) == [(i, list(range(i * 10, i * 10 + 10))) for i in range(10)]


def test_resources_list_pages(
    http_server: HttpServer, bed: Bed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tablequest.mcpserver.server.PAGE", 7)

    async def body(client: Client) -> list[Any]:
        pages = [await client.list_resources()]
        while pages[-1].next_cursor is not None:
            pages.append(await client.list_resources(cursor=pages[-1].next_cursor))
        return pages

    pages = _run(http_server, body)
    assert [len(p.resources) for p in pages] == [7, 7, bed.count - 14]
    uris = [r.uri for p in pages for r in p.resources]
    assert len(set(uris)) == bed.count


@pytest.mark.parametrize(
    ("value", "expected"),
    [("127.0.0.1:8766", ("127.0.0.1", 8766)), ("[::1]:9000", ("::1", 9000)),
     (":8766", ("127.0.0.1", 8766))],
)  # fmt: skip
def test_parse_bind(value: str, expected: tuple[str, int]) -> None:
    assert parse_bind(value) == expected


@pytest.mark.parametrize("value", ["8766", "host:", "host:0", "host:70000", "host:x"])
def test_parse_bind_refuses(value: str) -> None:
    with pytest.raises(ServeError, match="HOST:PORT"):
        parse_bind(value)
