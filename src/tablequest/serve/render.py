"""Jinja templates (autoescaped) and the self-contained trace viewer file.

Pages and ``tablequest trace view`` render the same templates; the file version inlines the
stylesheet (a file opened from disk has no server to fetch it from) and has no script.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from tablequest.serve.tracelist import question_of
from tablequest.service import short_name
from tablequest.trace import summarize
from tablequest.trace.describe import Names, describe_event, number

__all__ = ["STATIC_DIR", "TEMPLATE_DIR", "environment", "render_trace_html", "trace_context"]

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
TEMPLATE_DIR = HERE / "templates"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The template environment: every ``{{ value }}`` is HTML-escaped."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = lambda v: f"{float(v or 0):.3f}"
    env.filters["number"] = number
    env.filters["short_name"] = short_name
    env.filters["thousands"] = lambda v: f"{int(v):,}"
    return env


def trace_context(
    events: Sequence[dict[str, Any]], title: str, names: Names | None = None
) -> dict[str, Any]:
    """What the trace viewer template needs: the question, described events, the totals."""
    return {
        "title": title,
        "question": question_of(list(events)),
        "items": [describe_event(e, names) for e in events],
        "summary": summarize(events),
    }


def render_trace_html(events: Sequence[dict[str, Any]], *, title: str) -> str:
    """The trace viewer as one self-contained HTML file (inline style, no script)."""
    css = (STATIC_DIR / "app.css").read_text(encoding="utf-8")
    context = trace_context(events, title)
    context.update(css=css, generated=time.strftime("%Y-%m-%d %H:%M:%S"))
    return environment().get_template("trace_file.html").render(**context)
