"""The README's quickstart runs as written (commands executed through the CLI), and every
top-level command is documented in the README."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.llm.stub import StubServer

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quickstart_commands() -> list[list[str]]:
    block = README.split("## Quickstart", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("tablequest ")]


def test_quickstart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, varna_reply: Any) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TABLEQUEST_TRACE_DIR", str(tmp_path / "traces"))
    commands = quickstart_commands()
    assert [c[0] for c in commands] == ["ingest", "search", "ask", "trace"]
    runner = CliRunner()
    outputs = {}
    with StubServer(varna_reply) as server:
        for args in commands:
            args = [a.replace("/tmp/demo.duckdb", str(tmp_path / "demo.duckdb")) for a in args]
            args = [server.url if a.startswith("http://localhost") else a for a in args]
            result = runner.invoke(app, args)
            assert result.exit_code == 0, (args, result.output)
            outputs[args[0]] = result.output
    assert "river_lengths" in outputs["search"]
    assert "412" in outputs["ask"] and "answered" in outputs["ask"]
    assert "llm_call" in outputs["trace"]


def test_every_command_is_documented() -> None:
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for name in names:
        assert re.search(rf"`tablequest {name}\b", README), f"`tablequest {name}` not in README"
