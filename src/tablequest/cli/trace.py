"""`tablequest trace show FILE`: render a query trace (JSONL) in the terminal;
`tablequest trace view FILE`: write it as a self-contained HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tablequest.cli._output import console, fail
from tablequest.trace import UnreadableTrace, default_trace_dir, read_trace, render_trace

app = typer.Typer(help="Show recorded query traces.", no_args_is_help=True)


@app.callback()
def trace() -> None:
    """Show recorded query traces."""


def _latest() -> Path | None:
    directory = default_trace_dir()
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    return files[-1] if files else None


@app.command()
def show(
    file: Annotated[str, typer.Argument(help="Trace file, or 'latest' for the newest one.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the events as JSON.")] = False,
) -> None:
    """Render the events of a trace file: LLM calls, decisions, actions, errors, totals."""
    path = Path(file)
    if file == "latest" and not path.exists():
        latest = _latest()
        if latest is None:
            fail(
                f"no trace files in {default_trace_dir()}", json_out=as_json, code="trace", status=1
            )
        path = latest
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        fail(str(exc), json_out=as_json, code="trace", status=1)
    if as_json:
        typer.echo(json.dumps(events, indent=2, ensure_ascii=False))
        return
    console.print(render_trace(events, title=str(path)))


@app.command()
def view(
    file: Annotated[str, typer.Argument(help="Trace file, or 'latest' for the newest one.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML file to write (default: FILE.html).")
    ] = None,
) -> None:
    """Write the trace viewer of `tablequest serve` as one self-contained HTML file."""
    try:
        from tablequest.serve import render_trace_html
    except ImportError:
        fail("trace view needs the serve extra: pip install 'tablequest[serve]'", status=1)
    path = Path(file)
    if file == "latest" and not path.exists():
        latest = _latest()
        if latest is None:
            fail(f"no trace files in {default_trace_dir()}", code="trace", status=1)
        path = latest
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        fail(str(exc), code="trace", status=1)
    target = out or path.with_suffix(".html")
    try:
        target.write_text(render_trace_html(events, title=path.name), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {str(target)!r}: {exc}", status=1)
    console.print(f"{len(events)} events → {target}")
