"""`tablequest ingest` and `tablequest search`: one library call each.

Both name the store by the store rule (`--store/-s`, see `_options`). `search` refuses an
empty question and a missing store (it never creates one) and prints each table's id.
`ingest` reports an input path that does not exist as not found before reading anything;
an ingest that stored nothing exits 1 and removes what it created (the store file, its WAL,
a sharded corpus's manifest and shard folder, parent folders), while a store that existed
before is kept (so is the store of an ingest stopped by a signal: running the same command
again finishes it). $TABLEQUEST_RAY_ADDRESS applies to sharded corpora only; a plain store is
ingested in this process (only an explicit --ray asks for --shards).

Exit statuses: 0 done; 1 the run could not complete (nothing stored, a file failed with
--strict, the store is held by another process, the disk is full); 2 bad input (no store,
not a DuckDB file, an input not found, an empty question); 130 / 143 an ingest stopped by
SIGINT / SIGTERM after committing the files read so far. With --json every error is
``{"error": {"code", "message"}}`` on stdout (plus the report so far for an ingest that
stopped on a store failure).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli._defaults import ENCODER
from tablequest.cli._exit import FAILED, USAGE
from tablequest.cli._options import (
    ENCODER_NAMES,
    RETRIEVER_NAMES,
    DeviceOpt,
    RayOpt,
    StoreOpt,
    default_store_path,
    require_store,
    store_and_words,
)
from tablequest.cli._output import encoding_bar, fail, fail_on, hit_json, show_hits

if TYPE_CHECKING:
    from tablequest.corpus import Corpus, IngestReport, StopSignals
    from tablequest.table import ReadBudget


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
    store: StoreOpt = None,
    shards: ShardsOption = None,
    ray: RayOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any file failed.")] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="First remove the tables of stored files under PATHS that no longer exist.",
        ),
    ] = False,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            "--budget",
            metavar="NAME=VALUE",
            help="A reading budget limit, e.g. free_cells=5000000 (names: free_cells, "
            "cells_per_byte, max_cells, max_decoded_bytes, max_seconds, max_columns, "
            "ingest_cells, ingest_seconds; "
            "0 or none: no limit). Overrides its TABLEQUEST_READ_*/INGEST_* variable.",
        ),
    ] = None,
) -> None:
    """Read every table under PATHS into the store (unchanged files are skipped)."""
    from tablequest.scale import ray_address

    read_budget = _read_budget(budget or [], json_out=json_out)
    target = store.expanduser() if store is not None else default_store_path()
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail("not found: " + ", ".join(repr(p) for p in missing), json_out=json_out,
             code="not_found")  # fmt: skip
    sharded = shards is not None or _is_sharded(target)
    if shards is not None and target.exists() and not _is_sharded(target):
        fail(f"{str(target)!r} is not a sharded corpus: pass a new manifest path to --store")
    if ray is not None and not sharded:
        fail("--ray ingests into a sharded corpus: pass --shards N (and a manifest --store)")
    if prune and ray is not None:
        fail("--prune runs in this process: leave out --ray")
    # $TABLEQUEST_RAY_ADDRESS applies to sharded corpora only: a plain store ingests here.
    address = ray_address(ray) if sharded else None
    fresh = _fresh_paths(target, sharded=sharded)
    kept: list[int] = []  # tables stored or unchanged, once known
    try:
        report, signals = _ingest(
            target, paths, shards, address, kept, json_out=json_out, budget=read_budget,
            prune=prune,
        )  # fmt: skip
    except typer.Exit:  # a store or Ray failure, said already; kept names what was stored
        if sum(kept) == 0:
            _remove(fresh)
        raise
    if sum(kept) == 0 and (signals is None or signals.received is None):
        _remove(fresh)  # a stopped ingest keeps its store: the same command finishes it
    _report_ingest(report, target, signals, json_out=json_out, strict=strict)


def _read_budget(items: list[str], *, json_out: bool) -> ReadBudget:
    """The reading budget: `--budget NAME=VALUE` over the [reading] settings (environment,
    trusted tablequest.toml, defaults). Every worker gets it as an argument: processes,
    shards and Ray tasks alike (never through the environment)."""
    from tablequest.configfile import ConfigFileError
    from tablequest.settings import Settings
    from tablequest.table import READ_BUDGET_ENV, ReadBudget

    flags: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in READ_BUDGET_ENV:
            names = ", ".join(READ_BUDGET_ENV)
            fail(f"--budget {item!r}: expected NAME=VALUE, NAME one of {names}", json_out=json_out)
        flags[f"reading.{name}"] = value.strip()
    try:
        settings = Settings.load(flags)
    except ConfigFileError as exc:  # SettingsError too: the message names the flag or variable
        fail(f"reading budget: {exc}", json_out=json_out)
    return ReadBudget.from_settings(settings.reading)


def _ingest(
    target: Path,
    paths: list[Path],
    shards: int | None,
    address: str | None,
    kept: list[int],
    *,
    json_out: bool,
    budget: ReadBudget,
    prune: bool = False,
) -> tuple[IngestReport, StopSignals | None]:
    """The ingest itself: on Ray, or here with Ctrl-C stopping it cleanly. Appends to `kept`
    the count of tables the store holds from PATHS (also when a store failure stopped it)."""
    from tablequest.corpus import IngestAborted, StopSignals, StoreError, open_corpus

    if address is not None:
        report = _ray_ingest(target, paths, address, shards, json_out, budget)
        kept.append(report.tables_stored + report.tables_unchanged)
        return report, None
    from tablequest.cli._progress import stderr_is_terminal

    show = not json_out and stderr_is_terminal()
    # Signals first: from here on Ctrl-C stops the ingest cleanly whatever it is doing.
    with StopSignals() as signals:
        try:
            with open_corpus(target, read_only=False, shards=shards) as st:
                report = _run_ingest(st, paths, show, signals, budget, prune)
        except IngestAborted as exc:
            kept.append(exc.report.tables_stored + exc.report.tables_unchanged)
            fail_on(exc, json_out=json_out, extra=exc.report.to_json())
        except StoreError as exc:
            fail_on(exc, json_out=json_out)
    kept.append(report.tables_stored + report.tables_unchanged)
    return report, signals


def _is_sharded(target: Path) -> bool:
    """Whether `target` holds a sharded corpus (opened read-only to ask it, without waiting
    for a lock: the ingest's own opening waits and says so)."""
    from tablequest.corpus import StoreError, is_corpus_file, open_corpus

    if not is_corpus_file(target):
        return False
    try:
        with open_corpus(target, lock_timeout=0) as corpus:
            return corpus.manifest is not None
    except StoreError:
        return False


def _fresh_paths(target: Path, *, sharded: bool) -> list[Path]:
    """What an ingest into `target` may create that does not exist yet: the store file, its
    WAL, a sharded corpus's shard folder, missing parent folders (innermost first)."""
    candidates = [target, target.with_name(target.name + ".wal")]
    if sharded:
        candidates.append(target.with_name(f"{target.stem}.shards"))
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        candidates.append(parent)
        parent = parent.parent
    return [p for p in candidates if not p.exists()]


def _remove(fresh: list[Path]) -> None:
    """Remove what an ingest that stored nothing created (a store that existed is kept)."""
    for path in fresh:
        with contextlib.suppress(OSError):
            if path.is_dir() and path.name.endswith(".shards"):
                shutil.rmtree(path)
            elif path.is_dir():
                path.rmdir()  # a parent folder: only when empty
            elif path.exists():
                path.unlink()


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
        _print_report(report, target if target.exists() else None)
        if stopped:
            from tablequest.cli._output import console

            console.print(
                f"[yellow]stopped by {stopped}[/yellow]: {report.files_left} files not "
                "read; run the same command again to finish"
            )
    if signals is not None and signals.received is not None:
        raise typer.Exit(128 + signals.received)
    if not report.ok:
        from tablequest.cli._output import err_console

        err_console.print(
            f"nothing stored: no table could be read, so no store was written at {target}"
            if not target.exists() else "nothing stored: no table could be read",
            markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
        raise typer.Exit(FAILED)
    if strict and report.files_failed:
        raise typer.Exit(FAILED)


def _ray_ingest(
    target: Path,
    paths: list[Path],
    address: str,
    shards: int | None,
    json_out: bool,
    budget: ReadBudget,
) -> IngestReport:
    from tablequest.errors import TablequestError
    from tablequest.scale import ingest_ray

    try:
        return ingest_ray(target, paths, address=address, shards=shards, budget=budget)
    except TablequestError as exc:  # Ray missing or unreachable, a bad --ray (2); the store
        fail_on(exc, json_out=json_out)


def _run_ingest(
    st: Corpus,
    paths: list[Path],
    show_progress: bool,
    stop: StopSignals,
    budget: ReadBudget,
    prune: bool = False,
) -> IngestReport:
    from tablequest.cli._output import err_console
    from tablequest.cli._progress import ingest_bar
    from tablequest.corpus import ingest_corpus

    if not show_progress:
        return ingest_corpus(st, paths, stop=stop.event, budget=budget, prune=prune)
    with ingest_bar(err_console) as bar:  # a big file's size and rows, index builds: stages
        return ingest_corpus(
            st, paths, progress=bar.files, stop=stop.event, budget=budget, prune=prune
        )


def _print_report(report: IngestReport, path: Path | None) -> None:
    from rich.markup import escape

    from tablequest.cli._output import console

    console.print(
        f"[bold]{report.tables_stored}[/bold] tables stored, "
        f"{report.tables_unchanged} unchanged, {report.files_seen} files seen"
        + (f" → {path}" if path else "")
    )
    for gone in report.files_pruned:
        console.print(
            f"[yellow]pruned[/yellow] {escape(gone)}: no longer on disk, its tables removed",
            soft_wrap=True,
            highlight=False,
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


SearchMethodOpt = Annotated[
    str,
    typer.Option("--method", "-m", help=f"Retriever: {RETRIEVER_NAMES} (grep: TableSeek Eq. 1)."),
]


def search_command(
    question: Annotated[
        str, typer.Argument(metavar="QUESTION", help="A question in natural language.")
    ],
    extra: Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)] = None,
    store: StoreOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, help="How many tables to show.")] = 5,
    method: SearchMethodOpt = "grep",
    encoder: Annotated[
        str,
        typer.Option(help=f"Encoder of dense, hybrid, phrase-hybrid, rerank: {ENCODER_NAMES}."),
    ] = ENCODER,
    device: DeviceOpt = None,
    rerank_url: Annotated[
        str | None, typer.Option("--rerank-url", metavar="URL", help="rerank: a /v1/rerank server.")
    ] = None,
    rerank_model: Annotated[
        str | None, typer.Option("--rerank-model", metavar="NAME", help="rerank: its model.")
    ] = None,
    ray: RayOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Rank the store's (or sharded corpus's) tables for QUESTION without any LLM; shows
    each table's id (for `tablequest show` and `ask --table-id`) and a preview."""
    store_path, (question,) = store_and_words(
        "search", [question, *(extra or [])], store, names=("QUESTION",), json_out=json_out
    )
    if not question.strip():
        fail("the question is empty: give a question in words", json_out=json_out, status=USAGE)
    require_store(store_path, json_out=json_out)
    from tablequest.cli._scale import open_corpus
    from tablequest.cli._settings import loaded_or_fail
    from tablequest.corpus import (
        EncoderSettings,
        EncoderUnavailable,
        RetrieverSettings,
        make_retriever,
    )
    from tablequest.errors import UsageError

    if method == "rerank" and not (rerank_url and rerank_model):
        fail(
            "--method rerank needs a server with /v1/rerank: --rerank-url URL --rerank-model NAME",
            json_out=json_out,
        )
    loaded = loaded_or_fail({"embeddings.device": device}, json_out=json_out)
    settings = RetrieverSettings(
        encoder=encoder,
        embeddings=EncoderSettings.from_settings(loaded),  # [embeddings], else the [llm] server
        rerank_url=rerank_url,
        rerank_model=rerank_model,
    )
    try:
        retriever = make_retriever(method, settings)
    except UsageError as exc:  # an unknown method or encoder, a missing extra
        fail_on(exc, json_out=json_out)
    with open_corpus(store_path, ray, loaded, json_out=json_out) as st:
        try:
            with encoding_bar("encoding tables", not json_out):
                hits = retriever.rank(st, question, k, rows=True)
        except EncoderUnavailable as exc:
            fail_on(exc, json_out=json_out)
        if json_out:
            print(json.dumps([hit_json(st, h) for h in hits], ensure_ascii=False))
            return
        show_hits(st, question, hits)
