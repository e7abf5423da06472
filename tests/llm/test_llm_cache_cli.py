"""`tablequest cache stats|clear` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tablequest.cli.cache import _size, app
from tablequest.llm import CachedLLM, Scripted

runner = CliRunner()


def _fill(directory: Path) -> None:
    llm = CachedLLM(Scripted(["a"]), directory)
    llm.chat([{"role": "user", "content": "q"}])
    llm.close()


def test_stats_text_and_json(tmp_path: Path) -> None:
    _fill(tmp_path)
    result = runner.invoke(app, ["stats", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "entries: 1" in result.output and "llm-cache.sqlite" in result.output
    result = runner.invoke(app, ["stats", "--dir", str(tmp_path), "--json"])
    data = json.loads(result.output)
    assert data["entries"] == 1 and data["path"].endswith("llm-cache.sqlite")


def test_stats_uses_env_dir(isolated_env: Path) -> None:
    _fill(isolated_env / "cache")
    data = json.loads(runner.invoke(app, ["stats", "--json"]).output)
    assert data["entries"] == 1


def test_clear(tmp_path: Path) -> None:
    _fill(tmp_path)
    result = runner.invoke(app, ["clear", "--dir", str(tmp_path)])
    assert result.exit_code == 0 and "removed 1 cached completion(s)" in result.output
    assert "entries: 0" in runner.invoke(app, ["stats", "--dir", str(tmp_path)]).output


def test_corrupt_cache_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "llm-cache.sqlite").write_bytes(b"garbage" * 200)
    for command in (["stats"], ["clear"]):
        result = runner.invoke(app, [*command, "--dir", str(tmp_path)])
        assert result.exit_code == 1
        assert "error: cannot use the LLM cache" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_size_units() -> None:
    assert _size(10) == "10 B"
    assert _size(2048) == "2.0 KB"
    assert _size(5 * 1024**3) == "5.0 GB"
