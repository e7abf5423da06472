"""Trace file names, and which trace is the "latest" one (`tablequest trace show latest`).

Names: `new_trace_path` gives ``YYYYmmdd-HHMMSS-<epoch ns>-p<pid>-<4 hex>.jsonl``: the local
start time for people, then the start time in nanoseconds since the epoch (made strictly
increasing within a process, so two traces of one process never tie), the id of the writing
process and a random suffix (two hosts sharing a folder). Names of earlier versions
(``YYYYmmdd-HHMMSS-<8 hex>.jsonl``) are still understood: their stamp is read as local time.

The rule for "latest" (`latest_trace`), chosen so that it is deterministic and never shows
another process's run in progress:

- only files named by `new_trace_path` count, and only those of this user (file owner);
- a trace counts when it is *finished* or *ours*: written by a process that has ended, or by
  the calling process itself. A trace whose writer is still running elsewhere (a
  `tablequest serve`, a concurrent `ask`) is skipped: its run may not be over;
- of those, the one with the largest start stamp in its name wins (ties: the name). File
  modification times are never used: appending to an old trace, copying or touching files
  does not change the order.

Limits: the writer's liveness is checked by process id on this machine, so a trace folder
shared between machines or containers may take a trace of a live process elsewhere for a
finished one, and a reused pid may hide a finished trace until that process ends.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from tablequest.settings import TracesSettings, from_env

__all__ = [
    "TRACE_DIR_ENV",
    "TraceName",
    "default_trace_dir",
    "latest_trace",
    "new_trace_path",
    "parse_file_name",
    "parse_trace_name",
    "running_elsewhere",
]

TRACE_DIR_ENV = "TABLEQUEST_TRACE_DIR"

_NAME = re.compile(
    r"^(?P<stamp>\d{8}-\d{6})(?:-(?P<ns>\d{19})-p(?P<pid>\d+))?-(?P<rand>[0-9a-f]{4,32})$"
)
_LOCK = threading.Lock()
_LAST_NS = 0


@dataclass(frozen=True, slots=True, order=True)
class TraceName:
    """What a trace file's name says: its start (ns since the epoch) and its writer's pid."""

    ns: int
    name: str
    pid: int | None


def default_trace_dir(traces: TracesSettings | None = None) -> Path:
    """`traces.dir` (default: the environment's, $TABLEQUEST_TRACE_DIR), else
    ``<user data dir>/traces``."""
    chosen = (traces if traces is not None else from_env(TracesSettings)).dir
    return chosen or platformdirs.user_data_path("tablequest") / "traces"


def _next_ns() -> int:
    """Now in ns since the epoch, strictly greater than the last value this process got."""
    global _LAST_NS
    with _LOCK:
        _LAST_NS = max(time.time_ns(), _LAST_NS + 1)
        return _LAST_NS


def new_trace_path(directory: str | Path | None = None) -> Path:
    """A fresh file name ``YYYYmmdd-HHMMSS-<epoch ns>-p<pid>-<4 hex>.jsonl`` in `directory`
    (default: `default_trace_dir()`); the file is not created."""
    ns = _next_ns()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(ns / 1e9))
    name = f"{stamp}-{ns:019d}-p{os.getpid()}-{uuid.uuid4().hex[:4]}.jsonl"
    return Path(directory or default_trace_dir()) / name


def parse_trace_name(path: str | Path) -> TraceName | None:
    """The stamp and writer of a trace file named by `new_trace_path` (or by an earlier
    version), or None for any other name."""
    return parse_file_name(Path(path).name)


def parse_file_name(name: str) -> TraceName | None:
    """`parse_trace_name` of a bare file name (no path objects: folder scans call it often)."""
    match = _NAME.match(name[: -len(".jsonl")]) if name.endswith(".jsonl") else None
    if match is None:
        return None
    if match["ns"] is not None:
        return TraceName(int(match["ns"]), name, int(match["pid"]))
    try:
        seconds = time.mktime(time.strptime(match["stamp"], "%Y%m%d-%H%M%S"))
    except (ValueError, OverflowError):
        return None
    return TraceName(int(seconds) * 1_000_000_000, name, None)


def running_elsewhere(pid: int | None) -> bool:
    """Whether `pid` is a live process other than this one (None: an old name, no writer)."""
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    except OSError:  # e.g. an out-of-range pid: no such process
        return False
    return True


def _ours(path: Path) -> bool:
    if sys.platform == "win32":  # no owners to compare
        return True
    try:
        return path.stat().st_uid == os.getuid()
    except OSError:
        return False


def latest_trace(directory: str | Path | None = None) -> Path | None:
    """The latest finished (or this process's) trace in `directory`, by the rule in the
    module doc; None when there is none."""
    folder = Path(directory) if directory is not None else default_trace_dir()
    if not folder.is_dir():
        return None
    best: TraceName | None = None
    for path in folder.glob("*.jsonl"):
        parsed = parse_trace_name(path)
        if parsed is None or (best is not None and parsed < best):
            continue
        if path.is_file() and _ours(path) and not running_elsewhere(parsed.pid):
            best = parsed
    return folder / best.name if best is not None else None
