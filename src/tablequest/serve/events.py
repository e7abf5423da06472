"""Trace events as people read them: one title line, a few detail lines, code and output.

`describe_event` (one event as a title, detail lines, code and output) lives in
`tablequest.trace.describe` and is re-exported here; this module adds `render_markdown` for
reports.
"""

from __future__ import annotations

from tablequest.trace.describe import Names, describe_event, number, rounded

__all__ = ["Names", "describe_event", "number", "render_markdown", "rounded"]


def render_markdown(text: str) -> str:
    """Markdown (a report) as HTML with raw HTML escaped and unsafe link schemes refused.

    markdown-it (CommonMark, tables on) with ``html=False`` escapes any HTML in the text; its
    link validation refuses ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` URLs.
    """
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    return str(md.render(text))
