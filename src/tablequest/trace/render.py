"""Terminal rendering of a trace: one compact row per event and a summary line.

LLM calls show tokens, latency, cache hits and the first line of the prompt and of the reply;
errors are red; other events show their payload as short ``key=value`` pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

KIND_STYLES = {
    "llm_call": "cyan",
    "llm_retry": "yellow",
    "rank": "magenta",
    "preview": "blue",
    "decision": "bold yellow",
    "exec": "green",
    "qa": "bold green",
    "fallback": "yellow",
    "error": "bold red",
}
_SKIP = frozenset({"t", "kind"})


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str, limit: int = 100) -> str:
    for line in text.splitlines():
        if line.strip():
            return _short(line.strip(), limit)
    return "(empty)"


def summarize(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over a trace: LLM calls, HTTP requests and retries, tokens, LLM seconds, cache
    hits, errors, duration."""
    calls = [e for e in events if e.get("kind") == "llm_call"]
    return {
        "events": len(events),
        "calls": len(calls),
        "requests": sum(int(e.get("requests") or 0) for e in calls),
        "retries": sum(1 for e in events if e.get("kind") == "llm_retry"),
        "prompt_tokens": sum(int(e.get("prompt_tokens") or 0) for e in calls),
        "completion_tokens": sum(int(e.get("completion_tokens") or 0) for e in calls),
        "seconds": round(sum(float(e.get("latency_s") or 0.0) for e in calls), 3),
        "cache_hits": sum(1 for e in calls if e.get("cached")),
        "errors": sum(1 for e in events if e.get("kind") == "error" or e.get("error")),
        "duration": max((float(e.get("t") or 0.0) for e in events), default=0.0),
    }


def _llm_detail(event: dict[str, Any]) -> Text:
    head = (
        f"{event.get('model', '?')}  {event.get('prompt_tokens', 0)}+"
        f"{event.get('completion_tokens', 0)} tok  {float(event.get('latency_s') or 0):.2f}s"
    )
    text = Text(head)
    if event.get("error"):
        text.append(f"  {event['error']}: {_short(event.get('message', ''))}", style="bold red")
    if event.get("cached"):
        text.append("  cache hit", style="green")
    reasons = [r for r in event.get("finish_reasons") or [] if r != "stop"]
    if reasons:
        text.append(f"  finish={','.join(map(str, reasons))}", style="yellow")
    messages = event.get("messages") or []
    if messages:
        last = messages[-1]
        content = last.get("content", "") if isinstance(last, dict) else str(last)
        text.append(f"\n> {_first_line(str(content))}", style="dim")
    for reply in (event.get("replies") or [])[:3]:
        text.append(f"\n< {_first_line(str(reply))}")
    return text


def _detail(event: dict[str, Any]) -> Text:
    kind = event.get("kind")
    if kind == "llm_call":
        return _llm_detail(event)
    pairs = [f"{k}={_short(v)}" for k, v in event.items() if k not in _SKIP]
    return Text("  ".join(pairs), style="red" if kind == "error" else "")


def render_trace(events: Sequence[dict[str, Any]], *, title: str | None = None) -> RenderableType:
    """A rich renderable of `events`: a table of events and a summary line."""
    table = Table(title=title, show_header=True, header_style="bold", expand=False)
    table.add_column("t (s)", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for event in events:
        kind = str(event.get("kind", "?"))
        table.add_row(
            f"{float(event.get('t') or 0):.3f}",
            Text(kind, style=KIND_STYLES.get(kind, "")),
            _detail(event),
        )
    s = summarize(events)
    summary = Text(
        f"{s['events']} events · {s['calls']} LLM calls · {s['requests']} requests "
        f"({s['retries']} retries) · "
        f"{s['prompt_tokens']}+{s['completion_tokens']} tokens · {s['seconds']:.2f}s in LLM · "
        f"{s['cache_hits']} cache hits · {s['errors']} errors · {s['duration']:.2f}s total",
        style="bold red" if s["errors"] else "bold",
    )
    return Group(table, summary)
