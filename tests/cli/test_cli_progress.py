"""Progress on a terminal (issue 39, "Progress"): `ask` shows each stage on stderr as it
happens, not with --quiet or --json nor off a terminal; an ingest of one big file shows its
size and rows, not "1/1". The terminal is forced through `_progress.stderr_is_terminal`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tablequest.cli import _llm, app
from tablequest.corpus import ingest_corpus, open_corpus, progress_stages
from tablequest.corpus.storage import streaming
from tablequest.llm import Scripted

runner = CliRunner()


@pytest.fixture
def stderr_console(monkeypatch: pytest.MonkeyPatch) -> Console:
    """The commands' stderr console, writing into a buffer; stderr counts as a terminal."""
    console = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr("tablequest.cli._output.err_console", console, raising=False)
    monkeypatch.setattr("tablequest.cli._progress.stderr_is_terminal", lambda: True)
    return console


def shown(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def ask(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reply: Any, *flags: str) -> Any:
    """`tablequest ask` of the method `direct` over a small table file, the model scripted."""
    table = tmp_path / "sales.csv"
    table.write_text("Region,Q3\nWest,205\nEast,3\n")
    real = _llm.model_or_fail
    model = Scripted(reply)
    monkeypatch.setattr(
        "tablequest.cli.ask.model_or_fail", lambda flags, **kw: (real(flags, **kw)[0], model)
    )
    args = ["ask", "What was West's Q3?", "-s", str(table), "-m", "direct", *flags]
    return runner.invoke(app, [*args, "--trace-dir", str(tmp_path / "traces")])


def test_ask_on_a_terminal_shows_each_stage_as_it_happens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stderr_console: Console
) -> None:
    before_the_model: list[str] = []

    def reply(messages: Any, params: Any) -> str:
        before_the_model.append(shown(stderr_console))
        cited = [{"table": "Table_0", "column": "Q3", "value": "205"}]
        return json.dumps({"status": "answered", "answer": "205", "evidence": cited})

    out = ask(monkeypatch, tmp_path, reply)
    assert out.exit_code == 0, out.output
    lines = shown(stderr_console).splitlines()
    titles = [line.split("s  ", 1)[1] for line in lines]  # "  0.1s  TITLE — details" each
    assert before_the_model[0].splitlines() == lines[:1]  # shown before the model answered
    assert titles[0] == "decision · ask — method: direct; options: gold"
    assert titles[1].startswith("scripted · ") and " tokens · " in titles[1]  # the call
    assert titles[2] == 'answer · answered — tables: ["Table_0"]; answer: 205'
    assert "verified: verified" in titles[-1]
    trace = next((tmp_path / "traces").glob("*.jsonl"))  # the ask's trace is still written
    assert trace.read_text().count("\n") == len(lines)


@pytest.mark.parametrize("flag", ["--quiet", "--json", None])
def test_no_stages_with_quiet_json_or_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stderr_console: Console, flag: str | None
) -> None:
    if flag is None:
        monkeypatch.setattr("tablequest.cli._progress.stderr_is_terminal", lambda: False)
    out = ask(monkeypatch, tmp_path, ["205"], *([flag] if flag else []))
    assert out.exit_code == 0, out.output
    assert "decision ·" not in shown(stderr_console) + out.stderr
    assert len(list((tmp_path / "traces").glob("*.jsonl"))) == 1


def big_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plain CSV over the streaming threshold (lowered: the file stays small)."""
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1000)
    path = tmp_path / "big.csv"
    path.write_text("id,city,value\n" + "".join(f"{i},c{i % 7},{i * 3}\n" for i in range(300)))
    return path


def test_a_big_file_announces_its_size_then_its_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = big_csv(tmp_path, monkeypatch)
    stages: list[str] = []
    with (
        open_corpus(tmp_path / "s.duckdb", read_only=False) as store,
        progress_stages(stages.append),
    ):
        report = ingest_corpus(store, [path])
    assert report.tables_stored == 1
    size = f"{path.stat().st_size / 1e6:,.1f} MB"
    assert stages[:3] == [
        f"reading big.csv ({size})…",
        "big.csv: 300 rows read; typing 3 columns…",
        "big.csv: 300 rows; storing…",
    ]


def test_ingest_of_one_big_file_shows_rows_not_a_file_count(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = big_csv(tmp_path, monkeypatch)
    console = Console(file=io.StringIO(), width=200, force_terminal=True)
    monkeypatch.setattr("tablequest.cli._output.err_console", console, raising=False)
    monkeypatch.setattr("tablequest.cli._progress.stderr_is_terminal", lambda: True)
    out = runner.invoke(app, ["ingest", str(path), "-s", str(tmp_path / "s.duckdb")])
    assert out.exit_code == 0, out.output
    drawn = shown(console)
    assert "big.csv: 300 rows" in drawn  # the bar's last frame names the stage
    assert "1/1" not in drawn


def test_the_file_count_shows_for_more_than_one_file() -> None:
    from tablequest.cli._progress import IngestBar

    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    bar = IngestBar(console)
    with bar.progress:
        bar.files(0, 1)
        bar.progress.refresh()
        one = shown(console)
        bar.files(3, 10)
        bar.progress.refresh()
    assert "ingesting" in one and "0/1" not in one
    assert "3/10 files" in shown(console)[len(one) :]
