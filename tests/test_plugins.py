"""Plugins from an out-of-tree package: a reader, an LLM backend and a method.

The fixture writes a package the way pip would install it: ``myplugin/__init__.py`` and
``myplugin-0.1.dist-info/{METADATA,entry_points.txt}`` in one folder, put on the path of CLI
subprocesses (entry points are read from the environment, so a subprocess is the honest
test). The made-up format is ``.pipe``: a ``%PIPE`` magic line, then ``|``-separated rows.
The backend answers from the prompt the plugin method builds, so "42" comes back only when
the reader read the file, the store kept its tables in the serialization the reader declared
(CSV) and the method reached the backend given by ``--llm``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablequest import plugins
from tablequest.llm import LLMConfig, build_llm
from tablequest.llm.backends import BackendOptions
from tablequest.llm.config import ConfigError, llm_backends, register_llm_backend
from tablequest.llm.scripted import Scripted
from tablequest.plugins import PluginRegistry, Plugins
from tablequest.table import Table, UnreadableTable, read_tables
from tablequest.table.readers import (
    ReadInput,
    detect_format,
    format_spec,
    register_reader,
    registered_formats,
    text_format_for,
)

PLUGIN = '''
"""A third-party tablequest plugin: a reader, an LLM backend and a method."""
from pydantic import Field

from tablequest import MethodOptions, Result, register_method
from tablequest.llm.backends import BackendOptions
from tablequest.llm.config import register_llm_backend
from tablequest.llm.scripted import Scripted
from tablequest.table import Table, UnreadableTable
from tablequest.table.readers import register_reader

MAGIC = b"%PIPE\\n"


def read_pipe(inp):
    if not inp.data.startswith(MAGIC):
        raise UnreadableTable(inp.path, "no %PIPE line")
    lines = inp.data[len(MAGIC):].decode("utf-8").splitlines()
    return [Table.from_rows(line.split("|") for line in lines if line.strip())]


def register_readers():
    register_reader("pipe", read_pipe, (".pipe",), magic=MAGIC, text_format="csv")


class OracleOptions(BackendOptions):
    ARG = "needle"
    needle: str = Field(min_length=1)
    answer: str = "42"


def oracle(options):
    def reply(messages, params):
        found = options.needle in messages[-1]["content"]
        return options.answer if found else "no such row"
    return Scripted(reply, model="oracle")


def register_llms():
    register_llm_backend("oracle", oracle, OracleOptions, description="answers from the prompt")


class Stored:
    name = "stored"

    def __init__(self, options, context):
        self.llm = context.llm

    def answer(self, question, source, *, task="tableqa", budget=None, trace=None):
        texts = [source.text(table_id) for table_id in source.table_ids()]
        prompt = question + "\\n\\n" + "\\n\\n".join(texts)
        reply = self.llm.chat([{"role": "user", "content": prompt}])[0].text
        return Result(answer=reply, status="answered")

    def close(self):
        pass


def register_methods():
    register_method("pluginmethod", Stored, MethodOptions, input="corpus",
                    description="asks the model over every stored table's text")


def broken():
    raise RuntimeError("this plugin is broken")
'''

ENTRY_POINTS = """
[tablequest.readers]
pipe = myplugin:register_readers

[tablequest.llms]
oracle = myplugin:register_llms

[tablequest.methods]
pluginmethod = myplugin:register_methods
broken = myplugin:broken
"""


@pytest.fixture()
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python path holds the installed-looking plugin package."""
    site = tmp_path / "site"
    (site / "myplugin").mkdir(parents=True)
    (site / "myplugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "myplugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: myplugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"
    return env


def _cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tablequest", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=240,
    )


def test_out_of_tree_reader_backend_and_method(plugin_env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "answers.pipe").write_text(
        "%PIPE\nname|answer\nDouglas|42\nAdams|7\n", encoding="utf-8"
    )
    store = str(tmp_path / "corpus.duckdb")

    ingest = _cli(plugin_env, tmp_path, "ingest", str(data), "--store", store, "--json")
    assert ingest.returncode == 0, ingest.stderr
    report = json.loads(ingest.stdout)
    assert report["tables_stored"] == 1 and not report["files_failed"], report

    search = _cli(plugin_env, tmp_path, "search", "Douglas", "--store", store)
    assert search.returncode == 0, search.stderr
    assert "(pipe)" in search.stdout
    assert "Douglas,42" in search.stdout  # previewed in the reader's declared format (CSV)

    ask = _cli(
        plugin_env, tmp_path, "ask", "What is the answer of Douglas?", "--store", store,
        "-m", "pluginmethod", "--llm", "oracle:Douglas,42", "--no-cache", "--json",
    )  # fmt: skip
    assert ask.returncode == 0, ask.stderr
    assert json.loads(ask.stdout)["answer"] == "42"

    methods = _cli(plugin_env, tmp_path, "methods")
    assert methods.returncode == 0, methods.stderr
    assert "pluginmethod" in methods.stdout
    assert "plugin broken (tablequest.methods) failed to load" in methods.stdout
    assert "this plugin is broken" in methods.stdout


