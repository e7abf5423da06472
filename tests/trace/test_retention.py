"""Retention of traces and charts: limits, what is never removed, and when it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tablequest.methods.research.method import prune_chart_folders
from tablequest.trace import Trace, new_trace_path
from tablequest.trace.retention import (
    Item,
    Retention,
    RetentionError,
    chart_retention,
    choose_removals,
    prune_charts,
    prune_traces,
    trace_retention,
)

NOW = time.time()  # the hook in Trace prunes by the real clock
DAY = 86400.0


def _trace(folder: Path, age_days: float, size: int = 10) -> Path:
    path = new_trace_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    stamp = NOW - age_days * DAY
    os.utime(path, (stamp, stamp))
    return path


def _charts(trace: Path, age_days: float, files: int = 2, size: int = 100) -> Path:
    folder = trace.with_name(trace.stem + "-charts")
    folder.mkdir()
    stamp = NOW - age_days * DAY
    for i in range(1, files + 1):
        png = folder / f"chart-{i}.png"
        png.write_bytes(b"p" * size)
        os.utime(png, (stamp, stamp))
    os.utime(folder, (stamp, stamp))
    return folder


def test_choose_removals_by_count_bytes_and_age() -> None:
    items = [Item(f"f{i}", 100, NOW - i * DAY) for i in range(6)]  # f5 oldest

    def names(chosen: list[Item]) -> list[str]:
        return [i.name for i in chosen]

    by_count = choose_removals(items, Retention(3, None, None), now=NOW)
    assert names(by_count) == ["f5", "f4", "f3"]
    by_bytes = choose_removals(items, Retention(None, 250, None), now=NOW)
    assert names(by_bytes) == ["f5", "f4", "f3", "f2"]
    by_age = choose_removals(items, Retention(None, None, 2.5), now=NOW)
    assert names(by_age) == ["f5", "f4", "f3"]
    assert choose_removals(items, Retention(None, None, None), now=NOW) == []
    kept = choose_removals(items, Retention(3, None, None), now=NOW, protect=[Path("f5")])
    assert names(kept) == ["f4", "f3", "f2"]  # the protected one still counts


def test_prune_traces_removes_oldest_traces_and_their_charts_only(tmp_path: Path) -> None:
    traces = [_trace(tmp_path, age) for age in (5, 4, 3, 2, 1)]
    old_charts = _charts(traces[0], 5)
    mixed = _charts(traces[1], 4)
    (mixed / "my-notes.txt").write_text("the user's own file")
    user_files = [tmp_path / "notes.jsonl", tmp_path / "keep.txt", tmp_path / "x-charts"]
    user_files[0].write_text("{}\n")
    user_files[1].write_text("mine")
    user_files[2].mkdir()
    for path in user_files:
        os.utime(path, (NOW - 99 * DAY, NOW - 99 * DAY))
    removed = prune_traces(tmp_path, limits=Retention(2, None, 30), now=NOW)
    assert removed == traces[:3]
    assert [p.exists() for p in traces] == [False, False, False, True, True]
    assert not old_charts.exists()
    assert sorted(p.name for p in mixed.iterdir()) == ["my-notes.txt"]  # charts gone, file kept
    assert all(p.exists() for p in user_files)


def test_traces_being_written_are_never_removed(tmp_path: Path) -> None:
    oldest = _trace(tmp_path, 10)
    live = Trace(oldest)  # this process is still writing it
    other = new_trace_path(tmp_path).name.replace(f"-p{os.getpid()}-", f"-p{os.getppid()}-")
    elsewhere = tmp_path / other  # written by another process that is still running
    elsewhere.write_text("{}\n")
    os.utime(elsewhere, (NOW - 9 * DAY, NOW - 9 * DAY))
    newer = [_trace(tmp_path, age) for age in (3, 2, 1)]
    from tablequest.trace.recorder import live_trace_paths

    removed = prune_traces(
        tmp_path, limits=Retention(3, None, None), protect=live_trace_paths(), now=NOW
    )
    assert removed == newer[:2]
    assert oldest.exists() and elsewhere.exists() and newer[2].exists()
    del live


def test_a_new_trace_prunes_its_folder_under_the_env_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP", "2")
    old = [_trace(tmp_path, age, size=10) for age in (3, 2, 1)]
    Trace(tmp_path / "question-7.jsonl").event("decision", stage="request")  # eval's names
    assert all(p.exists() for p in old)  # a trace named otherwise prunes nothing
    fresh = Trace(new_trace_path(tmp_path))
    fresh.event("decision", stage="request")
    assert fresh.path is not None and fresh.path.exists()
    assert [p.exists() for p in old] == [False, True, True]  # the limit plus the run in progress
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP", "0")
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP_BYTES", "1K")
    Trace(new_trace_path(tmp_path)).event("decision", stage="request")
    assert [p.exists() for p in old] == [False, True, True]  # within 1 KiB
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP_DAYS", "1.5")
    Trace(new_trace_path(tmp_path)).event("decision", stage="request")
    assert [p.exists() for p in old] == [False, False, True]  # 2 days old


def test_bad_settings_are_named_and_nothing_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RetentionError, match=r"TABLEQUEST_TRACE_KEEP_BYTES='lots' is not a whole"):
        trace_retention({"TABLEQUEST_TRACE_KEEP_BYTES": "lots"})
    with pytest.raises(RetentionError, match=r"TABLEQUEST_CHARTS_KEEP_DAYS='-1' is not a number"):
        chart_retention({"TABLEQUEST_CHARTS_KEEP_DAYS": "-1"})
    with pytest.raises(RetentionError, match=r"TABLEQUEST_TRACE_KEEP='1e3' is not a whole"):
        trace_retention({"TABLEQUEST_TRACE_KEEP": "1e3"})
    assert trace_retention({}) == Retention(1000, 1024**3, 30.0)
    assert trace_retention(
        {"TABLEQUEST_TRACE_KEEP": "0", "TABLEQUEST_TRACE_KEEP_BYTES": "500M",
         "TABLEQUEST_TRACE_KEEP_DAYS": "0.5"}
    ) == Retention(None, 500 * 1024**2, 0.5)  # fmt: skip
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP", "few")
    old = _trace(tmp_path, 400)
    Trace(new_trace_path(tmp_path)).event("decision", stage="request")
    Trace(new_trace_path(tmp_path)).event("decision", stage="request")
    assert old.exists()
    err = capsys.readouterr().err
    assert err.count("TABLEQUEST_TRACE_KEEP='few' is not a whole number") == 1  # once


def test_prune_charts_keeps_the_folder_just_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = [_trace(tmp_path, age) for age in (4, 3, 2, 1)]
    folders = [_charts(t, age) for t, age in zip(traces, (4, 3, 2, 1), strict=True)]
    other = tmp_path / "plots-charts"  # not named after a trace: not ours
    other.mkdir()
    (other / "chart-1.png").write_bytes(b"p")
    removed = prune_charts(tmp_path, limits=Retention(2, None, None), protect=[folders[0]], now=NOW)
    assert removed == folders[1:3]
    assert folders[0].exists() and folders[3].exists() and other.exists()
    assert all(t.exists() for t in traces)  # charts go, their traces stay
    removed = prune_charts(tmp_path, limits=Retention(None, 250, None), now=NOW)
    assert removed == [folders[0]]  # 200 bytes each: one fits
    monkeypatch.setenv("TABLEQUEST_CHARTS_KEEP", "1")
    newest = _charts(_trace(tmp_path, 0), 0)
    prune_chart_folders(newest)  # what DTR runs after writing a run's charts
    assert newest.exists() and not folders[3].exists()


def test_given_settings_prune_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from tablequest.methods import MethodContext, Result
    from tablequest.methods.research.method import DTR
    from tablequest.settings import Settings

    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP", "few")  # where it runs (e.g. a Ray worker)
    monkeypatch.setenv("TABLEQUEST_CHARTS_KEEP", "0")
    keep = {"TABLEQUEST_TRACE_KEEP": "2", "TABLEQUEST_CHARTS_KEEP": "1"}
    settings = Settings.load(env=keep, cwd=tmp_path)  # what the run loaded
    old = [_trace(tmp_path, age) for age in (3, 2, 1)]
    Trace.for_query(tmp_path, traces=settings.traces).event("decision", stage="request")
    assert [p.exists() for p in old] == [False, True, True]
    charts = [_charts(t, age) for t, age in zip(old[1:], (2, 1), strict=True)]
    dtr = DTR(context=MethodContext(settings=settings))
    run = SimpleNamespace(
        result=Result(answer="1", status="answered", trace_path=str(old[2])), figures=[b"p"]
    )
    monkeypatch.setattr(dtr, "research", lambda *a, **k: run)
    result = dtr.answer("q", None)  # writes its chart into the newest folder, then prunes
    assert result.details["charts"] == [str(charts[1] / "chart-1.png")]
    assert [c.exists() for c in charts] == [False, True]


def test_concurrent_pruners_in_two_processes(tmp_path: Path) -> None:
    traces = []
    for i in range(60):  # older names (no writer pid): this test's process is not their writer
        path = _trace(tmp_path, 1 + i / 100)
        traces.append(path.rename(tmp_path / f"20240101-000000-{i:08x}.jsonl"))
    code = (
        "import sys; from pathlib import Path; "
        "from tablequest.trace.retention import Retention, prune_traces; "
        "prune_traces(Path(sys.argv[1]), limits=Retention(10, None, None))"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)]) for _ in range(2)]
    deadline = time.monotonic() + 120
    for proc in procs:
        assert proc.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
    left = sorted(p for p in tmp_path.iterdir())
    assert left == sorted(traces[:10])  # the 10 newest (smallest age), whoever removed what


def test_serve_refuses_to_start_with_a_bad_retention_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from tablequest.cli import app

    monkeypatch.setenv("TABLEQUEST_CHARTS_KEEP_BYTES", "-5")
    args = [
        "serve",
        "--token-file",
        str(tmp_path / "t"),
        "--store",
        str(tmp_path / "s"),
        "--create",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "TABLEQUEST_CHARTS_KEEP_BYTES='-5' is not a whole number of bytes" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "t").exists()
