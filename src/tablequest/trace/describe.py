"""Trace events as people read them: one title line, a few detail lines, code and output.

`describe_event` is the one description of an event: the server's trace viewer, the
self-contained viewer file of ``tablequest trace view`` and the live trajectory of the ask
page (its SSE stream carries it next to the raw event when asked with ``view=1``) all use
it, so they show an event the same way. Everything here is plain text; templates and the
page script escape it.

Readable (ours): numbers are rounded (3 decimals at most: scores, seconds), and a table id in
a title or a detail line is shown with the table's name, ``lakes.html (tf44c874910295b0)``,
when the caller can name it (`names`). The server's own request and result events (stages
``request`` and ``result``) read as "request · METHOD" and "result · STATUS".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["Names", "describe_event", "number", "rounded"]

_SKIP = frozenset({"t", "kind"})
_TABLE_ID = re.compile(r"\bt[0-9a-f]{15}\b")
Names = Callable[[str], "str | None"]


def rounded(value: Any, digits: int = 3) -> Any:
    """`value` with every float in it rounded to `digits` decimals (lists and dicts too)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    return value


def number(value: Any) -> str:
    """A number for people: at most 3 decimals, no trailing zeros ("1", "0.5", "0.123")."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    text = f"{x:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _short(value: Any, limit: int = 160) -> str:
    value = rounded(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _first_line(text: str, limit: int = 200) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return _short(line.strip(), limit)
    return "(empty)"


def _pairs(event: dict[str, Any], skip: frozenset[str] = frozenset()) -> list[str]:
    return [f"{k}: {_short(v)}" for k, v in event.items() if k not in _SKIP | skip]


def _llm(event: dict[str, Any]) -> tuple[str, list[str], str | None, str | None]:
    title = (
        f"{event.get('model', '?')} · {event.get('prompt_tokens', 0)}+"
        f"{event.get('completion_tokens', 0)} tokens · {float(event.get('latency_s') or 0):.2f} s"
    )
    if event.get("cached"):
        title += " · cache hit"
    lines = []
    if event.get("error"):
        lines.append(f"error: {event['error']}: {_short(event.get('message', ''))}")
    messages = event.get("messages") or []
    prompt = "\n\n".join(
        f"[{m.get('role', '?')}]\n{m.get('content', '')}" if isinstance(m, dict) else str(m)
        for m in messages
    )
    if messages:
        last = messages[-1]
        content = last.get("content", "") if isinstance(last, dict) else last
        lines.append("> " + _first_line(str(content)))
    replies = [str(r) for r in event.get("replies") or []]
    lines += ["< " + _first_line(r) for r in replies[:3]]
    return title, lines, prompt or None, "\n---\n".join(replies) or None


def _rank(event: dict[str, Any]) -> tuple[str, list[str]]:
    hits = event.get("hits") or []
    title = f"{event.get('method', 'grep')} ranking · {_count(len(hits), 'table')}"
    lines = []
    if event.get("patterns"):
        lines.append("patterns: " + ", ".join(map(str, event["patterns"])))
    for hit in hits[:10]:
        if isinstance(hit, dict):
            lines.append(f"{hit.get('table_id')} · score {number(hit.get('score'))}")
    return title, lines


def _decision(event: dict[str, Any]) -> tuple[str, list[str]]:
    stage = event.get("stage", "")
    if stage == "request":
        lines = [f"question: {_short(event.get('question', ''), 400)}"]
        if event.get("table_ids"):
            lines.append("tables: " + ", ".join(map(str, event["table_ids"])))
        return f"request · {event.get('method', '?')}", lines
    if stage == "result":
        return f"result · {event.get('status', '?')}", _pairs(event, frozenset({"stage", "status"}))
    action = event.get("action") or event.get("status") or ""
    title = " · ".join(str(x) for x in ("decision", stage, action) if x)
    return title, _pairs(event, frozenset({"stage", "action"}))


def _named(text: str, names: Names | None) -> str:
    if names is None:
        return text

    def sub(match: re.Match[str]) -> str:
        name = names(match.group(0))
        return f"{name} ({match.group(0)})" if name else match.group(0)

    return _TABLE_ID.sub(sub, text)


def describe_event(event: dict[str, Any], names: Names | None = None) -> dict[str, Any]:
    """A display form of one trace event.

    Args:
        event: The event as recorded.
        names: Table id → the table's name (None when unknown), to name ids in the text.

    Returns:
        ``{"t", "kind", "title", "lines", "code", "output", "error", "raw"}``: `lines` are
        short detail lines, `code`/`output` longer blocks (a prompt and its replies, code
        and its output), `error` whether to show it as an error, `raw` the event as JSON.
    """
    kind = str(event.get("kind", "?"))
    code: str | None = None
    output: str | None = None
    title = kind
    lines: list[str] = []
    if kind == "llm_call":
        title, lines, code, output = _llm(event)
    elif kind == "rank":
        title, lines = _rank(event)
    elif kind == "preview":
        tables = event.get("tables") or {}
        title = f"previews of {_count(len(tables), 'table')} · {event.get('chars', '?')} characters"
        if isinstance(tables, dict):
            lines = [f"{anon} = {tid}" for anon, tid in list(tables.items())[:10]]
    elif kind == "decision":
        title, lines = _decision(event)
    elif kind == "exec":
        ok = event.get("ok", event.get("error") is None)
        title = f"code run · step {event.get('step', '?')} · {'ok' if ok else 'failed'}"
        if event.get("seconds") is not None:
            title += f" · {number(event['seconds'])} s"
        code = str(event.get("code") or "") or None
        shown = event.get("observation", event.get("stdout", event.get("output")))
        output = None if shown is None else str(shown)
    elif kind == "qa":
        title = f"answer · {event.get('status', '')}".rstrip(" ·")
        lines = _pairs(event, frozenset({"status"}))
    elif kind == "error":
        if event.get("error") or event.get("message"):
            title = f"error · {event.get('error', '')}: {_short(event.get('message', ''))}"
        else:
            title = " · ".join(str(x) for x in ("error", event.get("stage")) if x)
        lines = _pairs(event, frozenset({"error", "message", "traceback", "stage"}))
        output = str(event.get("traceback") or "") or None
    else:
        lines = _pairs(event)
    return {
        "t": event.get("t", 0),
        "kind": kind,
        "title": _named(title, names),
        "lines": [_named(line, names) for line in lines],
        "code": code,
        "output": output,
        "error": kind == "error" or bool(event.get("error")),
        "raw": json.dumps(event, ensure_ascii=False, indent=1, default=str),
    }
