"""`research` end to end: DTR with a scripted model on a stored table, its report and chart
coming back as MCP content (the chart as a PNG image, no server path anywhere)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.mcpserver.conftest import Bed, config

from tablequest.llm import Scripted
from tablequest.mcpserver import McpService, open_service

SELECT = "result = df[['Lake', 'Size / Depth m']]"
CHART = (
    "fig, ax = plt.subplots()\n"
    "ax.bar(result['Lake'], result['Size / Depth m'])\n"
    "ax.set_title('Depth')\nresult = 'bar chart'"
)


def _code(code: str) -> str:
    return f"[THINK] draw\n[CODE]\n```python\n{code}\n```"


def dtr_reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """DTR's prompts: the plan (select, then chart), each step's code, a template report."""
    prompt = messages[-1]["content"]
    if "Operation bank:" in prompt:
        return json.dumps(
            {"query_type": "chart", "columns": ["Size / Depth m"], "answer_format": "chart",
             "sub_queries": [{"text": "chart the depths", "operations": ["SELECT", "CHART"]}]}
        )  # fmt: skip
    if "Now carry out operation" in prompt:
        now = prompt.split("  ← now", 1)[0].rsplit(". ", 1)[-1]
        return _code(SELECT if now.startswith("SELECT") else CHART)
    return "no report"


@pytest.fixture
def service(bed: Bed) -> Iterator[McpService]:
    opened = open_service(config(bed, llm_url=None, token=None), llm=Scripted(dtr_reply))
    yield opened
    opened.close()


def test_research_returns_report_and_chart_images(service: McpService, bed: Bed) -> None:
    async def main() -> Any:
        async with Client(service.server) as client:
            return await client.call_tool(
                "research",
                {"table_id": bed.ids["lakes.html"], "task": "Draw a bar chart of lake depths"},
            )

    result = anyio.run(main)
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert data["method"] == "research" and data["answer"] == "chart (1 figure)"
    assert result.content[0].text.startswith("# Draw a bar chart of lake depths")
    assert "![Chart 1](chart-1.png)" in result.content[0].text
    [image] = [c for c in result.content if c.type == "image"]
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    assert str(service.state.trace_dir) not in json.dumps(data)
    assert data["trace"] == f"/v1/traces/{data['trace_id']}"


def test_an_ask_whose_client_goes_away_is_stopped(bed: Bed) -> None:
    from tablequest.mcpserver.asking import run_ask

    release = threading.Event()

    def held(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        release.wait(20)
        return "Final Answer: 61"

    opened = open_service(config(bed, llm_url=None, token=None), llm=Scripted(held))
    try:

        async def main() -> None:
            with anyio.move_on_after(0.5):
                await run_ask(
                    opened.state, "How deep is Quillsee?", method="direct",
                    table_ids=(bed.ids["lakes.html"],), options={}, config=None, steps=None,
                    task="tableqa",
                )  # fmt: skip

        anyio.run(main)
        [job] = opened.state.asks.jobs()
        assert job.cancel_reason == "the MCP client went away"
    finally:
        release.set()
        opened.close()
