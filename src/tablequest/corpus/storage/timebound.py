"""`time_bound`: DuckDB's work on a connection ends once a reading budget's time is spent (a
streamed file's load, `streaming.py`). Apart from `storefile.py`, which is the store's file
handling and imports nothing above the lowest layers, because this one raises the reading
budget's `OverBudget` (`tablequest.table`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import duckdb

from tablequest.table import OverBudget

__all__ = ["time_bound"]


@contextmanager
def time_bound(
    con: duckdb.DuckDBPyConnection, path: str, seconds: float | None
) -> Iterator[Callable[[], None]]:
    """Bound DuckDB's work on `con` by the reading budget's `max_seconds`: once they are
    spent, a timer thread interrupts the connection (again every 10 ms: an interrupt while
    no statement runs is lost), and the interrupted statement raises the `max_seconds`
    `OverBudget`. Yields a check to call before the commit (the time ran out between
    statements). Used inside the transaction, so the watcher stops before a rollback."""
    if seconds is None:
        yield lambda: None
        return
    stop = threading.Event()
    deadline = time.monotonic() + seconds

    def over() -> OverBudget:
        return OverBudget(path, "max_seconds", "reading time", f"{seconds:g} s")

    def watch() -> None:
        if stop.wait(seconds):
            return
        while True:
            con.interrupt()
            if stop.wait(0.01):
                return

    def in_time() -> None:
        if time.monotonic() > deadline:
            raise over()

    watcher = threading.Thread(target=watch, name="tq-stream-deadline", daemon=True)
    watcher.start()
    try:
        yield in_time
    except duckdb.InterruptException:
        raise over() from None
    finally:
        stop.set()
        watcher.join()
