"""Retention: keep the trace folder (traces, and the charts written next to them) within limits.

Limits (ours; the `[traces]` settings, `tablequest.settings.TracesSettings`, set by
environment variables; 0 means no limit). A run prunes by the settings it loaded, passed
explicitly (`Trace(traces=...)`, `chart_retention(traces=...)`: on a Ray worker, the
driver's); only a caller that gives none reads the environment where it runs:

=========================  ================================  ==========
what                       variable                          default
=========================  ================================  ==========
trace files                ``TABLEQUEST_TRACE_KEEP``         1000
their bytes                ``TABLEQUEST_TRACE_KEEP_BYTES``   1G
their age (last write)     ``TABLEQUEST_TRACE_KEEP_DAYS``    30
chart folders (one a run)  ``TABLEQUEST_CHARTS_KEEP``        1000
their bytes                ``TABLEQUEST_CHARTS_KEEP_BYTES``  1G
their age                  ``TABLEQUEST_CHARTS_KEEP_DAYS``   30
=========================  ================================  ==========

Bytes take a whole number with an optional ``K``, ``M`` or ``G`` (powers of 1024); days may
be fractional.

Choices (ours):

- When: the folder is pruned when a trace file is created (`Trace` does it before its first
  write) and after a run writes its charts (DTR). The same rule holds for the server and the
  CLI, whose trace folder is the user's: pruning at creation keeps the folder at the limit
  plus the runs in progress, with no end-of-run hook.
- What: only what tablequest wrote. A trace is a ``*.jsonl`` file named by `new_trace_path`;
  a chart folder is ``<trace name>-charts`` next to it, and of it only ``chart-N.png`` files
  are removed (the folder goes when that leaves it empty). Any other file is never touched.
  A trace's chart folder goes with the trace.
- Order: past the age limit first, then oldest (last modified) first until the count and the
  bytes fit; the item just written and every trace still being written are never removed:
  the traces of this process's live `Trace` objects, and those whose writer is another
  process still running (named by its pid, as `latest_trace` reads them).
- Concurrency: one pruner per folder at a time in a process (a second one skips: the first
  brings the folder within the same limits); pruners in other processes may race, so every
  removal tolerates a file already gone, and each pruner only removes what its own listing
  found over the limits.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tablequest.errors import UsageError
from tablequest.settings import SettingsError, TracesSettings, from_env
from tablequest.trace.latest import parse_file_name, running_elsewhere

__all__ = [
    "CHARTS_KEEP_ENV",
    "TRACE_KEEP_ENV",
    "Item",
    "Retention",
    "RetentionError",
    "chart_retention",
    "choose_removals",
    "prune_charts",
    "prune_traces",
    "trace_retention",
]

TRACE_KEEP_ENV = "TABLEQUEST_TRACE_KEEP"
CHARTS_KEEP_ENV = "TABLEQUEST_CHARTS_KEEP"
GIB = 1024**3
DAY = 86400.0
CHARTS_SUFFIX = "-charts"
CHART_FILE = re.compile(r"^chart-\d+\.png$")


class RetentionError(UsageError):
    """A retention setting that cannot be read; the message names the variable."""

    code = "bad_retention"


@dataclass(frozen=True)
class Retention:
    """Limits on a folder's items; None means no limit."""

    max_items: int | None = 1000
    max_bytes: int | None = GIB
    max_age_days: float | None = 30.0


@dataclass(frozen=True)
class Item:
    """One thing that may be removed: a file or a folder (by name: all are in one folder),
    its bytes and last change."""

    name: str
    size: int
    mtime: float


def _limits(environ: Mapping[str, str] | None) -> TracesSettings:
    try:
        return from_env(TracesSettings, environ)
    except SettingsError as exc:
        raise RetentionError(str(exc)) from None


def trace_retention(
    environ: Mapping[str, str] | None = None, *, traces: TracesSettings | None = None
) -> Retention:
    """The limits on trace files: `traces` (the loaded settings), else the environment's
    (see the module doc).

    Raises:
        RetentionError: a ``TABLEQUEST_TRACE_KEEP*`` variable is not a limit.
    """
    t = traces if traces is not None else _limits(environ)
    return Retention(t.keep, t.keep_bytes, t.keep_days)


def chart_retention(
    environ: Mapping[str, str] | None = None, *, traces: TracesSettings | None = None
) -> Retention:
    """The limits on chart folders: `traces` (the loaded settings), else the environment's.

    Raises:
        RetentionError: a ``TABLEQUEST_CHARTS_KEEP*`` variable is not a limit.
    """
    t = traces if traces is not None else _limits(environ)
    return Retention(t.charts_keep, t.charts_keep_bytes, t.charts_keep_days)


