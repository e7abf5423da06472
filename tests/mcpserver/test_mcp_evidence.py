"""MCP `ask` carries what `ask --json` carries about evidence: ``verified``, its
``verification`` line and each evidence cell with how it was found (the SDK's in-memory
client; a registered method with a fixed result, so no model reply decides it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.mcpserver.conftest import Bed, config

from tablequest.llm import Scripted
from tablequest.mcpserver import McpService, open_service
from tablequest.methods import Result, register_method, unregister_method
from tablequest.methods.options import NoOptions
from tablequest.table import CellRef


class Contradicted:
    """Answers 62 for Quillsee's depth, whose computed cell holds 61."""

    def __init__(self, options: Any, context: Any) -> None:
        pass

    def answer(self, question: str, source: Any, **_: Any) -> Result:
        lakes = next(t for t in source.table_ids() if source.source(t).path.endswith("lakes.html"))
        return Result(
            answer="62", status="answered", final_table=lakes, tables_consulted=[lakes],
            evidence=[CellRef(lakes, 2, 2, "61", "computed")], verified="contradicted",
            verification="62 differs from its cell's 61 (row 2, Size / Depth m)",
        )  # fmt: skip

    def close(self) -> None:
        pass


@pytest.fixture
def service(bed: Bed) -> Iterator[McpService]:
    register_method(
        "test-contradicted", Contradicted, NoOptions, input="corpus", needs_llm=False,
        description="a fixed contradicted answer",
    )  # fmt: skip
    opened = open_service(config(bed, llm_url=None, token=None), llm=Scripted(["unused"]))
    yield opened
    opened.close()
    unregister_method("test-contradicted")


def test_ask_carries_verified_and_how_each_cell_was_found(service: McpService, bed: Bed) -> None:
    async def main() -> Any:
        async with Client(service.server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            call = await client.call_tool(
                "ask", {"question": "How deep is Quillsee?", "method": "test-contradicted"}
            )
            return tools["ask"], call

    tool, result = anyio.run(main)
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert data["verified"] == "contradicted"
    assert data["verification"] == "62 differs from its cell's 61 (row 2, Size / Depth m)"
    assert data["evidence"] == [
        {"table_id": bed.ids["lakes.html"], "row": 2, "col": 2, "value": "61", "how": "computed"}
    ]
    assert '"verified": "contradicted"' in result.content[0].text  # the text block says it too
    assert "verified" in (tool.description or "") and "how" in (tool.description or "")
