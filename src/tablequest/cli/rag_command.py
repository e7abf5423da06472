"""The ``tablequest ask ... --method rag`` glue: options in, `run_rag` / `rag_preview` out.

Without a configured model the LLM-free part runs (`rag_preview`: schema and cell retrieval
with the question's keywords) and the one-line `NOT_CONFIGURED_HINT` says how to connect one.
Bad options or sources end with one ``error:`` line (exit 2); anything failing inside the run
is recorded in the trace and reported as a "failed" result, never a traceback.

Database embeddings of a table file are cached in `embedding_cache_path()` (a DuckDB file in
the cache directory, ``--no-cache`` turns it off); a store source caches them in itself. When
the cache file cannot be opened (another process holds its lock), the run encodes in memory.
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import typer
from rich.panel import Panel
from rich.table import Table as RichTable
from rich.text import Text

from tablequest.cli.corpus import console, err_console
from tablequest.cli.rag import (
    RagSourceError,
    embedding_cache_path,
    is_store_file,
    rag_payload,
    rag_preview,
    run_rag,
)
from tablequest.corpus.store import Store, StoreError
from tablequest.llm.base import LLM
from tablequest.llm.config import NOT_CONFIGURED_HINT
from tablequest.methods.base import Result, Task
from tablequest.methods.rag import BASELINES, Baseline
from tablequest.methods.rag.retrieval import ENCODER_KINDS, EncoderKind
from tablequest.trace import Trace


@dataclass(frozen=True)
class RagOptions:
    """The ``ask`` options that TableRAG reads (CLI names in the comments)."""

    table_id: str | None = None  # --table-id
    budget: int = 10_000  # --budget
    top_k: int = 5  # --top-k
    encoder: str = "minilm"  # --encoder
    sc: int = 1  # --sc
    baseline: str | None = None  # --baseline
    max_steps: int = 5  # --steps
    embed_url: str | None = None  # --embed-url (default: the LLM URL)
    embed_model: str | None = None  # --embed-model
    api_key: str | None = None  # --api-key
    cache: bool = True  # not --no-cache


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/red] {message}", soft_wrap=True)
    raise typer.Exit(2)


def _check(options: RagOptions) -> tuple[EncoderKind, Baseline | None]:
    if options.encoder not in ENCODER_KINDS:
        _fail(
            f"unknown --encoder {options.encoder!r} for --method rag; "
            f"one of {', '.join(ENCODER_KINDS)}"
        )
    if options.baseline is not None and options.baseline not in BASELINES:
        _fail(f"unknown --baseline {options.baseline!r}; one of {', '.join(BASELINES)}")
    if options.encoder == "api" and not (options.embed_url and options.embed_model):
        _fail("--encoder api needs --embed-model NAME and --embed-url URL (or --llm-url)")
    return options.encoder, options.baseline  # type: ignore[return-value]


def open_embedding_cache(source: Path, trace: Trace) -> Store | None:
    """The CLI's embedding cache for a table file (None for a store source or when locked)."""
    if source.is_file() and is_store_file(source):
        return None  # the store caches its own tables' embeddings
    path = embedding_cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Store(path)
    except (OSError, StoreError, duckdb.Error) as exc:
        trace.event("fallback", stage="embedding_cache", reason=f"{type(exc).__name__}: {exc}")
        return None


def ask_rag(
    source: Path,
    question: str,
    *,
    task: Task,
    llm: LLM | None,
    options: RagOptions,
    trace_dir: Path | None,
    json_out: bool,
) -> None:
    """Run ``ask --method rag`` and print the result (or the LLM-free retrieval preview)."""
    encoder, baseline = _check(options)
    trace = Trace.for_query(trace_dir)
    cache = open_embedding_cache(source, trace) if options.cache else None
    common: dict[str, Any] = dict(
        budget=options.budget,
        top_k=options.top_k,
        encoder=encoder,
        embed_url=options.embed_url,
        embed_model=options.embed_model,
        api_key=options.api_key,
        cache=cache,
        trace=trace,
    )
    try:
        if llm is None:
            payload = rag_preview(source, options.table_id, question, **common)
            show_preview(payload, json_out)
            return
        try:
            result = run_rag(
                source,
                options.table_id,
                question,
                llm=llm,
                task=task,
                sc=options.sc,
                baseline=baseline,
                max_steps=options.max_steps,
                **common,
            )
        except (RagSourceError, ValueError):
            raise
        except Exception as exc:  # never a traceback: record it and report a failed run
            result = failed_result(trace, exc)
    except (RagSourceError, ValueError) as exc:
        _fail(str(exc))
        return
    finally:
        if llm is not None:
            llm.close()
        if cache is not None:
            cache.close()
    if json_out:
        print(json.dumps(rag_payload(result), ensure_ascii=False, default=str))
    else:
        show_rag_result(result)


