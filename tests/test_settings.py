"""The one `Settings` (issue 38): precedence flag > environment > trusted toml > default, the
untrusted-config rules, pickling for workers, and docs/config.md generated from it."""

from __future__ import annotations

import pickle
from dataclasses import fields
from pathlib import Path

import pytest

from tablequest import configfile
from tablequest.settings import (
    SECTIONS,
    ReadingSettings,
    Settings,
    SettingsError,
    from_env,
    markdown,
    spec_of,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "config.md"


def _toml(folder: Path, text: str) -> Path:
    path = folder / "tablequest.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_come_from_the_declarations(tmp_path: Path) -> None:
    settings = Settings.load(env={}, cwd=tmp_path)
    assert settings == Settings()
    assert settings.reading == ReadingSettings()
    assert {settings.source(name) for name, _, _ in settings.items()} == {"default"}


def test_flag_over_env_over_trusted_file_over_default(tmp_path: Path) -> None:
    path = _toml(tmp_path, "[llm]\ntimeout = 7\ndeadline = 9\nmax_retries = 1\n")
    env = {"TABLEQUEST_LLM_TIMEOUT": "8", "TABLEQUEST_DEADLINE": "11"}
    settings = Settings.load({"llm.timeout": 5.0}, env=env, config_path=path)
    llm = settings.llm
    assert (llm.timeout, llm.deadline, llm.max_retries, llm.max_concurrency) == (5.0, 11.0, 1, 4)
    assert settings.source("llm.timeout") == "flag"
    assert settings.source("llm.deadline") == "$TABLEQUEST_DEADLINE"
    assert settings.source("llm.max_retries") == str(path)
    assert settings.source("llm.max_concurrency") == "default"


def test_untrusted_file_sets_harmless_keys_only(tmp_path: Path) -> None:
    _toml(
        tmp_path,
        '[llm]\nurl = "http://evil.example/v1"\ntimeout = 9\n'
        '[embeddings]\nurl = "http://evil.example/v1"\n[reading]\nmax_cells = 0\n'
        '[sandbox]\nisolation = "degraded"\n',
    )
    settings = Settings.load(env={}, cwd=tmp_path)
    assert settings.llm.url is None and settings.llm.timeout == 9.0
    assert settings.embeddings.url is None
    assert settings.reading.max_cells == ReadingSettings().max_cells
    assert settings.sandbox.isolation == "strict"
    (note,) = settings.notes
    for key in ("[llm] url", "[embeddings] url", "[reading] max_cells", "[sandbox] isolation"):
        assert key in note
    configfile.trust(tmp_path / "tablequest.toml")
    trusted = Settings.load(env={}, cwd=tmp_path)
    assert trusted.llm.url == "http://evil.example/v1" and trusted.reading.max_cells is None
    assert trusted.sandbox.isolation == "degraded" and trusted.notes == ()


def test_untrusted_file_cannot_raise_what_a_question_costs(tmp_path: Path) -> None:
    # issue 40: `deadline = 0` (none) and more retries were taken from a corpus's file
    _toml(tmp_path, "[llm]\ndeadline = 0\nmax_retries = 50\ntimeout = 600\n")
    settings = Settings.load(env={}, cwd=tmp_path)
    assert (settings.llm.deadline, settings.llm.max_retries, settings.llm.timeout) == (600, 3, 60)
    (note,) = settings.notes
    for key in ("[llm] deadline", "[llm] max_retries", "[llm] timeout"):
        assert key in note
    assert "raise what a question costs" in note
    _toml(tmp_path, "[llm]\ndeadline = 120\nmax_retries = 0\ntimeout = 9\n")  # cheaper: kept
    cheaper = Settings.load(env={}, cwd=tmp_path)
    assert (cheaper.llm.deadline, cheaper.llm.max_retries, cheaper.llm.timeout) == (120, 0, 9)
    assert cheaper.notes == ()
    path = _toml(tmp_path, "[llm]\ndeadline = 0\nmax_retries = 50\n")
    configfile.trust(path)
    trusted = Settings.load(env={}, cwd=tmp_path)
    assert (trusted.llm.deadline, trusted.llm.max_retries) == (0, 50)


def test_bad_values_name_where_they_came_from(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"\$TABLEQUEST_READ_MAX_CELLS='lots'"):
        Settings.load(env={"TABLEQUEST_READ_MAX_CELLS": "lots"}, cwd=tmp_path)
    with pytest.raises(SettingsError, match=r"\$TABLEQUEST_DEVICE: unknown device"):
        from_env(type(Settings().embeddings), {"TABLEQUEST_DEVICE": "tpu"})
    path = _toml(tmp_path, "[reading]\nmax_cell = 3\n")
    with pytest.raises(SettingsError, match=r"unknown \[reading\] key"):
        Settings.load(env={}, config_path=path)


def test_settings_pickle_for_worker_processes(tmp_path: Path) -> None:
    settings = Settings.load({"reading.max_cells": "7"}, env={}, cwd=tmp_path)
    copy = pickle.loads(pickle.dumps(settings))
    assert copy == settings and copy.reading.max_cells == 7


def test_guarded_declarations_match_the_trust_rules() -> None:
    for name, section in SECTIONS.items():
        guard = configfile.GUARDED.get(name)
        for field in fields(section):
            spec = spec_of(section, field.name)
            if not spec.toml:
                continue
            value = "degraded" if field.name == "isolation" else field.default
            bound = configfile.COST_BOUNDS.get(name, {}).get(field.name)
            if bound is not None:  # guarded above its default (issue 40)
                assert not guard or not guard(field.name, field.default)
                value = field.default * 10 + 1
            assert bool(spec.guarded) == bool(guard and guard(field.name, value)), (
                f"{name}.{field.name}: its `guarded` text and configfile.GUARDED disagree"
            )


def test_docs_config_md_is_generated_from_the_settings() -> None:
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/config.md is stale: run `python -m tablequest.settings --write`"
    )
    for name, _value, spec in Settings().items():
        assert f"`{name}`" in markdown()
        for var in spec.env:
            assert var in markdown()