def choose_removals(
    items: Iterable[Item], limits: Retention, *, now: float, protect: Collection[Path] = ()
) -> list[Item]:
    """The items to remove, oldest first (see the module doc); protected ones (matched by
    name: every item is in one folder) count towards the totals but are never chosen."""
    kept = {p.name for p in protect}
    ordered = sorted(items, key=lambda i: (i.mtime, i.name))
    count, size = len(ordered), sum(i.size for i in ordered)
    oldest = now - limits.max_age_days * DAY if limits.max_age_days else None
    chosen = []
    for item in ordered:
        expired = oldest is not None and item.mtime < oldest
        over = (limits.max_items is not None and count > limits.max_items) or (
            limits.max_bytes is not None and size > limits.max_bytes
        )
        if not (expired or over):
            break  # the rest are newer and the totals fit
        if item.name in kept:
            continue
        chosen.append(item)
        count, size = count - 1, size - item.size
    return chosen


def _file_item(path: Path) -> Item | None:
    try:
        st = path.stat()
    except OSError:  # removed meanwhile
        return None
    return Item(path.name, st.st_size, st.st_mtime)


def _folder_item(path: Path) -> Item | None:
    stats = [s for f in _chart_files(path) if (s := _file_item(f)) is not None]
    own = _file_item(path)
    if own is None:
        return None
    mtime = max([own.mtime, *(s.mtime for s in stats)])
    return Item(path.name, sum(s.size for s in stats), mtime)


def _chart_files(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if CHART_FILE.match(p.name) and p.is_file()]
    except OSError:
        return []


def _remove_charts(folder: Path) -> None:
    for path in _chart_files(folder):
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # only when nothing else is in it
        folder.rmdir()


_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _pruning(folder: Path, work: Callable[[], list[Path]]) -> list[Path]:
    """Run `work` unless another thread of this process is pruning `folder`."""
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(folder, threading.Lock())
    if not lock.acquire(blocking=False):
        return []
    try:
        return work()
    finally:
        lock.release()


def prune_traces(
    folder: Path,
    *,
    limits: Retention | None = None,
    protect: Collection[Path] = (),
    now: float | None = None,
) -> list[Path]:
    """Remove the oldest trace files of `folder` (and their chart folders) beyond `limits`
    (default: `trace_retention()`); the traces removed.

    Raises:
        RetentionError: no `limits` given and a ``TABLEQUEST_TRACE_KEEP*`` variable is bad.
    """
    limits = limits or trace_retention()

    def work() -> list[Path]:
        items = []
        keep = set(protect)
        with os.scandir(folder) as entries:
            for entry in entries:
                parsed = parse_file_name(entry.name)
                if parsed is None or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:  # removed meanwhile
                    continue
                item = Item(entry.name, st.st_size, st.st_mtime)
                if running_elsewhere(parsed.pid):
                    keep.add(Path(entry.name))
                items.append(item)
        removed = []
        for item in choose_removals(items, limits, now=now or time.time(), protect=keep):
            path = folder / item.name
            try:
                path.unlink(missing_ok=True)
            except OSError:  # not ours to remove after all (permissions): leave it
                continue
            charts = path.with_name(path.stem + CHARTS_SUFFIX)
            if charts.is_dir():
                _remove_charts(charts)
            removed.append(path)
        return removed

    return _pruning(folder, work) if folder.is_dir() else []


def prune_charts(
    folder: Path,
    *,
    limits: Retention | None = None,
    protect: Collection[Path] = (),
    now: float | None = None,
) -> list[Path]:
    """Remove the oldest chart folders (``<trace name>-charts``) of `folder` beyond `limits`
    (default: `chart_retention()`); the folders removed.

    Raises:
        RetentionError: no `limits` given and a ``TABLEQUEST_CHARTS_KEEP*`` variable is bad.
    """
    limits = limits or chart_retention()

    def work() -> list[Path]:
        items = []
        for path in folder.glob("*" + CHARTS_SUFFIX):
            stem = path.name[: -len(CHARTS_SUFFIX)]
            if parse_file_name(stem + ".jsonl") is None or not path.is_dir():
                continue
            if (item := _folder_item(path)) is not None:
                items.append(item)
        chosen = choose_removals(items, limits, now=now or time.time(), protect=set(protect))
        for item in chosen:
            _remove_charts(folder / item.name)
        return [folder / i.name for i in chosen]

    return _pruning(folder, work) if folder.is_dir() else []
