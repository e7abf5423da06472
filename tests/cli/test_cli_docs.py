"""docs/cli.md is generated from the command tree (issue 38, item 6): it matches what
`tablequest.cli._docs` renders, and it names every command and option `--help` shows."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from tablequest.cli._docs import COMMAND, DOC, main, markdown
from tablequest.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _commands(command: object, path: str) -> list[tuple[str, object]]:
    found = [(path, command)]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            if not getattr(sub, "hidden", False):
                found += _commands(sub, f"{path} {name}")
    return found


def test_docs_cli_md_is_generated_from_the_commands() -> None:
    assert DOC == ROOT / "docs" / "cli.md"
    assert DOC.read_text(encoding="utf-8") == markdown(), f"docs/cli.md is stale: run `{COMMAND}`"


def test_every_command_and_option_is_in_the_page() -> None:
    page = markdown()
    for path, command in _commands(typer.main.get_command(app), "tablequest"):
        assert f"## `{path}`" in page, path
        for param in getattr(command, "params", []):
            if getattr(param, "hidden", False) or param.param_type_name != "option":
                continue
            for name in param.opts:
                assert name in page, (path, name)


def test_the_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("TERMINAL_WIDTH", "40")
    narrow = markdown()
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("TERMINAL_WIDTH", "250")
    assert markdown() == narrow


def test_the_module_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["_docs"]) == 0
    assert capsys.readouterr().out == markdown()
    assert main(["_docs", "--check"]) == 2
    assert "usage: python -m tablequest.cli._docs [--write]" in capsys.readouterr().err
