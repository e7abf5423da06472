"""Trace recording (JSONL, one file per query), naming ("latest"), run folders, event
descriptions (`describe_event`) and terminal rendering."""

from tablequest.trace.describe import describe_event
from tablequest.trace.latest import (
    TRACE_DIR_ENV,
    default_trace_dir,
    latest_trace,
    new_trace_path,
    parse_trace_name,
)
from tablequest.trace.recorder import KINDS, EventKind, Trace, UnreadableTrace, read_trace
from tablequest.trace.render import render_trace, summarize
from tablequest.trace.runs import run_trace_dir
from tablequest.trace.stores import store_key, store_of

__all__ = [
    "KINDS",
    "TRACE_DIR_ENV",
    "EventKind",
    "Trace",
    "UnreadableTrace",
    "default_trace_dir",
    "describe_event",
    "latest_trace",
    "new_trace_path",
    "parse_trace_name",
    "read_trace",
    "render_trace",
    "run_trace_dir",
    "store_key",
    "store_of",
    "summarize",
]