def failed_result(trace: Trace, exc: BaseException) -> Result:
    """A "failed" result for an unexpected error, recorded in the trace."""
    reason = f"{type(exc).__name__}: {exc}"
    trace.event(
        "error",
        stage="ask",
        error=type(exc).__name__,
        message=str(exc),
        traceback=traceback.format_exc(limit=8),
    )
    return Result(
        answer=None,
        status="failed",
        trace_path=str(trace.path) if trace.path else None,
        details={"reason": reason, "error": reason},
    )


def _retrieval_view(columns: list[list[str]], cells: list[list[str]]) -> RichTable:
    view = RichTable(title="retrieved (schema · cells)", title_justify="left")
    view.add_column("kind", style="dim")
    view.add_column("column")
    view.add_column("value / schema")
    for name, doc in columns:
        view.add_row("schema", name, Text(doc))
    for name, value in cells:
        view.add_row("cell", name, Text(value[:120]))
    return view


def show_preview(payload: dict[str, Any], json_out: bool) -> None:
    """Print the LLM-free retrieval preview and the hint."""
    if json_out:
        print(json.dumps(payload, ensure_ascii=False, default=str))
        print(NOT_CONFIGURED_HINT, file=sys.stderr)
        return
    found = payload["retrieval"]
    db = payload["databases"]
    source = (payload["final_table"] or payload["tables_consulted"][0])["source"]
    console.print(
        f"{source}: {db['shape'][0]} rows × {db['shape'][1]} columns, "
        f"{db['distinct_pairs']} distinct (column, value) pairs, {db['kept_pairs']} kept "
        f"(B = {db['budget']})"
    )
    console.print(
        f"queries (question keywords): schema {found['schema_queries']}, "
        f"cells {found['cell_queries']}"
    )
    console.print(
        _retrieval_view(
            [[c["column"], c["schema"]] for c in found["columns"]],
            [[c["column"], c["value"]] for c in found["cells"]],
        )
    )
    console.print(f"[bold yellow]{NOT_CONFIGURED_HINT}[/bold yellow]", soft_wrap=True)
    console.print(f"trace: {payload['trace']}")


def show_rag_result(result: Result) -> None:
    """Answer, status, what retrieval showed the solver, evidence cells, usage, trace."""
    data = rag_payload(result)
    colour = {"answered": "green", "insufficient": "yellow", "failed": "red"}[result.status]
    console.print(
        Panel(
            Text(result.answer or "(no answer)", style="bold"),
            title=f"answer · [{colour}]{result.status}[/{colour}] · {data['config']}",
            title_align="left",
            expand=False,
        )
    )
    if data["reason"] and result.status != "answered":
        console.print(f"  reason: {data['reason']}")
    samples = result.details.get("samples") or []
    if samples and samples[0].get("retrieved_columns") is not None:
        first = samples[0]
        console.print(_retrieval_view([[c, ""] for c in first["retrieved_columns"]],
                                      first.get("retrieved_cells") or []))  # fmt: skip
    if data["votes"] and len(samples) > 1:
        console.print(f"  votes: {data['votes']}")
    for cell in data["evidence"][:10]:
        console.print(f"  evidence: row {cell['row']}, column {cell['col']}: {cell['value']}")
    for t in data["tables_consulted"]:
        console.print(f"  consulted: {t['source']}  [dim]({t['table_id']})[/dim]")
    u = data["usage"]
    console.print(
        f"  usage: {u['calls']} calls, {u['prompt_tokens']}+{u['completion_tokens']} "
        f"tokens, {u['seconds']} s, {u['cache_hits']} cache hits"
    )
    console.print(f"  trace: {data['trace']}")
