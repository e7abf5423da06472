"""`cli._llm`: every command builds its model from the common flags one way."""

from __future__ import annotations

import pytest
import typer

from tablequest.cli._llm import LLMFlags, model_or_fail, required_model
from tablequest.llm.base import LLM
from tablequest.llm.config import NOT_CONFIGURED_HINT


def test_flags_merge_like_resolve_config(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("TABLEQUEST_LLM_MODEL", "env-model")
    config = LLMFlags(url="http://127.0.0.1:9/v1", no_cache=True, deadline=7.0).config()
    assert (config.url, config.model, config.cache, config.deadline) == (
        "http://127.0.0.1:9/v1", "env-model", False, 7.0,
    )  # fmt: skip
    assert config.sources["url"] == "flag" and config.sources["model"] == "$TABLEQUEST_LLM_MODEL"
    kept = LLMFlags(max_concurrency=3).config()
    assert kept.cache is True and kept.max_concurrency == 3 and kept.sources["cache"] == "default"


def test_build_makes_the_model_or_none(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.chdir(str(tmp_path))
    config, llm = LLMFlags().build()
    assert llm is None and not config.configured
    config, llm = LLMFlags(url="http://127.0.0.1:9/v1", model="m", no_cache=True).build()
    assert isinstance(llm, LLM) and llm.describe()["model"] == "m"
    llm.close()


def test_errors_fail_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(str(tmp_path))
    with pytest.raises(typer.Exit) as bad:
        model_or_fail(LLMFlags(spec="nope:x"), json_out=True)
    assert bad.value.exit_code == 2 and "unknown --llm 'nope:x'" in capsys.readouterr().out
    assert model_or_fail(LLMFlags())[1] is None
    with pytest.raises(typer.Exit) as none:
        required_model(LLMFlags(), json_out=True, hint=" (or --approx)")
    assert none.value.exit_code == 2
    assert NOT_CONFIGURED_HINT + " (or --approx)" in capsys.readouterr().out.replace("\\n", "\n")
