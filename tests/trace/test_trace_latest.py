"""`trace show latest`: by the start stamp in the name, never another running process's trace;
`trace view --out` has the short flag -O (``-o`` is --option everywhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from tablequest.cli import app as main_app
from tablequest.cli.trace import app
from tablequest.trace import Trace, latest_trace, new_trace_path, parse_trace_name

runner = CliRunner()

CHILD = """
import sys
from tablequest.trace import Trace
trace = Trace.for_query()
trace.event("qa", answer="other process")
print(trace.path, flush=True)
sys.stdin.read()
"""


def _shown_answer() -> str:
    result = runner.invoke(app, ["show", "latest", "--json"])
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output)[0]["answer"])


def test_latest_follows_the_name_stamp_not_mtimes(isolated_env: Path) -> None:
    first = Trace.for_query()
    first.event("qa", answer="first")
    second = Trace.for_query()
    second.event("qa", answer="second")
    assert first.path is not None and second.path is not None
    first.event("qa", answer="first, appended later")  # its mtime is now the newest
    future = time.time() + 3600
    os.utime(first.path, (future, future))
    assert _shown_answer() == "second"
    assert latest_trace() == second.path
    (isolated_env / "traces" / "notes.jsonl").write_text('{"kind": "qa"}\n')  # not a run's
    assert latest_trace() == second.path


def test_names_are_strictly_ordered_within_a_process(tmp_path: Path) -> None:
    names = [parse_trace_name(new_trace_path(tmp_path)) for _ in range(50)]
    assert all(n is not None for n in names)
    stamps = [n.ns for n in names if n is not None]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert {n.pid for n in names if n is not None} == {os.getpid()}
    assert parse_trace_name(tmp_path / "20200101-000000-aaaaaaaa.jsonl") is not None  # old
    assert parse_trace_name(tmp_path / "mine.jsonl") is None


def test_a_running_process_trace_is_not_latest_until_it_ends(isolated_env: Path) -> None:
    ours = Trace.for_query()
    ours.event("qa", answer="ours")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert child.stdout is not None
        theirs = Path(child.stdout.readline().strip())
        assert theirs.parent == isolated_env / "traces" and theirs.is_file()
        parsed = parse_trace_name(theirs)
        assert parsed is not None and parsed.pid == child.pid
        assert _shown_answer() == "ours"  # newer, but its writer is still running
    finally:
        child.communicate("", timeout=60)
    assert _shown_answer() == "other process"  # finished now: the newest stamp wins


def test_trace_view_out_short_flag_is_capital_o(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "run.jsonl")
    trace.event("qa", answer="x")
    out = tmp_path / "page.html"
    result = runner.invoke(main_app, ["trace", "view", str(trace.path), "-O", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!doctype html>") or "<html" in out.read_text()
    result = runner.invoke(main_app, ["trace", "view", str(trace.path), "-o", str(out)])
    assert result.exit_code == 2 and "-o" in result.output
