"""One behaviour in every command: --version, shell completion, usage lines, short flags,
help texts, paper citations, ingest refusals (missing paths, nothing stored) and Ray that
stays out of the way (a plain ingest under $TABLEQUEST_RAY_ADDRESS, no banners)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import tablequest
from tablequest.cli import app
from tablequest.corpus import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
runner = CliRunner()


def _commands() -> Iterator[tuple[list[str], Any]]:
    """Every leaf command with its words (``["eval", "run"]``)."""
    root = typer.main.get_command(app)

    def walk(cmd: Any, words: list[str]) -> Iterator[tuple[list[str], Any]]:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*words, name])
        else:
            yield words, cmd

    yield from walk(root, [])


def _options(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if getattr(p, "param_type_name", "") == "option"]


def test_version() -> None:
    for flag in ("--version", "-V"):
        result = runner.invoke(app, [flag])
        assert (
            result.exit_code == 0
            and result.stdout.strip() == f"tablequest {tablequest.__version__}"
        )


def test_shell_completion_is_offered() -> None:
    help_text = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text


def test_usage_lines_name_arguments_in_capitals() -> None:
    seen = 0
    assert len(list(_commands())) > 15
    for words, _ in _commands():
        result = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, words
        usage = next(line for line in result.stdout.splitlines() if "Usage:" in line)
        assert "{" not in usage and not re.search(r"\[[a-z_]+\]", usage), (words, usage)
        seen += 1
    assert seen > 15
    ingest = runner.invoke(app, ["ingest", "--help"], env={"COLUMNS": "200"}).stdout
    assert "tablequest ingest [OPTIONS] PATHS..." in ingest
    search = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout
    assert "tablequest search [OPTIONS] QUESTION " in search + " "


def test_short_flags_mean_one_thing() -> None:
    for words, cmd in _commands():
        for param in _options(cmd):
            if "-o" in param.opts:
                assert "--option" in param.opts, (words, param.opts)
            if "-s" in param.opts:
                assert "--store" in param.opts, (words, param.opts)
            if "-m" in param.opts:
                assert "--method" in param.opts, (words, param.opts)
    chosen = {"search", "ask", "batch", "eval run"}
    for words, cmd in _commands():
        if " ".join(words) in chosen:
            (method,) = [p for p in _options(cmd) if "--method" in p.opts]
            assert "-m" in method.opts, words
        store = [p for p in _options(cmd) if "--store" in p.opts]
        if store:
            assert "-s" in store[0].opts, words


def test_help_shows_the_toml_section_name() -> None:
    for words in (["batch"], ["eval", "run"]):
        result = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "300"})
        assert "under [scale] in tablequest.toml" in result.stdout, words


def test_shared_options_show_what_they_take_not_a_type_name() -> None:
    """``--table-id ID`` (repeatable), ``--llm-url URL``, ``--model NAME``: not typer's
    ``<list[str]>`` or ``<str>``."""
    for words in (["ask"], ["batch"], ["eval", "run"], ["doctor"]):
        help_text = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "300"}).stdout
        assert re.search(r"--llm-url\s+URL\s", help_text), words
        assert re.search(r"--model\s+NAME\s", help_text), words
        assert "<list[" not in help_text, words
    ask = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "300"}).stdout
    assert re.search(r"--table-id\s+ID\s+A table to answer from \(repeatable\)", ask)
    assert re.search(r"--api-key\s+KEY\s", ask)


def test_methods_cites_the_paper_by_title_and_arxiv_id() -> None:
    result = runner.invoke(app, ["methods", "rag"], env={"COLUMNS": "200"})
    assert "TableRAG: Million-Token Table Understanding" in result.stdout
    assert "arXiv:2410.04739" in result.stdout and "papers/" not in result.stdout
    for name, arxiv in (("scope", "2609.03395"), ("research", "2603.09151")):
        out = runner.invoke(app, ["methods", name, "--json"]).stdout
        assert f"arXiv:{arxiv}" in json.loads(out)["paper"], name
    listing = json.loads(runner.invoke(app, ["methods", "--json"]).stdout)
    seek = next(m for m in listing if m["name"] == "seek")
    assert seek["paper"].startswith("TableSeek: Structure-Preserving Agentic Evidence Seeking")
    assert not any(str(m["paper"]).startswith("papers/") for m in listing)


def test_ingest_reports_a_missing_input_as_not_found(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "-s", str(store)])
    assert result.exit_code == 2 and "not found" in result.stderr and "nope" in result.stderr
    assert "files seen" not in result.output and not store.exists()
    as_json = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "-s", str(store), "--json"])
    assert json.loads(as_json.stdout)["error"]["code"] == "not_found"


def test_an_ingest_that_stored_nothing_leaves_no_store(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.xlsx").write_text("text, not a workbook")
    store = tmp_path / "sub" / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(bad), "--store", str(store)])
    assert result.exit_code == 1 and "nothing stored" in result.stderr
    assert not store.exists() and not (tmp_path / "sub").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    manifest = tmp_path / "corpus.json"
    sharded = runner.invoke(app, ["ingest", str(empty), "-s", str(manifest), "--shards", "2"])
    assert sharded.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "empty"]


def test_an_existing_store_is_kept_when_nothing_new_is_stored(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    (tmp_path / "a.csv").write_text("a,b\n1,2\n")
    assert runner.invoke(app, ["ingest", str(tmp_path / "a.csv"), "-s", str(store)]).exit_code == 0
    bad = tmp_path / "broken.xlsx"
    bad.write_text("not a workbook")
    result = runner.invoke(app, ["ingest", str(bad), "-s", str(store)])
    assert result.exit_code == 1 and store.exists()
    with Store(store, read_only=True) as st:
        assert len(st) == 1


def test_the_ray_address_variable_does_not_break_a_plain_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLEQUEST_RAY_ADDRESS", "ray://nowhere.invalid:10001")
    store = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "-s", str(store), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tables_stored"] == 16
    explicit = runner.invoke(app, ["ingest", str(EXAMPLES), "-s", str(store), "--ray", "local"])
    assert explicit.exit_code == 2 and "--shards N" in explicit.stderr


@pytest.mark.slow
def test_ray_prints_no_banners(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    args = [sys.executable, "-m", "tablequest", "ingest", str(EXAMPLES),
            "-s", str(tmp_path / "c.json"), "--shards", "2", "--ray", "local"]  # fmt: skip
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "16 tables stored" in run.stdout
    assert run.stderr.strip() == "", run.stderr
