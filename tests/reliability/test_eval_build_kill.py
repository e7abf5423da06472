"""An eval killed while building its corpus (issue 12, defect 8).

The build writes a hidden temporary store next to the cache file and renames it when done;
SIGKILL leaves the temporary `.tmp.duckdb` (and `.wal`) behind, and later runs never cleaned
them (16 MB each on WTQ). Now every corpus build first removes those of dead builds, and
leaves alone those of live ones.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tablequest.eval.stale_builds import clean_stale_builds


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob(".*.tmp.duckdb*")) if cache.is_dir() else []


@pytest.mark.slow
def test_a_later_run_removes_what_a_killed_build_left(
    proc: Any, evalrun_wtq: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big"
    shutil.copytree(evalrun_wtq, big)
    proc.write_csvs(big / "csv" / "209-csv", 3000, rows=20)
    cache = tmp_path / "cache"
    args = ["eval", "retrieval", "wtq", "--method", "grep", "--cache-dir", str(cache), "--json"]
    p = proc.start(*args, "--data", str(big))
    try:
        proc.wait_for(lambda: p.poll() is not None or _leftovers(cache), "the corpus build")
        assert p.poll() is None, "the build ended before the test could kill it"
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=proc.guard)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    left = _leftovers(cache)
    assert left and all(f".{p.pid}-" in name for name in left)

    later = proc.run(*args, "--data", str(evalrun_wtq))  # another corpus, same cache folder
    assert later.returncode == 0, later.stderr
    assert json.loads(later.stdout)["n"] > 0
    assert _leftovers(cache) == []


def test_only_dead_builds_are_cleaned(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    old = time.time() - 3600

    def leftover(pid: int, tag: str) -> Path:
        path = cache / f".wtq-csv-0123456789abcdef.{pid}-{tag}.tmp.duckdb"
        for file in (path, path.with_name(path.name + ".wal")):
            file.write_bytes(b"x")
            os.utime(file, (old, old))
        return path

    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    )
    dead_pid = int(finished.stdout)  # a process that has exited (and been reaped)
    gone = leftover(dead_pid, "aaaaaaaa")
    mine = leftover(os.getpid(), "bbbbbbbb")  # this process: maybe another thread's build
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live = leftover(sleeper.pid, "cccccccc")
        fresh = cache / f".wtq-html-0123456789abcdef.{dead_pid}-dddddddd.tmp.duckdb"
        fresh.write_bytes(b"x")  # modified after the build below started: not touched
        removed = clean_stale_builds(cache, before=time.time() - 60)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sorted(removed) == sorted([gone, gone.with_name(gone.name + ".wal")])
    assert mine.exists() and live.exists() and fresh.exists() and not gone.exists()


def test_a_build_held_by_a_live_process_is_kept(tmp_path: Path) -> None:
    """A process in another PID namespace can look dead: its DuckDB lock still protects it."""
    cache = tmp_path / "cache"
    cache.mkdir()
    path = cache / ".wtq-csv-0123456789abcdef.999999-eeeeeeee.tmp.duckdb"
    code = textwrap.dedent(
        f"""
        import duckdb, sys
        con = duckdb.connect({str(path)!r})
        print("open", flush=True)
        sys.stdin.read()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        old = time.time() - 3600
        os.utime(path, (old, old))
        assert clean_stale_builds(cache, before=time.time()) == []
        assert path.exists()
    finally:
        holder.communicate("", timeout=60)
    assert path in clean_stale_builds(cache, before=time.time() + 1)
    assert not path.exists()
