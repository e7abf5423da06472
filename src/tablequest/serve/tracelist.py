"""What the trace list shows of each trace: its question, method, status and time.

A trace file can be megabytes (prompts and replies), so a row reads only the file's first
lines (the server's ``request`` event, or a method's ``ask``/``start`` decisions, carry the
question and method) and its last 64 KiB (the final events carry the status). Rows are cached
by (path, modification time, size): a finished trace is read once.

Status, from the last event that says it: the server's ``result`` decision, a method's
``end`` decision, a ``qa`` event; else "failed" when the trace records an error or an
LLM-free fallback; else "unfinished" (the ask is running, or was stopped).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["TraceRow", "question_of", "trace_row"]

HEAD_LINES = 8
TAIL_BYTES = 64 * 1024
_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})")


@dataclass(frozen=True)
class TraceRow:
    """One trace as the list shows it."""

    id: str
    question: str | None
    method: str | None
    status: str
    time: str
    size: int


def _parse(lines: list[bytes]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _read(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with path.open("rb") as fh:
        head = [fh.readline(TAIL_BYTES) for _ in range(HEAD_LINES)]
        size = fh.seek(0, 2)
        fh.seek(max(0, size - TAIL_BYTES))
        tail = fh.read().split(b"\n")
    if size > TAIL_BYTES:
        tail = tail[1:]  # the first piece may be the end of a longer line
    return _parse([h for h in head if h.endswith(b"\n")]), _parse([t for t in tail if t])


def question_of(events: list[dict[str, Any]]) -> str | None:
    """The question a trace records (the first event naming one)."""
    for event in events:
        question = event.get("question")
        if isinstance(question, str) and question.strip():
            return question
    return None


def _method(events: list[dict[str, Any]]) -> str | None:
    for event in events:
        if event.get("kind") == "decision" and event.get("stage") in ("request", "ask"):
            return str(event.get("method") or "") or None
    return None


def _status(events: list[dict[str, Any]]) -> str:
    for event in reversed(events):
        kind, stage = event.get("kind"), event.get("stage")
        if kind == "decision" and stage in ("result", "end") and event.get("status"):
            return str(event["status"])
        if kind == "qa" and event.get("status"):
            return str(event["status"])
    if any(e.get("kind") in ("error", "fallback") for e in events):
        return "failed"
    return "unfinished"


def _when(trace_id: str, mtime: float) -> str:
    match = _STAMP.match(trace_id)
    if match:
        y, mo, d, h, mi, _ = match.groups()
        return f"{y}-{mo}-{d} {h}:{mi}"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime))


@lru_cache(maxsize=2048)
def _row(trace_id: str, path: str, mtime_ns: int, size: int) -> TraceRow:
    try:
        head, tail = _read(Path(path))
    except OSError:
        head, tail = [], []
    return TraceRow(
        id=trace_id,
        question=question_of(head),
        method=_method(head),
        status=_status(tail),
        time=_when(trace_id, mtime_ns / 1e9),
        size=size,
    )


def trace_row(trace_id: str, path: Path) -> TraceRow:
    """The list row of the trace `trace_id` stored at `path` (cached; see the module doc)."""
    st = path.stat()
    return _row(trace_id, str(path), st.st_mtime_ns, st.st_size)
