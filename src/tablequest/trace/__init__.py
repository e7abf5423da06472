"""Trace recording (JSONL, one file per query), naming ("latest") and terminal rendering."""

from tablequest.trace.latest import (
    TRACE_DIR_ENV,
    default_trace_dir,
    latest_trace,
    new_trace_path,
    parse_trace_name,
)
from tablequest.trace.recorder import KINDS, EventKind, Trace, UnreadableTrace, read_trace
from tablequest.trace.render import render_trace, summarize

__all__ = [
    "KINDS",
    "TRACE_DIR_ENV",
    "EventKind",
    "Trace",
    "UnreadableTrace",
    "default_trace_dir",
    "latest_trace",
    "new_trace_path",
    "parse_trace_name",
    "read_trace",
    "render_trace",
    "summarize",
]
