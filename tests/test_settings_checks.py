"""What a settings load refuses, and what `config show` / `config get` print for a default
computed where it is used: an out-of-range number (a port of 99999 was served on 34463), an
unknown section (``[lm]``) or method (``[methods.nope]``) that was ignored without a word, and
``none`` printed for the store, trace and cache paths, the token file, the device and the
sandbox's memory budget."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.methods import (
    OptionError,
    check_method_tables,
    get_method,
    register_method,
    unregister_method,
)
from tablequest.settings import SECTIONS, Settings, SettingsError, spec_of
from tablequest.settings._spec import Number

runner = CliRunner()


def _toml(folder: Path, text: str) -> Path:
    path = folder / "tablequest.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("port = 99999", r"invalid port = 99999 \(must be between 1 and 65535\)"),
        ("port = 0", r"invalid port = 0 \(must be positive\)"),
        ("port = 8765.5", r"invalid port = 8765.5 \(expected a whole number\)"),
        ("max_connections = 1", r"invalid max_connections = 1 \(must be at least 2\)"),
        ("header_timeout = 0.01", r"invalid header_timeout = 0.01 \(must be at least 0.1\)"),
    ],
)
def test_a_number_out_of_range_names_the_setting_file_and_range(
    tmp_path: Path, text: str, reason: str
) -> None:
    path = _toml(tmp_path, f"[serve]\n{text}\n")
    with pytest.raises(SettingsError, match=rf"under \[serve\] in {path}: {reason}"):
        Settings.load(env={}, config_path=path)


def test_config_set_refuses_a_port_the_server_cannot_bind(tmp_path: Path) -> None:
    file = tmp_path / "user.toml"
    bad = runner.invoke(app, ["config", "set", "serve.port", "99999", "--file", str(file)])
    assert bad.exit_code == 2 and "between 1 and 65535" in bad.stderr
    assert not file.exists()
    good = runner.invoke(app, ["config", "set", "serve.port", "65535", "--file", str(file)])
    assert good.exit_code == 0 and "port = 65535" in file.read_text()


def test_serve_flags_have_the_settings_bounds() -> None:
    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    compared = []
    for param in serve.params:
        dotted = "llm.max_concurrency" if param.name == "llm_concurrency" else f"serve.{param.name}"
        section, _, key = dotted.partition(".")
        if key not in {f.name for f in fields(SECTIONS[section])}:
            continue
        parse = spec_of(SECTIONS[section], key).parse
        if isinstance(parse, Number):
            bounds = (getattr(param, "min", None), getattr(param, "max", None))
            assert bounds == (parse.least, parse.most), f"--{param.name} and {dotted} disagree"
            compared.append(dotted)
    assert {"serve.port", "serve.max_connections", "llm.max_concurrency"} <= set(compared)


def test_an_unknown_section_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[lm]\nurl = "http://x/v1"\n')
    with pytest.raises(SettingsError, match=r"unknown section \[lm\] \(did you mean \[llm\]\?\)"):
        Settings.load(env={}, config_path=path)
    _toml(tmp_path, 'model = "m"\n[prices]\nm = [1, 2]\n[methods.rag]\ntop_k = 3\n')
    with pytest.raises(SettingsError, match=r"unknown top-level key 'model'"):
        Settings.load(env={}, cwd=tmp_path)  # an untrusted file too


def test_config_show_and_ask_refuse_an_unknown_section(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[lm]\nurl = "http://x/v1"\n')
    shown = runner.invoke(app, ["config", "show"], env={"TABLEQUEST_CONFIG": str(path)})
    assert shown.exit_code == 2 and "did you mean [llm]?" in shown.stderr
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    asked = runner.invoke(app, ["ask", "x", "-s", str(table), "--config-file", str(path)])
    assert asked.exit_code == 2 and "unknown section [lm]" in asked.stderr


def test_a_methods_table_must_name_a_registered_method(tmp_path: Path) -> None:
    path = _toml(tmp_path, "[methods.drect]\nmax_tokens = 10\n")
    with pytest.raises(OptionError, match=r"no method 'drect'.*did you mean \[methods.direct\]"):
        get_method("direct").resolve_options(config_paths=[path])
    shown = runner.invoke(app, ["config", "show"], env={"TABLEQUEST_CONFIG": str(path)})
    assert shown.exit_code == 2 and "[methods.drect]" in shown.stderr
    register_method("plugin-x", lambda _o, _c: None, input="none", description="x")
    try:  # a plugin's method is as good as a built-in one
        path.write_text("[methods.plugin-x]\n[methods.direct]\nmax_tokens = 10\n")
        check_method_tables(Settings.load(env={}, config_path=path).files)
    finally:
        unregister_method("plugin-x")


COMPUTED = (
    "store.path",
    "traces.dir",
    "store.cache_dir",
    "embeddings.device",
    "sandbox.memory_budget_mb",
    "serve.token_file",
)


def test_config_show_and_get_print_computed_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("TABLEQUEST_CACHE_DIR", "TABLEQUEST_TRACE_DIR", "TABLEQUEST_SANDBOX_MEMORY_BUDGET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    shown = runner.invoke(app, ["config", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    settings = json.loads(shown.stdout)["settings"]
    from tablequest.cli._options import default_store_path
    from tablequest.llm import default_cache_dir
    from tablequest.service import default_token_file
    from tablequest.trace import default_trace_dir

    paths = [default_store_path(), default_trace_dir(), default_cache_dir()]
    expected = [*map(str, paths), "auto", None, str(default_token_file())]
    for key, value in zip(COMPUTED, expected, strict=True):
        assert settings[key]["source"] == "default, computed", key
        if value is not None:
            assert settings[key]["value"] == value, key
    assert settings["sandbox.memory_budget_mb"]["value"] > 0
    text = runner.invoke(app, ["config", "show"]).stdout
    assert (
        f"store.path = {paths[0]}  (default, computed)" in text
        and "= none  (default, c" not in text
    )
    got = runner.invoke(app, ["config", "get", "traces.dir"])
    assert got.stdout.strip() == str(paths[1]) and "(default, computed)" in got.stderr


def test_a_value_that_was_set_is_not_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", "/tmp/elsewhere")
    got = json.loads(runner.invoke(app, ["config", "get", "store.cache_dir", "--json"]).stdout)
    assert got == {"key": "store.cache_dir", "value": "/tmp/elsewhere",
                   "source": "$TABLEQUEST_CACHE_DIR"}  # fmt: skip
