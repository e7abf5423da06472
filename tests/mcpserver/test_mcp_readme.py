"""The README's MCP section runs as written: its client configuration starts a working
server, and its command line uses only flags `tablequest mcp` has."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.mcpserver.conftest import Bed
from typer.testing import CliRunner

from tablequest.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "README.md").read_text(encoding="utf-8").split("## MCP server", 1)[1]
SECTION = SECTION.split("\n## ", 1)[0]


def _block(kind: str) -> str:
    return SECTION.split(f"```{kind}\n", 1)[1].split("```", 1)[0]


def test_readme_command_line_uses_real_flags() -> None:
    lines = [ln for ln in _block("sh").splitlines() if ln.startswith("tablequest mcp ")]
    assert len(lines) == 1
    flags = [a for a in shlex.split(lines[0]) if a.startswith("--")]
    help_text = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=200).output
    assert flags and all(flag in help_text for flag in flags)


def test_readme_client_config_starts_a_server(bed: Bed) -> None:
    entry = json.loads(_block("json"))["mcpServers"]["tablequest"]
    assert entry["command"] == "tablequest" and entry["args"][0] == "mcp"
    script = Path(sys.executable).with_name("tablequest")
    args = [str(bed.store) if a == "/tmp/demo.duckdb" else a for a in entry["args"]]
    params = StdioServerParameters(command=str(script), args=args, env=dict(os.environ))

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("list_tables", {"filter": "lakes"})

    listed = anyio.run(main)
    assert listed.structured_content["tables"][0]["source"] == "lakes.html"
