"""Killing or interrupting `tablequest ingest` (issue 12, defects 3 and 7).

Defect 3: SIGKILL (while the workers start, or while they read) or SIGTERM of an ingest over
the WikiTableQuestions CSVs left a resource tracker and two workers alive under PID 1 for
good. Now no process the ingest started outlives it.

Defect 7: Ctrl-C exited cleanly, raised `RuntimeError: Query interrupted` at COMMIT, or was
ignored, depending on the moment. Now SIGINT / SIGTERM commit the files read so far, print
the summary (with --json: the report, ``stopped`` and the signal) and exit 130 / 143 without
a traceback, at every moment; the same command run again finishes the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus import Store
from tablequest.corpus.storage.ingest import BATCH_FILES
from tablequest.table import read_tables


def _watch(proc: Any, p: subprocess.Popen[str], seen: dict[int, str | None]) -> dict[int, str]:
    """The command's children now, remembered (with their identity) in `seen`."""
    kids = proc.children(p.pid)
    for pid in kids:
        seen.setdefault(pid, proc.identity(pid))
    return kids


def _reach(
    proc: Any, p: subprocess.Popen[str], moment: str, store: Path, seen: dict[int, str | None]
) -> None:
    """Wait until the ingest is at `moment` (store opened / workers starting / a group
    committed), recording its children on the way."""
    wal = Path(f"{store}.wal")
    conditions = {
        "store opened": lambda: store.exists(),
        "workers starting": lambda: any("spawn_main" in c for c in _watch(proc, p, seen).values()),
        "group committed": lambda: (
            bool(_watch(proc, p, seen)) and wal.exists() and wal.stat().st_size > 0
        ),
    }
    proc.wait_for(lambda: p.poll() is not None or conditions[moment](), f"the ingest at {moment!r}")
    _watch(proc, p, seen)
    assert p.poll() is None, "the ingest ended before the test could interrupt it"


def _gone(proc: Any, seen: dict[int, str | None]) -> bool:
    return all(proc.identity(pid) != ident for pid, ident in seen.items())


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["workers starting", "group committed"])
def test_no_worker_outlives_a_sigkilled_ingest(
    proc: Any, big_input: list[str], tmp_path: Path, moment: str
) -> None:
    store = tmp_path / "s.duckdb"
    p = proc.start("ingest", *big_input, "--store", str(store), "--json")
    seen: dict[int, str | None] = {}
    try:
        _reach(proc, p, moment, store, seen)
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=proc.guard) == -signal.SIGKILL
        proc.wait_for(lambda: _gone(proc, seen), "the workers and the resource tracker to exit")
    finally:
        if p.poll() is None:
            p.kill()
        proc.kill_all(seen)
        p.communicate(timeout=proc.guard)
    assert any(ident is not None for ident in seen.values())  # there were processes to watch
    with Store(store, read_only=True) as st:  # what was committed is readable, each file whole
        stored = sorted(st.known_files().items())[:20]
    for path, (_, n_tables) in stored:
        assert len(read_tables(path)) == n_tables


FILES = 400
assert FILES - BATCH_FILES >= 100


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "moment"),
    [
        (signal.SIGINT, "store opened"),
        (signal.SIGINT, "workers starting"),
        (signal.SIGINT, "group committed"),
        (signal.SIGTERM, "group committed"),
    ],
    ids=["SIGINT-store-opened", "SIGINT-workers-starting", "SIGINT-group-committed", "SIGTERM"],
)
def test_signal_commits_what_was_read_and_exits_cleanly(
    proc: Any, tmp_path: Path, sig: int, moment: str
) -> None:
    # 400 files: the first group commits at most 256 (BATCH_FILES), so 144 or more are still
    # unread when the signal comes
    folder = proc.write_csvs(tmp_path / "tables", FILES)
    store = tmp_path / "s.duckdb"
    p = proc.start("ingest", str(folder), "--store", str(store), "--json")
    seen: dict[int, str | None] = {}
    try:
        _reach(proc, p, moment, store, seen)
        os.killpg(p.pid, sig)  # as a terminal's Ctrl-C does: the whole process group
        out, err = p.communicate(timeout=proc.guard)
        proc.wait_for(lambda: _gone(proc, seen), "the ingest's workers to exit")
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        proc.kill_all(seen)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    report = json.loads(out)
    assert report["stopped"] is True and report["signal"] == signal.Signals(sig).name
    assert report["files_failed"] == []
    with Store(store, read_only=True) as st:
        assert len(st) == report["tables_stored"]  # every file counted is committed, whole
        assert all(n == 1 for _, n in st.known_files().values())
    if sig == signal.SIGINT and moment == "group committed":
        again = proc.run("ingest", str(folder), "--store", str(store), "--json")
        assert again.returncode == 0, again.stderr
        final = json.loads(again.stdout)
        assert final["tables_unchanged"] == report["tables_stored"]
        assert final["tables_stored"] + final["tables_unchanged"] == FILES
        with Store(store, read_only=True) as st:
            assert len(st) == FILES
