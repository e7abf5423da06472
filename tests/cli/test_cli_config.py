"""`tablequest config trust | untrust | show`, ``--config-file`` and the one warning for an
untrusted ./tablequest.toml (issue 25: a downloaded corpus folder's config)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app

runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture()
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A ./tablequest.toml pointing the model at a closed local port; isolation degraded."""
    url = f"http://127.0.0.1:{_free_port()}/v1"
    path = tmp_path / "tablequest.toml"
    path.write_text(
        f'[llm]\nurl = "{url}"\nmodel = "m"\n[sandbox]\nisolation = "degraded"\n'
        f'[methods.rag]\nembed_url = "{url}"\ntop_k = 3\n'
    )
    monkeypatch.chdir(tmp_path)
    return path, url


def _model_check(*args: str) -> tuple[dict[str, Any], str]:
    result = runner.invoke(app, ["doctor", "--check", "model", "--json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    (check,) = [c for c in json.loads(result.stdout) if c["check"] == "model"]
    return check, result.stderr


def test_untrusted_file_is_ignored_with_one_warning(hostile: tuple[Path, str]) -> None:
    path, url = hostile
    check, stderr = _model_check()
    assert url not in check["detail"]  # no model configured: the file's URL was not used
    assert stderr.count("warning:") == 1 and str(path) in stderr
    for key in ("[llm] url", "[llm] model", "[sandbox] isolation", "[methods.rag] embed_url"):
        assert key in stderr
    assert "[methods.rag] top_k" not in stderr
    assert "tablequest config trust" in stderr and "--config-file" in stderr


def test_trust_applies_until_the_file_changes(hostile: tuple[Path, str]) -> None:
    path, url = hostile
    trusted = runner.invoke(app, ["config", "trust"])
    assert trusted.exit_code == 0 and str(path) in trusted.stdout
    check, stderr = _model_check()
    assert url in check["detail"] and "warning" not in stderr
    path.write_text(path.read_text() + "# edited\n")
    check, stderr = _model_check()
    assert url not in check["detail"] and "changed since you trusted it" in stderr
    assert runner.invoke(app, ["config", "untrust"]).exit_code == 0
    again = runner.invoke(app, ["config", "untrust"])
    assert again.exit_code == 2 and "was not trusted" in again.stderr


def test_config_file_option_names_a_trusted_file(hostile: tuple[Path, str], tmp_path: Path) -> None:
    path, url = hostile
    check, stderr = _model_check("--config-file", str(path))
    assert url in check["detail"] and "warning" not in stderr
    missing = runner.invoke(
        app, ["doctor", "--config-file", str(tmp_path / "nope.toml")], env={"COLUMNS": "400"}
    )
    assert missing.exit_code == 2 and "no file at" in missing.stderr
    assert "nope.toml" in missing.stderr


def test_show_lists_files_trust_and_ignored_keys(hostile: tuple[Path, str]) -> None:
    path, _url = hostile
    shown = runner.invoke(app, ["config", "show", "--json"])
    (item,) = json.loads(shown.stdout)["files"]
    assert item["path"] == str(path) and item["trusted"] is False
    assert "[methods.rag] top_k" in item["sets"] and "[llm] url" in item["ignored"]
    runner.invoke(app, ["config", "trust", str(path)])
    (item,) = json.loads(runner.invoke(app, ["config", "show", "--json"]).stdout)["files"]
    assert item["trusted"] is True and item["ignored"] == []
    text = runner.invoke(app, ["config", "show"]).stdout
    assert "trusted (tablequest config trust)" in text


def test_untrusted_file_cannot_add_batch_endpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.cli._scale import endpoint_urls
    from tablequest.settings import Settings

    path = tmp_path / "tablequest.toml"
    path.write_text('[scale]\nllm_urls = ["http://evil.example/v1"]\n')
    monkeypatch.chdir(tmp_path)
    mine = {"llm.url": "http://mine/v1"}
    assert endpoint_urls(Settings.load(mine)) == ["http://mine/v1"]
    assert runner.invoke(app, ["config", "trust"]).exit_code == 0
    assert endpoint_urls(Settings.load(mine)) == ["http://evil.example/v1"]
    flags = {**mine, "scale.llm_urls": ["http://a/v1", "http://a/v1", "http://b/v1"]}
    assert endpoint_urls(Settings.load(flags)) == ["http://a/v1", "http://b/v1"]


def test_show_renders_the_effective_settings_and_their_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tablequest.toml").write_text('[llm]\ntimeout = 9\nurl = "http://evil/v1"\n')
    monkeypatch.setenv("TABLEQUEST_READ_MAX_CELLS", "5")
    monkeypatch.setenv("TABLEQUEST_LLM_KEY", "sk-secret")
    result = runner.invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    settings = json.loads(result.stdout)["settings"]
    assert settings["reading.max_cells"] == {"value": 5, "source": "$TABLEQUEST_READ_MAX_CELLS"}
    assert settings["llm.timeout"] == {"value": 9.0, "source": str(tmp_path / "tablequest.toml")}
    assert settings["llm.url"] == {"value": None, "source": "default"}  # untrusted: ignored
    assert settings["llm.api_key"] == {"value": "***", "source": "$TABLEQUEST_LLM_KEY"}
    assert settings["embeddings.device"] == {"value": "auto", "source": "default, computed"}
    text = runner.invoke(app, ["config", "show"])
    assert "reading.max_cells = 5  ($TABLEQUEST_READ_MAX_CELLS)" in text.stdout
    assert "sk-secret" not in text.stdout + result.stdout
