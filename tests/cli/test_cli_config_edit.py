"""Issue 39, config: `config init` (a commented user config, never overwritten without
--force), `config set KEY VALUE` and `config get KEY` checked against the settings'
declarations; a model URL without a scheme (http:// assumed, with a note), `--llm-url`
without `--model` (the server's only model, or the list), and "model not found" naming the
models the server serves."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.llm import ConfigError, ModelUnreachable
from tablequest.llm.config import build_llm, resolve_config
from tablequest.llm.modelserver import ModelServer
from tablequest.llm.stub import StubServer, _error

runner = CliRunner()


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user config directory moved into this test's folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in ("TABLEQUEST_LLM_URL", "OPENAI_BASE_URL", "TABLEQUEST_LLM_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "xdg" / "tablequest" / "tablequest.toml"


def test_config_init_writes_a_commented_file_and_never_overwrites(user_config: Path) -> None:
    done = runner.invoke(app, ["config", "init"])
    assert done.exit_code == 0, done.output
    text = user_config.read_text()
    assert tomllib.loads(text).keys() >= {"llm", "reading", "serve"}  # every key commented
    assert all(not v for v in tomllib.loads(text).values())
    assert "# url =" in text and "# timeout = 60.0" in text and "traces.dir" not in text
    user_config.write_text(text + "# mine\n")
    again = runner.invoke(app, ["config", "init"])
    assert again.exit_code == 2 and "--force" in again.output
    assert user_config.read_text().endswith("# mine\n")
    assert runner.invoke(app, ["config", "init", "--force"]).exit_code == 0
    assert not user_config.read_text().endswith("# mine\n")


def test_config_set_then_get_through_the_settings(user_config: Path) -> None:
    assert runner.invoke(app, ["config", "init"]).exit_code == 0
    done = runner.invoke(app, ["config", "set", "llm.timeout", "30"])
    assert done.exit_code == 0, done.output
    assert runner.invoke(app, ["config", "set", "llm.url", "http://gpu:8000/v1"]).exit_code == 0
    data = tomllib.loads(user_config.read_text())
    assert data["llm"] == {"timeout": 30.0, "url": "http://gpu:8000/v1"}
    assert "# model =" in user_config.read_text()  # the other commented lines are kept
    got = runner.invoke(app, ["config", "get", "llm.timeout", "--json"])
    assert json.loads(got.stdout) == {
        "key": "llm.timeout", "value": 30.0, "source": str(user_config)
    }  # fmt: skip
    plain = runner.invoke(app, ["config", "get", "llm.url"])
    assert plain.stdout.strip() == "http://gpu:8000/v1"


def test_config_set_and_get_refuse_unknown_keys_and_bad_values(user_config: Path) -> None:
    unknown = runner.invoke(app, ["config", "set", "llm.modle", "x"])
    assert unknown.exit_code == 2 and "llm.modle" in unknown.output
    assert "llm.model" in unknown.output  # names the known keys
    bad = runner.invoke(app, ["config", "set", "sandbox.isolation", "loose"])
    assert bad.exit_code == 2 and "'strict' or 'degraded'" in bad.output
    not_toml = runner.invoke(app, ["config", "set", "traces.dir", "/x"])
    assert not_toml.exit_code == 2 and "TABLEQUEST_TRACE_DIR" in not_toml.output
    section = runner.invoke(app, ["config", "get", "nope.key"])
    assert section.exit_code == 2 and "llm" in section.output
    assert not user_config.exists()  # nothing was written


def test_a_url_without_scheme_gets_http_and_the_servers_only_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with StubServer(["hello"], model="only-model") as server:
        bare = server.url.removeprefix("http://")
        llm = build_llm(resolve_config(url=bare, cache=False))
        assert llm is not None
        assert llm.chat([{"role": "user", "content": "hi"}])[0].text == "hello"
        llm.close()
    err = capsys.readouterr().err
    assert f"using 'http://{bare}'" in err and "'only-model'" in err


def test_without_a_model_a_server_of_several_lists_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ModelServer, "model_ids", lambda self, timeout=None: ["a-7b", "b-70b"])
    with pytest.raises(ConfigError, match="a-7b, b-70b"):
        build_llm(resolve_config(url="http://127.0.0.1:9/v1", cache=False))


class _Strict(StubServer):
    """A server that answers 404 "model not found" for any model but its own."""

    def _chat(self, body: dict[str, Any]) -> Any:
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        return super()._chat(body)


def test_model_not_found_lists_the_served_models() -> None:
    with _Strict(["x"], model="qwen-7b") as server:
        llm = build_llm(resolve_config(url=server.url, model="qwen7b", cache=False))
        assert llm is not None
        with pytest.raises(ModelUnreachable, match="it serves: qwen-7b"):
            llm.chat([{"role": "user", "content": "hi"}])
        llm.close()
