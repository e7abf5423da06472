"""Config precedence (flags > env > cwd toml > user toml > defaults) and build_llm."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from tablequest import configfile
from tablequest.llm import (
    NOT_CONFIGURED_HINT,
    CachedLLM,
    ConfigError,
    Instrumented,
    LLMConfig,
    LLMUnavailable,
    ModelUnreachable,
    OpenAICompatible,
    StubServer,
    UsageMeter,
    build_llm,
    resolve_config,
)
from tablequest.trace import Trace

USER_DIR = "xdg_config_home"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    config = resolve_config(cwd=tmp_path)
    assert config == LLMConfig(sources=config.sources)
    assert not config.configured
    assert set(config.sources.values()) == {"default"}
    assert build_llm(config) is None
    assert "--llm-url" in NOT_CONFIGURED_HINT and "TABLEQUEST_LLM_URL" in NOT_CONFIGURED_HINT


def test_precedence_flags_env_cwd_user(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = isolated_env / USER_DIR / "tablequest" / "tablequest.toml"
    write(
        user,
        '[llm]\nurl = "http://user/v1"\nmodel = "user-model"\ntimeout = 5\nmax_retries = 7\n'
        '[prices]\n"user-model" = [1.0, 2.0]\n',
    )
    cwd = tmp_path / "project"
    write(
        cwd / "tablequest.toml",
        '[llm]\nmodel = "cwd-model"\ntimeout = 9\ncache = false\n'
        '[prices]\n"cwd-model" = {input = 0.5, output = 1.5}\n',
    )
    configfile.trust(cwd / "tablequest.toml")  # a cwd file sets the model only when trusted
    config = resolve_config(cwd=cwd)
    assert config.url == "http://user/v1" and config.sources["url"] == str(user)
    assert config.model == "cwd-model" and config.timeout == 9.0 and config.max_retries == 7
    assert config.cache is False
    assert config.prices == {"user-model": (1.0, 2.0), "cwd-model": (0.5, 1.5)}

    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    config = resolve_config(cwd=cwd)
    assert config.url == "http://openai-env/v1" and config.sources["url"] == "$OPENAI_BASE_URL"
    assert config.api_key == "sk-openai"

    monkeypatch.setenv("TABLEQUEST_LLM_URL", "http://tq-env/v1")
    monkeypatch.setenv("TABLEQUEST_LLM_MODEL", "env-model")
    monkeypatch.setenv("TABLEQUEST_LLM_KEY", "sk-tq")
    config = resolve_config(cwd=cwd)
    assert (config.url, config.model, config.api_key) == ("http://tq-env/v1", "env-model", "sk-tq")

    config = resolve_config(
        url="http://flag/v1", model="flag-model", api_key="sk-flag", cache=True, timeout=1, cwd=cwd
    )
    assert (config.url, config.model, config.api_key) == ("http://flag/v1", "flag-model", "sk-flag")
    assert config.cache is True and config.timeout == 1.0
    assert config.sources["url"] == "flag" and config.sources["max_retries"] == str(user)


def test_explicit_env_mapping_and_config_path(tmp_path: Path) -> None:
    path = write(tmp_path / "other.toml", '[llm]\nurl = "http://file/v1"\nmodel = "m"\n')
    config = resolve_config(config_path=path, env={"TABLEQUEST_LLM_MODEL": "x"})
    assert config.url == "http://file/v1" and config.model == "x"
    slow = resolve_config(config_path=path, env={"TABLEQUEST_LLM_TIMEOUT": "240"})
    assert slow.timeout == 240.0
    with pytest.raises(ConfigError, match=r"\$TABLEQUEST_LLM_TIMEOUT: invalid timeout"):
        resolve_config(config_path=path, env={"TABLEQUEST_LLM_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="not found"):
        resolve_config(config_path=tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("[llm\nurl=", "cannot read"),
        ('llm = "x"', r"\[llm\] must be a table"),
        ("[llm]\nurll = 'x'", "unknown"),
        ("[llm]\ntimeout = 'soon'", "invalid timeout"),
        ("[llm]\ntimeout = -1", "invalid timeout"),
        ("[llm]\nmax_retries = true", "invalid max_retries"),
        ("[llm]\nmax_concurrency = 0", "invalid max_concurrency"),
        ("[llm]\ncache = 'maybe'", "invalid cache"),
        ("[llm]\ncache = 1", "invalid cache"),
        ("[llm]\nmodel = 3", "invalid model"),
        ('prices = "cheap"', "prices"),
        ("[prices]\nm = [1]", "price of 'm'"),
    ],
)
def test_bad_files_are_config_errors(tmp_path: Path, text: str, pattern: str) -> None:
    path = write(tmp_path / "tablequest.toml", text)
    with pytest.raises(ConfigError, match=pattern):
        resolve_config(config_path=path)
    if "model" not in text:  # an untrusted file's model is ignored, valid or not
        with pytest.raises(ConfigError, match=pattern):
            resolve_config(cwd=tmp_path)


def test_string_booleans_and_zero_retries(tmp_path: Path) -> None:
    write(tmp_path / "tablequest.toml", "[llm]\ncache = 'off'\nmax_retries = 0\n")
    config = resolve_config(cwd=tmp_path)
    assert config.cache is False and config.max_retries == 0
    assert resolve_config(cache=True, cwd=tmp_path).cache is True


def test_build_openai_with_cache_and_instrumentation(tmp_path: Path) -> None:
    config = resolve_config(url="http://127.0.0.1:9/v1", model="m", cwd=tmp_path)
    llm = build_llm(config, trace=Trace.in_memory(), usage=UsageMeter(), cache_dir=tmp_path)
    assert isinstance(llm, Instrumented) and isinstance(llm.inner, CachedLLM)
    assert isinstance(llm.inner.inner, OpenAICompatible)
    assert llm.describe()["url"] == "http://127.0.0.1:9/v1"
    llm.close()
    plain = build_llm(resolve_config(url="http://127.0.0.1:9/v1", model="m", cache=False))
    assert isinstance(plain, OpenAICompatible)
    plain.close()


def test_build_end_to_end_through_stub(tmp_path: Path) -> None:
    with StubServer(["hello"]) as stub:
        meter = UsageMeter()
        llm = build_llm(resolve_config(url=stub.url, model="stub-model"), usage=meter)
        assert llm is not None
        assert llm.chat([{"role": "user", "content": "hi"}])[0].text == "hello"
        assert llm.chat([{"role": "user", "content": "hi"}])[0].cached
        assert len(stub.requests) == 1
        assert meter.totals.calls == 2 and meter.totals.cache_hits == 1
        llm.close()


def test_model_without_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no URL"):
        build_llm(resolve_config(model="gpt-4o-mini", cwd=tmp_path))
    llm = build_llm(resolve_config(model="gpt-4o-mini", api_key="sk-x", cwd=tmp_path))
    assert llm is not None and llm.describe()["url"] == "https://api.openai.com/v1"
    llm.close()


def test_url_without_model(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connection refused
    # the server cannot be reached: a run failure (exit 1), as with a model named
    with pytest.raises(ModelUnreachable, match=r"cannot be listed .*connection refused"):
        build_llm(resolve_config(url=url, cwd=tmp_path))


def test_gguf_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LLMUnavailable, match="tablequest\\[local\\]"):
        build_llm(LLMConfig(), llm_spec=f"gguf:{tmp_path / 'm.gguf'}")
    with pytest.raises(ConfigError, match="expected one of gguf:"):
        build_llm(LLMConfig(), llm_spec="hf:some/model")
    with pytest.raises(ConfigError):
        build_llm(LLMConfig(), llm_spec="gguf:")


def test_registered_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from tablequest.llm import Scripted, register_llm_spec
    from tablequest.llm import config as config_module

    monkeypatch.setattr(config_module, "_SPECS", dict(config_module._SPECS))
    register_llm_spec("Fake", lambda arg: Scripted([arg], model="fake"))
    llm = build_llm(LLMConfig(cache=False), llm_spec="fake:hello")
    assert llm is not None and llm.chat([{"role": "user", "content": "q"}])[0].text == "hello"


# --------------------------------------------------------------------------- config trust
HOSTILE = (
    '[llm]\nurl = "http://evil.example/v1"\nmodel = "evil"\napi_key = "sk-file"\ntimeout = 9\n'
    '[prices]\n"evil" = [1.0, 2.0]\n'
)


def test_untrusted_cwd_file_cannot_choose_where_data_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user")
    path = write(tmp_path / "tablequest.toml", HOSTILE)
    config = resolve_config(cwd=tmp_path)
    assert (config.url, config.model, config.api_key) == (None, None, "sk-user")
    assert config.timeout == 9.0 and config.prices == {"evil": (1.0, 2.0)}  # harmless keys
    (note,) = config.notes
    assert str(path) in note and "[llm] url, [llm] model, [llm] api_key" in note
    assert "tablequest config trust" in note and "--config-file" in note

    configfile.trust(path)
    config = resolve_config(cwd=tmp_path)
    assert (config.url, config.model, config.api_key) == (
        "http://evil.example/v1",
        "evil",
        "sk-user",
    )
    assert config.notes == ()

    path.write_text(HOSTILE.replace("evil.example", "other.example"))
    config = resolve_config(cwd=tmp_path)
    assert config.url is None and "changed since you trusted it" in config.notes[0]

    named = resolve_config(config_path=path)
    assert named.url == "http://other.example/v1" and named.notes == ()
    by_env = resolve_config(cwd=tmp_path / "elsewhere", env={"TABLEQUEST_CONFIG": str(path)})
    assert by_env.url == "http://other.example/v1"


def test_user_config_dir_file_always_applies(tmp_path: Path, isolated_env: Path) -> None:
    write(isolated_env / USER_DIR / "tablequest" / "tablequest.toml", HOSTILE)
    config = resolve_config(cwd=tmp_path)
    assert (config.url, config.model) == ("http://evil.example/v1", "evil")
    assert config.notes == ()
