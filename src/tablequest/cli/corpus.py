"""`tablequest ingest` and `tablequest search`: one library call each."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.text import Text

from tablequest.corpus import IngestReport, Store, StoreError, ingest, question_patterns
from tablequest.corpus.store import Hit, text_format
from tablequest.table.preview import preview

console = Console()
err_console = Console(stderr=True)


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
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders of tables.")],
    store: StoreOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any file failed.")] = False,
) -> None:
    """Read every table under PATHS into the store (unchanged files are skipped)."""
    with open_store(store) as st:
        report = _run_ingest(st, paths, show_progress=not json_out and sys.stderr.isatty())
    if json_out:
        print(json.dumps(report.to_json()))
    else:
        _print_report(report, st.path)
    if not report.ok or (strict and report.files_failed):
        raise typer.Exit(1)


def _run_ingest(st: Store, paths: list[Path], *, show_progress: bool) -> IngestReport:
    if not show_progress:
        return ingest(st, paths)
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("ingesting", total=None)
        return ingest(
            st, paths, progress=lambda done, total: bar.update(task, completed=done, total=total)
        )


def _print_report(report: IngestReport, path: Path | None) -> None:
    console.print(
        f"[bold]{report.tables_stored}[/bold] tables stored, "
        f"{report.tables_unchanged} unchanged, {report.files_seen} files seen"
        + (f" → {path}" if path else "")
    )
    for failure in report.files_failed:
        console.print(f"[yellow]skipped[/yellow] {failure.path}: {failure.reason}")


def search_command(
    store_path: Annotated[Path, typer.Argument(metavar="STORE", help="The store to search.")],
    question: Annotated[str, typer.Argument(help="A question in natural language.")],
    k: Annotated[int, typer.Option("-k", min=1, help="How many tables to show.")] = 5,
    method: Annotated[
        str, typer.Option(help="grep (TableSeek Eq. 1 over content words) or bm25.")
    ] = "grep",
    json_out: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Rank the store's tables for QUESTION without any LLM and show previews."""
    if method not in ("grep", "bm25"):
        err_console.print(f"[red]error:[/red] unknown --method {method!r} (use grep or bm25)")
        raise typer.Exit(2)
    if not store_path.exists():
        err_console.print(f"[red]error:[/red] no store at {str(store_path)!r}; run ingest first")
        raise typer.Exit(2)
    with open_store(store_path) as st:
        hits = search(st, question, k=k, method=method)  # type: ignore[arg-type]
        if json_out:
            print(json.dumps([hit_json(st, h) for h in hits], ensure_ascii=False))
            return
        show_hits(st, question, hits)


def search(
    store: Store, question: str, *, k: int = 5, method: Literal["grep", "bm25"] = "grep"
) -> list[Hit]:
    """LLM-free search: Eq. 1 over the question's content words, or BM25."""
    if method == "bm25":
        return store.bm25(question, k)
    return store.rank(question_patterns(question), k)


def hit_json(store: Store, hit: Hit) -> dict[str, object]:
    src = store.source(hit.table_id)
    rows = sorted({r for rs in hit.matched_rows.values() for r in rs})
    return {
        "table_id": hit.table_id,
        "score": round(hit.score, 6),
        "source": src.path if src.sheet is None else f"{src.path}#{src.sheet}",
        "format": src.format,
        "matched_rows": rows,
    }


def show_hits(store: Store, question: str, hits: list[Hit]) -> None:
    """Print ranked tables with structure-preserving previews, matches highlighted."""
    if not hits:
        console.print("No table matches the question's words.")
        return
    patterns = question_patterns(question)
    for rank, hit in enumerate(hits, start=1):
        table = store.get(hit.table_id)
        info = hit_json(store, hit)
        view = preview(table, patterns, fmt=text_format(table), max_rows=5)  # type: ignore[arg-type]
        body = Text(view.text)
        for p in patterns:
            body.highlight_regex(f"(?i){p}", "bold magenta")
        title = f"#{rank}  score {hit.score:.2f}  {info['source']}  ({info['format']})"
        console.print(Panel(body, title=title, title_align="left", expand=False))
