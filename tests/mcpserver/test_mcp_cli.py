"""`tablequest mcp`: refusals before serving (missing store, not a store, bad --http)."""

from __future__ import annotations

from pathlib import Path

from tests.mcpserver.conftest import Bed
from typer.testing import CliRunner

from tablequest.cli.app import app

runner = CliRunner()


def test_missing_store_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", str(tmp_path / "nope.duckdb")])
    assert result.exit_code == 2
    assert "no store at" in result.output and "tablequest ingest" in result.output
    assert "--create" not in result.output  # serve's option: `tablequest mcp` has none


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    result = runner.invoke(app, ["mcp", str(table)])
    assert result.exit_code == 2 and "not a store" in result.output
    assert "tablequest ingest" in result.output  # the fix is named


def test_a_folder_is_refused_with_the_ingest_that_makes_a_store(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory, not a store" in result.output
    assert f"tablequest ingest {tmp_path} --store" in " ".join(result.output.split())


def test_bad_http_bind_is_refused(bed: Bed, tmp_path: Path) -> None:
    token = tmp_path / "token"
    result = runner.invoke(
        app, ["mcp", str(bed.store), "--http", "8766", "--token-file", str(token)]
    )
    assert result.exit_code == 2 and "--http takes HOST:PORT" in result.output
    assert not token.exists()  # refused before a token was made


def test_readable_token_file_is_refused(bed: Bed, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("x" * 40, encoding="utf-8")
    token.chmod(0o644)
    result = runner.invoke(
        app, ["mcp", str(bed.store), "--http", "127.0.0.1:8766", "--token-file", str(token)]
    )
    assert result.exit_code == 2 and "readable by others" in result.output
