"""`Trace`: append-only JSONL events of one query run, and `read_trace` to load them back.

Each line is ``{"t": seconds since the trace started, "kind": ..., ...payload}`` with `kind`
one of `KINDS`. Choices: the file is opened, appended and closed per event (so every event is
on disk even if the process dies, and no handle is left open); a disk error is reported once
on stderr and the trace carries on in memory — tracing never breaks a query; values JSON cannot
encode are written as their ``repr``.

Retention (`tablequest.trace.retention`): before a trace named by `new_trace_path` creates its
file, the folder's older traces beyond the limits are removed (a trace named otherwise, e.g.
by the eval runner, prunes nothing); the traces of live `Trace` objects of this process are
never removed (they may still be written). The limits are the ``[traces]`` settings the trace
was given (a run's loaded `Settings`, also on a Ray worker), else the environment's (a
library caller that gives none). A bad retention setting is reported once on stderr and
nothing is removed — tracing never breaks a query.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from tablequest.errors import UsageError
from tablequest.settings import TracesSettings
from tablequest.trace.latest import (
    TRACE_DIR_ENV,
    default_trace_dir,
    new_trace_path,
    parse_file_name,
)
from tablequest.trace.retention import RetentionError, prune_traces, trace_retention

EventKind = Literal[
    "llm_call",
    "llm_retry",
    "rank",
    "preview",
    "decision",
    "exec",
    "qa",
    "fallback",
    "error",
    "route",
]
KINDS: tuple[str, ...] = get_args(EventKind)
__all__ = [
    "KINDS",
    "TRACE_DIR_ENV",
    "EventKind",
    "Trace",
    "UnreadableTrace",
    "default_trace_dir",
    "new_trace_path",
    "read_trace",
]


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return repr(value)


_LIVE: weakref.WeakSet[Trace] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()
_warned: set[str] = set()


def live_trace_paths() -> set[Path]:
    """The files of this process's `Trace` objects still in use (never pruned)."""
    with _LIVE_LOCK:
        return {t.path for t in list(_LIVE) if t.path is not None}


def _prune_before(path: Path, traces: TracesSettings | None) -> None:
    if parse_file_name(path.name) is None:  # a folder of named traces (eval, --out): not ours
        return
    try:
        limits = trace_retention(traces=traces)  # None: the environment's
        prune_traces(path.parent, limits=limits, protect=live_trace_paths())
    except RetentionError as exc:
        if str(exc) not in _warned:  # once per process and setting
            _warned.add(str(exc))
            print(f"tablequest: {exc}; old traces are not removed", file=sys.stderr)
    except OSError:  # an unreadable folder: the write below reports it
        pass


class Trace:
    """Records events of one query; thread-safe.

    Args:
        path: JSONL file to append to, or None to keep events in memory only.
        traces: The ``[traces]`` settings whose retention limits prune the folder before
            the file is created (None: the environment's, `trace_retention`).
    """

    def __init__(self, path: str | Path | None = None, *, traces: TracesSettings | None = None):
        self.path = Path(path) if path is not None else None
        self.traces = traces
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._failed = False
        self._started = False
        if self.path is not None:
            with _LIVE_LOCK:
                _LIVE.add(self)

    @classmethod
    def in_memory(cls) -> Trace:
        """A trace that writes no file (tests, library use without traces)."""
        return cls(None)

    @classmethod
    def for_query(
        cls, directory: str | Path | None = None, *, traces: TracesSettings | None = None
    ) -> Trace:
        """A trace writing to a new file in `directory` (default: `traces.dir`, else
        `default_trace_dir()`), pruned by the retention limits of `traces` (None: the
        environment's)."""
        return cls(new_trace_path(directory or default_trace_dir(traces)), traces=traces)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events recorded so far (a copy)."""
        with self._lock:
            return list(self._events)

    def event(self, kind: EventKind, /, **payload: Any) -> dict[str, Any]:
        """Record one event and return it.

        Raises:
            ValueError: `kind` is not one of `KINDS`, or the payload uses the key "t".
        """
        if kind not in KINDS:
            raise ValueError(f"unknown trace event kind {kind!r}; expected one of {KINDS}")
        if "t" in payload:
            raise ValueError("trace payload may not use the key 't' (it is the timestamp)")
        with self._lock:
            event = {"t": round(time.monotonic() - self._start, 3), "kind": kind, **payload}
            line = self._encode(event)
            self._events.append(json.loads(line))
            self._write(line)
        return event

    @staticmethod
    def _encode(event: Mapping[str, Any]) -> str:
        try:
            return json.dumps(event, default=_jsonable, ensure_ascii=False)
        except (TypeError, ValueError):  # e.g. non-string keys that json cannot sort out
            safe = {key: repr(value) for key, value in event.items()}
            safe["t"], safe["kind"] = event["t"], event["kind"]
            return json.dumps(safe, ensure_ascii=False)

    def _write(self, line: str) -> None:
        if self.path is None or self._failed:
            return
        if not self._started:
            self._started = True
            _prune_before(self.path, self.traces)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            self._failed = True
            print(
                f"tablequest: cannot write trace {str(self.path)!r} ({exc}); "
                "continuing without a trace file",
                file=sys.stderr,
            )


class UnreadableTrace(UsageError):
    """A trace file that is missing or not JSON lines: the file given is not a trace (exit
    2; HTTP 422, as for any unprocessable input)."""

    http_status = 422
    code = "trace"

    def __init__(self, path: str | Path, reason: str):
        super().__init__(f"cannot read trace {str(path)!r}: {reason}")
        self.path = str(path)
        self.reason = reason


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """Load the events of a trace file.

    A truncated last line (a run killed mid-write) is skipped; any other bad line is an error.

    Raises:
        UnreadableTrace: the file is missing, unreadable, or a line is not a JSON object.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableTrace(path, str(exc)) from exc
    events: list[dict[str, Any]] = []
    numbered = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    for pos, (lineno, line) in enumerate(numbered):
        try:
            event = json.loads(line)
        except ValueError as exc:
            if pos == len(numbered) - 1 and events:
                break
            raise UnreadableTrace(path, f"line {lineno} is not JSON ({exc})") from exc
        if not isinstance(event, dict) or "kind" not in event:
            raise UnreadableTrace(path, f"line {lineno} is not a trace event object")
        events.append(event)
    return events
