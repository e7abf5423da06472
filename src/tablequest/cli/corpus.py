"""`tablequest ingest` and `tablequest search`: one library call each.

Exit statuses: 0 done; 1 the run could not complete (a file failed with --strict, the store
is held by another process, the disk is full); 2 bad input (no store, not a DuckDB file);
130 / 143 an ingest stopped by SIGINT / SIGTERM after committing the files read so far.
With --json every error is ``{"error": {"code", "message"}}`` on stdout (plus the report
so far for an ingest that stopped on a store failure).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from tablequest.cli._output import (
    console,
    encoding_bar,
    err_console,
    fail,
    fail_on,
    hit_json,
    show_hits,
)
from tablequest.corpus import IngestReport, Store, StoreError, ingest
from tablequest.corpus.encoders import ENCODERS, EncoderUnavailable
from tablequest.corpus.ingest import IngestAborted, StopSignals
from tablequest.corpus.retrievers import RETRIEVERS, RetrieverSettings, make_retriever


def default_store_path() -> Path:
    """The store used when --store is not given: under the user data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("tablequest")) / "corpus.duckdb"


StoreOption = Annotated[
    Path | None,
    typer.Option("--store", "-s", help="DuckDB store file (default: under the user data dir)."),
]


def open_store(path: Path | None, *, json_out: bool = False) -> Store:
    """Open a store for writing, turning failures into one clear line and an exit status."""
    try:
        return Store(path or default_store_path())
    except StoreError as exc:
        fail_on(exc, json_out=json_out)


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders of tables.")],
    store: StoreOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any file failed.")] = False,
) -> None:
    """Read every table under PATHS into the store (unchanged files are skipped)."""
    # Signals first: from here on Ctrl-C stops the ingest cleanly whatever it is doing.
    with StopSignals() as signals, open_store(store, json_out=json_out) as st:
        try:
            report = _run_ingest(
                st, paths, show_progress=not json_out and sys.stderr.isatty(), stop=signals
            )
        except IngestAborted as exc:
            fail_on(exc, json_out=json_out, extra=exc.report.to_json())
    if json_out:
        payload = report.to_json()
        if signals.name:
            payload["signal"] = signals.name
        print(json.dumps(payload))
    else:
        _print_report(report, st.path)
        if signals.name:
            console.print(
                f"[yellow]stopped by {signals.name}[/yellow]: {report.files_left} files not "
                "read; run the same command again to finish"
            )
    if signals.received is not None:
        raise typer.Exit(128 + signals.received)
    if not report.ok or (strict and report.files_failed):
        raise typer.Exit(1)


def _run_ingest(
    st: Store, paths: list[Path], *, show_progress: bool, stop: StopSignals
) -> IngestReport:
    if not show_progress:
        return ingest(st, paths, stop=stop.event)
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("ingesting", total=None)
        return ingest(
            st,
            paths,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            stop=stop.event,
        )


def _print_report(report: IngestReport, path: Path | None) -> None:
    console.print(
        f"[bold]{report.tables_stored}[/bold] tables stored, "
        f"{report.tables_unchanged} unchanged, {report.files_seen} files seen"
        + (f" → {path}" if path else "")
    )
    for failure in report.files_failed:
        console.print(
            f"[yellow]skipped[/yellow] {escape(failure.path)}: {escape(failure.reason)}",
            soft_wrap=True,
            highlight=False,
        )
    for warned in report.files_warned:
        console.print(
            f"[yellow]repaired[/yellow] {escape(warned.path)}: {escape(warned.warning)}",
            soft_wrap=True,
            highlight=False,
        )


def search_command(
    store_path: Annotated[Path, typer.Argument(metavar="STORE", help="The store to search.")],
    question: Annotated[str, typer.Argument(help="A question in natural language.")],
    k: Annotated[int, typer.Option("-k", min=1, help="How many tables to show.")] = 5,
    method: Annotated[
        str, typer.Option(help=f"Retriever: {' | '.join(RETRIEVERS)} (grep: TableSeek Eq. 1).")
    ] = "grep",
    encoder: Annotated[
        str, typer.Option(help=f"Encoder of dense, hybrid, rerank: {' | '.join(ENCODERS)}.")
    ] = "minilm",
    json_out: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Rank the store's tables for QUESTION without any LLM and show previews."""
    if not store_path.exists():
        fail(f"no store at {str(store_path)!r}; run ingest first", json_out=json_out)
    try:
        retriever = make_retriever(method, RetrieverSettings(encoder=encoder))
    except (ValueError, EncoderUnavailable) as exc:
        fail(str(exc), json_out=json_out)
    try:
        st = Store(store_path, read_only=True)
    except StoreError as exc:
        fail_on(exc, json_out=json_out)
    with st:
        try:
            with encoding_bar("encoding tables", not json_out):
                hits = retriever.rank(st, question, k, rows=True)
        except EncoderUnavailable as exc:
            fail(str(exc), json_out=json_out)
        if json_out:
            print(json.dumps([hit_json(st, h) for h in hits], ensure_ascii=False))
            return
        show_hits(st, question, hits)
