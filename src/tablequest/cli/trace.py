"""`tablequest trace show FILE`: render a query trace (JSONL) in the terminal;
`tablequest trace view FILE`: write it as a self-contained HTML page.

``latest`` (when no file of that name exists) is `tablequest.trace.latest_trace`: the
finished trace with the newest start stamp in its name, never one another running process
is still writing (rule and reasons in `tablequest.trace.latest`). A FILE that does not exist
or is not a trace, and ``latest`` with no finished trace, are bad input: exit 2, code
``trace``. ``--out`` has the short flag ``-O`` (as wget's), because ``-o`` means ``--option``
in every command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tablequest.cli._output import fail, fail_on

app = typer.Typer(help="Show recorded query traces.", no_args_is_help=True)


@app.callback()
def trace() -> None:
    """Show recorded query traces."""


def _resolve(file: str, *, json_out: bool = False) -> Path:
    """`file`, or the latest trace for ``latest``; one error line and exit 2 when `file`
    does not exist or there is no latest trace (bad input, as a file that is not a trace)."""
    from tablequest.trace import default_trace_dir, latest_trace

    path = Path(file)
    if file != "latest" and not path.exists():
        fail(f"not found: {file!r} (a trace file, or 'latest')", json_out=json_out,
             code="trace")  # fmt: skip
    if file != "latest" or path.exists():
        return path
    latest = latest_trace()
    if latest is None:  # bad input as a missing file is: there is no latest trace to name
        fail(f"no finished trace files in {default_trace_dir()} (so no 'latest')",
             json_out=json_out, code="trace")  # fmt: skip
    return latest


LATEST_HELP = (
    "Trace file, or 'latest': the newest finished trace (by the start stamp in its name; "
    "never one another running process is still writing)."
)


@app.command()
def show(
    file: Annotated[str, typer.Argument(help=LATEST_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the events as JSON.")] = False,
) -> None:
    """Render the events of a trace file: LLM calls, decisions, actions, errors, totals."""
    from tablequest.cli._output import console
    from tablequest.trace import UnreadableTrace, read_trace, render_trace

    path = _resolve(file, json_out=as_json)
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        fail_on(exc, json_out=as_json)
    if as_json:
        typer.echo(json.dumps(events, indent=2, ensure_ascii=False))
        return
    console.print(render_trace(events, title=str(path)))


@app.command()
def view(
    file: Annotated[str, typer.Argument(help=LATEST_HELP)],
    out: Annotated[
        Path | None, typer.Option("--out", "-O", help="HTML file to write (default: FILE.html).")
    ] = None,
) -> None:
    """Write the trace viewer of `tablequest serve` as one self-contained HTML file."""
    from tablequest.cli._output import console
    from tablequest.trace import UnreadableTrace, read_trace

    try:
        from tablequest.serve import render_trace_html
    except ImportError:
        fail("trace view needs the serve extra: pip install 'tablequest[serve]'", status=1)
    path = _resolve(file)
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        fail_on(exc)
    target = out or path.with_suffix(".html")
    try:
        target.write_text(render_trace_html(events, title=path.name), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {str(target)!r}: {exc}", status=1)
    console.print(f"{len(events)} events → {target}")
