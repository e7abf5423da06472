"""`tablequest cache stats|clear`: inspect and empty the on-disk LLM response cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tablequest.cli._output import fail_on

app = typer.Typer(help="Inspect and clear the LLM response cache.", no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="Cache directory (default: $TABLEQUEST_CACHE_DIR or user cache)."),
]


@app.callback()
def cache() -> None:
    """Inspect and clear the LLM response cache."""


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


@app.command()
def stats(
    cache_dir: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the number of cached completions, size on disk and hits."""
    from tablequest.llm import CacheError, cache_stats

    try:
        info = cache_stats(cache_dir)
    except CacheError as exc:
        fail_on(exc, json_out=as_json)
    if as_json:
        typer.echo(json.dumps(info))
        return
    typer.echo(f"cache:   {info['path']}")
    typer.echo(f"entries: {info['entries']}")
    typer.echo(f"size:    {_size(info['bytes'])}")
    typer.echo(f"hits:    {info['hits']}")


@app.command()
def clear(
    cache_dir: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Delete every cached completion."""
    from tablequest.llm import CacheError, cache_clear, cache_path

    try:
        removed = cache_clear(cache_dir)
    except CacheError as exc:
        fail_on(exc, json_out=as_json)
    if as_json:
        typer.echo(json.dumps({"path": str(cache_path(cache_dir)), "removed": removed}))
        return
    typer.echo(f"removed {removed} cached completion(s) from {cache_path(cache_dir)}")
