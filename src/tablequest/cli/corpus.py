"""`tablequest ingest` and `tablequest search`: one library call each."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from tablequest.cli._options import RayOpt
from tablequest.cli._output import console, err_console, fail, hit_json, show_hits
from tablequest.cli._scale import open_corpus
from tablequest.corpus import IngestReport, Store, StoreError, ingest
from tablequest.corpus.encoders import ENCODERS, EncoderUnavailable
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


def open_store(path: Path | None) -> Store:
    """Open a store for the CLI, turning failures into one clear line and exit code 2."""
    try:
        return Store(path or default_store_path())
    except StoreError as exc:
        fail(str(exc))


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
    show = not json_out and sys.stderr.isatty()
    if address is not None:
        report = _ray_ingest(target, paths, address, shards, json_out)
    elif sharded:
        try:
            with ShardedStore(target, shards=shards) as st:
                report = _run_ingest(st, paths, show_progress=show)
        except StoreError as exc:
            fail(str(exc), json_out=json_out)
    else:
        with open_store(store) as st:
            report = _run_ingest(st, paths, show_progress=show)
    if json_out:
        print(json.dumps(report.to_json()))
    else:
        _print_report(report, target)
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


def _run_ingest(st: Store, paths: list[Path], *, show_progress: bool) -> IngestReport:
    run = ingest_sharded if isinstance(st, ShardedStore) else ingest
    if not show_progress:
        return run(st, paths)  # type: ignore[arg-type]
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("ingesting", total=None)
        return run(
            st,  # type: ignore[arg-type]
            paths,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
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
            hits = retriever.rank(st, question, k, rows=True)
        except EncoderUnavailable as exc:
            fail(str(exc), json_out=json_out)
        if json_out:
            print(json.dumps([hit_json(st, h) for h in hits], ensure_ascii=False))
            return
        show_hits(st, question, hits)
