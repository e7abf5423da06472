"""Trace recording (JSONL, one file per query) and terminal rendering."""

from tablequest.trace.recorder import (
    KINDS,
    TRACE_DIR_ENV,
    EventKind,
    Trace,
    UnreadableTrace,
    default_trace_dir,
    new_trace_path,
    read_trace,
)
from tablequest.trace.render import render_trace, summarize

__all__ = [
    "KINDS",
    "TRACE_DIR_ENV",
    "EventKind",
    "Trace",
    "UnreadableTrace",
    "default_trace_dir",
    "new_trace_path",
    "read_trace",
    "render_trace",
    "summarize",
]
