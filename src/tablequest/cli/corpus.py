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

from tablequest.cli._options import RayOpt
from tablequest.cli._output import (
    console,
    encoding_bar,
    err_console,
    fail,
    fail_on,
    hit_json,
    show_hits,
)
from tablequest.cli._scale import open_corpus
from tablequest.corpus import IngestReport, Store, StoreError, ingest
from tablequest.corpus.encoders import ENCODERS, EncoderUnavailable
from tablequest.corpus.ingest import IngestAborted, StopSignals
from tablequest.corpus.retrievers import RETRIEVERS, RetrieverSettings, make_retriever
from tablequest.corpus.shards import ShardedStore, ingest_sharded, is_manifest


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


ShardsOption = Annotated[
    int | None,
    typer.Option(
        "--shards",
        min=1,
        help="Make --store a sharded corpus of N DuckDB shards (--store names its JSON "
        "manifest, e.g. corpus.json).",
    ),
]


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders of tables.")],
    store: StoreOption = None,
    shards: ShardsOption = None,
    ray: RayOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any file failed.")] = False,
) -> None:
    """Read every table under PATHS into the store (unchanged files are skipped)."""
    from tablequest.scale.cluster import ray_address

    target = store or default_store_path()
    address = ray_address(ray)
    sharded = shards is not None or is_manifest(target)
    if shards is not None and target.exists() and not is_manifest(target):
        fail(f"{str(target)!r} is not a sharded corpus: pass a new manifest path to --store")
    if address is not None and not sharded:
        fail("--ray ingests into a sharded corpus: pass --shards N (and a manifest --store)")
    if address is not None:
        _report_ingest(_ray_ingest(target, paths, address, shards, json_out), target, None,
                       json_out=json_out, strict=strict)  # fmt: skip
        return
    show = not json_out and sys.stderr.isatty()
    # Signals first: from here on Ctrl-C stops the ingest cleanly whatever it is doing.
    with StopSignals() as signals:
        try:
            if sharded:
                with ShardedStore(target, shards=shards) as st:
                    report = _run_ingest(st, paths, show_progress=show, stop=signals)
            else:
                with open_store(store, json_out=json_out) as st:
                    report = _run_ingest(st, paths, show_progress=show, stop=signals)
        except IngestAborted as exc:
            fail_on(exc, json_out=json_out, extra=exc.report.to_json())
        except StoreError as exc:
            fail_on(exc, json_out=json_out)
    _report_ingest(report, target, signals, json_out=json_out, strict=strict)


def _report_ingest(
    report: IngestReport,
    target: Path,
    signals: StopSignals | None,
    *,
    json_out: bool,
    strict: bool,
) -> None:
    stopped = signals.name if signals is not None else None
    if json_out:
        payload = report.to_json()
        if stopped:
            payload["signal"] = stopped
        print(json.dumps(payload))
    else:
        _print_report(report, target)
        if stopped:
            console.print(
                f"[yellow]stopped by {stopped}[/yellow]: {report.files_left} files not "
                "read; run the same command again to finish"
            )
    if signals is not None and signals.received is not None:
        raise typer.Exit(128 + signals.received)
    if not report.ok or (strict and report.files_failed):
        raise typer.Exit(1)


def _ray_ingest(
    target: Path, paths: list[Path], address: str, shards: int | None, json_out: bool
) -> IngestReport:
    from tablequest.scale.cluster import RayUnavailable
    from tablequest.scale.ingest import ingest_ray

    try:
        return ingest_ray(target, paths, address=address, shards=shards)
    except (StoreError, RayUnavailable, ValueError) as exc:
        fail(str(exc), json_out=json_out)


def _run_ingest(
    st: Store, paths: list[Path], *, show_progress: bool, stop: StopSignals
) -> IngestReport:
    run = ingest_sharded if isinstance(st, ShardedStore) else ingest
    if not show_progress:
        return run(st, paths, stop=stop.event)  # type: ignore[arg-type]
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("ingesting", total=None)
        return run(
            st,  # type: ignore[arg-type]
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
    ray: RayOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Rank the store's (or sharded corpus's) tables for QUESTION without any LLM."""
    if not store_path.exists():
        fail(f"no store at {str(store_path)!r}; run ingest first", json_out=json_out)
    try:
        retriever = make_retriever(method, RetrieverSettings(encoder=encoder))
    except (ValueError, EncoderUnavailable) as exc:
        fail(str(exc), json_out=json_out)
    with open_corpus(store_path, ray, json_out=json_out) as st:
        try:
            with encoding_bar("encoding tables", not json_out):
                hits = retriever.rank(st, question, k, rows=True)
        except EncoderUnavailable as exc:
            fail(str(exc), json_out=json_out)
        if json_out:
            print(json.dumps([hit_json(st, h) for h in hits], ensure_ascii=False))
            return
        show_hits(st, question, hits)
