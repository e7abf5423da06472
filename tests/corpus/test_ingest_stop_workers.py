"""Stopping ingest workers early without killing one mid-send (corpus/storage/reading.py).

A worker killed while it sent a chunk's result left half a message in the pool's result
pipe and the ingest hung at shutdown. Now the parent tells the workers to stop (a shared
event): they return nothing and exit normally; only a worker still busy after the grace
period is SIGKILLed, and shutdown still returns.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus.storage import reading


def _pool(stop: Any) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=2,
        mp_context=get_context("spawn"),
        initializer=reading._worker_start,
        initargs=(os.getpid(), stop),
    )


def _csvs(root: Path, n: int) -> list[tuple[str, str | None]]:
    root.mkdir()
    for i in range(n):
        (root / f"t{i}.csv").write_text(f"a,b\nx{i},{i}\n", encoding="utf-8")
    return [(str(root / f"t{i}.csv"), None) for i in range(n)]


@pytest.mark.slow
def test_stopped_workers_return_nothing_and_exit_normally(tmp_path: Path) -> None:
    stop = get_context("spawn").Event()
    todo = _csvs(tmp_path / "t", 8)
    pool = _pool(stop)
    try:
        first = pool.submit(reading._read_many, todo[:4]).result(timeout=120)
        assert [kind for kind, _ in first] == ["stored"] * 4  # reads while not stopped
        stop.set()
        later = [pool.submit(reading._read_many, todo[4:]) for _ in range(3)]
        reading._stop_pool(pool, later, stop)
        processes = list(pool._processes.values())
        assert all(f.cancelled() or f.result() == [] for f in later)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    assert all(p.exitcode == 0 for p in processes)  # none was killed


@pytest.mark.slow
def test_a_worker_still_busy_after_the_grace_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "_STOP_GRACE", 0.5)
    stop = get_context("spawn").Event()
    pool = _pool(stop)
    try:
        assert pool.submit(abs, -1).result(timeout=120) == 1  # the workers have started
        busy = pool.submit(time.sleep, 600)  # one file that takes for ever to read
        deadline = time.monotonic() + 120
        while not busy.running() and time.monotonic() < deadline:
            time.sleep(0.05)  # handed to a worker: no longer cancellable
        processes = list(pool._processes.values())
        reading._stop_pool(pool, [busy], stop)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # returns: nothing left half-sent
    assert any(p.exitcode == -9 for p in processes)


def test_in_the_parent_read_many_ignores_the_worker_event(tmp_path: Path) -> None:
    todo = _csvs(tmp_path / "t", 2)
    assert reading._worker_stop is None
    assert len(reading._read_many(todo)) == 2
