"""render_trace and summarize, and the `trace show` CLI."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from tablequest.cli.trace import app
from tablequest.llm import Instrumented, LLMTimeout, Scripted
from tablequest.trace import Trace, read_trace, render_trace, summarize

runner = CliRunner()


def sample_trace(path: Path | None) -> Trace:
    trace = Trace(path)
    llm = Instrumented(
        Scripted(
            [
                '{"patterns": ["GDP", "2019"]}',
                LLMTimeout("no answer within 1s"),
                "<answer>42</answer>\nsecond line",
            ],
            model="fake-model",
        ),
        trace=trace,
    )
    llm.chat([{"role": "system", "content": "sys"}, {"role": "user", "content": "\nFind GDP."}])
    trace.event("rank", patterns=["GDP", "2019"], hits=[["t1", 1.0], ["t2", 0.5]])
    trace.event("decision", action="select", ids=["t1"], reason="x" * 300)
    with contextlib.suppress(LLMTimeout):
        llm.chat([{"role": "user", "content": "again"}])
    trace.event("fallback", reason="timeout")
    llm.chat([{"role": "user", "content": "QA prompt"}], max_tokens=4)
    trace.event(
        "llm_call",
        model="m",
        prompt_tokens=5,
        completion_tokens=1,
        latency_s=0.0,
        cached=True,
        messages=[],
        replies=[""],
    )
    return trace


def render_text(events: list[dict[str, object]], width: int = 160) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(render_trace(events, title="demo"))
    return console.export_text()


def test_summarize() -> None:
    events = sample_trace(None).events
    s = summarize(events)
    # the failed call is a counted call with an error
    assert s["calls"] == 4 and s["errors"] == 1 and s["cache_hits"] == 1
    assert s["prompt_tokens"] > 0 and s["events"] == 7
    assert summarize([]) == {
        "events": 0,
        "calls": 0,
        "requests": 0,
        "retries": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "seconds": 0.0,
        "cache_hits": 0,
        "errors": 0,
        "duration": 0.0,
    }


def test_render_shows_each_event_compactly() -> None:
    text = render_text(sample_trace(None).events)
    assert "demo" in text
    assert "fake-model" in text and "tok" in text
    assert "> Find GDP." in text  # first non-empty line of the last message
    assert '< {"patterns": ["GDP", "2019"]}' in text
    assert "finish=length" in text  # the QA reply was cut by max_tokens=4
    assert "cache hit" in text and "(empty)" in text
    assert "LLMTimeout" in text and "no answer within 1s" in text
    assert "action=select" in text and "…" in text
    assert "7 events · 4 LLM calls" in text and "1 errors" in text


def test_cli_show_renders_and_json(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    sample_trace(path)
    result = runner.invoke(app, ["show", str(path)])
    assert result.exit_code == 0, result.output
    assert "LLM calls" in result.output
    result = runner.invoke(app, ["show", str(path), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output) == read_trace(path)


def test_cli_show_latest(isolated_env: Path) -> None:
    result = runner.invoke(app, ["show", "latest"])  # no latest trace: bad input, as a missing file
    assert result.exit_code == 2 and "no finished trace files" in result.output
    missing = runner.invoke(app, ["show", str(isolated_env / "nope.jsonl")])
    assert missing.exit_code == 2 and "not found" in missing.output
    older = Trace(isolated_env / "traces" / "20200101-000000-aaaaaaaa.jsonl")
    older.event("qa", answer="old")
    newer = Trace(isolated_env / "traces" / "20300101-000000-bbbbbbbb.jsonl")
    newer.event("qa", answer="new")
    result = runner.invoke(app, ["show", "latest", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)[0]["answer"] == "new"


def test_cli_show_bad_file_is_an_error_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "error: not found:" in result.output  # bad input
    (tmp_path / "broken.jsonl").write_text("not json\n{}\n")
    result = runner.invoke(app, ["show", str(tmp_path / "broken.jsonl")])
    assert result.exit_code == 2 and "error: cannot read trace" in result.output  # not a trace
    assert result.exception is None or isinstance(result.exception, SystemExit)