def _read_semi(inp: ReadInput) -> list[Table]:
    if not inp.data.startswith(b"SEMI;"):
        raise UnreadableTable(inp.path, "no SEMI; prefix")
    text = inp.data[len(b"SEMI;") :].decode()
    return [Table.from_rows(line.split(";") for line in text.splitlines() if line)]


@pytest.fixture()
def fresh_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test end with it."""
    from tablequest.llm import config
    from tablequest.table.readers import _registry

    monkeypatch.setattr(_registry, "_SPECS", dict(_registry._SPECS))
    monkeypatch.setattr(_registry, "_EXTENSIONS", dict(_registry._EXTENSIONS))
    monkeypatch.setattr(config, "_SPECS", dict(config._SPECS))
    monkeypatch.setattr(plugins, "_ALL", dict(plugins._ALL))


@pytest.mark.usefixtures("fresh_registries")
def test_a_reader_registered_at_runtime_declares_its_format() -> None:
    with pytest.raises(ValueError, match="unknown format 'semi'; a new format declares"):
        register_reader("semi", _read_semi, (".semi",))
    with pytest.raises(ValueError, match="unknown text_format 'pdf'"):
        register_reader("semi", _read_semi, text_format="pdf")  # type: ignore[arg-type]
    register_reader("semi", _read_semi, (".semi",), magic=b"SEMI;", text_format="tsv")
    assert registered_formats()["semi"] == (".semi",)
    assert text_format_for("semi") == "tsv" and text_format_for("nope") == "markdown"
    spec = format_spec("semi")
    assert spec is not None and spec.magic == (b"SEMI;",) and not spec.binary
    # the magic number wins over an extension that lies, and over none at all
    assert detect_format("x.csv", b"SEMI;a;b\n1;2\n") == "semi"
    (table,) = read_tables("upload", data=b"SEMI;a;b\n1;2\n")
    assert table.source.format == "semi" and table.columns == ("a", "b")
    # built-ins keep what they declared when only their reader is replaced
    xlsx = format_spec("xlsx")
    assert xlsx is not None and xlsx.binary and xlsx.text_format == "html"


@pytest.mark.usefixtures("fresh_registries")
def test_llm_backend_options_are_validated() -> None:
    class Opts(BackendOptions):
        ARG = "reply"
        reply: str = "hi"
        repeat: int = 1

    register_llm_backend("echo-test", lambda o: Scripted([o.reply * o.repeat] * 3), Opts)
    assert "echo-test" in [b.name for b in llm_backends()]
    llm = build_llm(LLMConfig(cache=False), llm_spec="echo-test:ab,repeat=2")
    assert llm is not None and llm.chat([{"role": "user", "content": "q"}])[0].text == "abab"
    options = build_llm(LLMConfig(cache=False), llm_spec="echo-test", llm_options={"repeat": 3})
    assert options is not None and options.chat([{"role": "user", "content": "q"}])[0].text == (
        "hihihi"
    )
    with pytest.raises(ConfigError, match="--llm echo-test: repeat: Input should be a valid"):
        build_llm(LLMConfig(), llm_spec="echo-test:x,repeat=many")
    with pytest.raises(ConfigError, match="colour: Extra inputs are not permitted"):
        build_llm(LLMConfig(), llm_spec="echo-test", llm_options={"colour": "red"})
    with pytest.raises(ConfigError, match=r"unknown --llm 'nope'; expected one of .*gguf:\.\.\."):
        build_llm(LLMConfig(), llm_spec="nope")


@pytest.mark.usefixtures("fresh_registries")
def test_a_broken_hook_is_reported_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def good() -> None:
        calls.append("good")
        registry["a"] = 1

    def bad() -> None:
        raise ImportError("no module named nowhere")

    group = Plugins("tablequest.test-only", (good, bad))
    registry: PluginRegistry[int] = PluginRegistry(group)
    with caplog.at_level(logging.WARNING, logger="tablequest.plugins"):
        assert list(registry) == ["a"] and registry["a"] == 1 and len(registry) == 1
    assert calls == ["good"]  # once, however often it is read
    assert any("no module named nowhere" in r.getMessage() for r in caplog.records)
    (error,) = group.errors.values()
    assert error == "ImportError: no module named nowhere"
    assert plugins.all_plugin_errors()["tablequest.test-only"] == group.errors
