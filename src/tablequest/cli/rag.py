"""`tablequest ask ... --method rag`: TableRAG on one table of a file or a store.

`run_rag` is the one library call behind the command; `rag_preview` is its LLM-free part
(schema and cell retrieval with the question's keywords as queries). A table file is read
directly (no ingest: a 10^6-cell CSV would otherwise be serialized three times); a DuckDB
store file or a `Store` gives the table by id. Database embeddings are cached in the source
store, or for a table file in `embedding_cache_path()` (the CLI's default), keyed by the
table's content hash. `rag_payload` is the ``--json`` output, in the shape of ``ask --json``
with the source path taken from the result (no store needed). The command glue
(`ask_rag`) lives in `cli/rag_command.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.corpus.dense import Encoder
from tablequest.corpus.store import Store, StoreError, table_id_for
from tablequest.llm.base import LLM
from tablequest.llm.cache import default_cache_dir
from tablequest.llm.usage import UsageMeter
from tablequest.methods.base import Result, Task
from tablequest.methods.rag import Baseline, RagConfig, TableRAG
from tablequest.methods.rag.expansion import is_numeric, keywords
from tablequest.methods.rag.retrieval import EncoderKind, make_encoder
from tablequest.sandbox import Sandbox
from tablequest.table import Table, UnreadableTable, read_tables
from tablequest.trace import Trace

EMBEDDING_CACHE_FILE = "rag_embeddings.duckdb"


class RagSourceError(ValueError):
    """The source or table id cannot be used; the message names it and the fix."""


def is_store_file(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


def _from_store(store: Store, table_id: str | None, label: str) -> tuple[str, Table]:
    ids = store.table_ids()
    if table_id is None:
        if len(ids) != 1:
            raise RagSourceError(
                f"{label} holds {len(ids)} tables; pass --table-id ID "
                "(`tablequest search` shows ids)"
            )
        table_id = ids[0]
    try:
        return table_id, store.get(table_id)
    except KeyError:
        raise RagSourceError(f"no table {table_id!r} in {label}") from None


def _from_file(path: Path, table_id: str | None) -> tuple[str, Table]:
    try:
        tables = read_tables(path)
    except UnreadableTable as exc:
        raise RagSourceError(str(exc)) from None
    if not tables:
        raise RagSourceError(f"no table found in {str(path)!r}")
    key = str(path.resolve())
    ids = [table_id_for(key, i) for i in range(len(tables))]
    if table_id is None:
        if len(tables) > 1:
            choices = ", ".join(f"{i} ({t.n_rows}x{t.n_cols})" for i, t in enumerate(tables))
            raise RagSourceError(
                f"{str(path)!r} holds {len(tables)} tables; pass --table-id with one of {choices}"
            )
        return ids[0], tables[0]
    if table_id.isdigit() and int(table_id) < len(tables):
        return ids[int(table_id)], tables[int(table_id)]
    if table_id in ids:
        return table_id, tables[ids.index(table_id)]
    raise RagSourceError(
        f"no table {table_id!r} in {str(path)!r}; use an index 0..{len(tables) - 1}"
    )


def _cache_store(cache: str | Path | Store | None) -> tuple[Store | None, bool]:
    if cache is None or isinstance(cache, Store):
        return cache, False
    path = Path(cache).expanduser()
    if path.exists() and not (path.is_file() and is_store_file(path)):
        raise RagSourceError(f"cannot use {str(cache)!r} as embedding cache: not a DuckDB file")
    try:
        return Store(cache), True
    except StoreError as exc:
        raise RagSourceError(f"cannot use {str(cache)!r} as embedding cache: {exc}") from None


@dataclass
class RagSource:
    """The table to answer from, its id, and the store it came from (None for a file)."""

    table_id: str
    table: Table
    store: Store | None = None
    opened: Store | None = None

    def close(self) -> None:
        """Close the store file opened for this source (a given `Store` stays open)."""
        if self.opened is not None:
            self.opened.close()
            self.opened = None


def open_rag_source(source: str | Path | Store, table_id: str | None) -> RagSource:
    """The one table of `source` (a table file, a DuckDB store file or a `Store`).

    Raises:
        RagSourceError: unreadable source, a folder, unknown or ambiguous table id.
    """
    if isinstance(source, Store):
        tid, table = _from_store(source, table_id, "the store")
        return RagSource(tid, table, source)
    path = Path(source).expanduser()
    if not path.exists():
        raise RagSourceError(f"no table file or store at {str(path)!r}")
    if path.is_dir():
        raise RagSourceError(f"{str(path)!r} is a folder; --method rag needs one table file")
    if not is_store_file(path):
        tid, table = _from_file(path, table_id)
        return RagSource(tid, table)
    try:
        opened = Store(path)
    except StoreError as exc:
        raise RagSourceError(str(exc)) from None
    try:
        tid, table = _from_store(opened, table_id, repr(str(path)))
    except RagSourceError:
        opened.close()
        raise
    return RagSource(tid, table, opened, opened)


def embedding_cache_path(cache_dir: str | Path | None = None) -> Path:
    """Where the CLI keeps database embeddings of table files (next to the LLM cache)."""
    return Path(cache_dir or default_cache_dir()) / EMBEDDING_CACHE_FILE


def run_rag(
    source: str | Path | Store,
    table_id: str | None,
    question: str,
    *,
    llm: LLM,
    task: Task = "tableqa",
    budget: int = 10_000,
    top_k: int = 5,
    encoder: EncoderKind = "minilm",
    sc: int = 1,
    baseline: Baseline | None = None,
    max_steps: int = 5,
    embed_url: str | None = None,
    embed_model: str | None = None,
    api_key: str | None = None,
    cache: str | Path | Store | None = None,
    trace: Trace | None = None,
    trace_dir: str | Path | None = None,
    usage: UsageMeter | None = None,
    encoder_impl: Encoder | None = None,
    sandbox: Sandbox | None = None,
) -> Result:
    """Answer `question` from one table with TableRAG (or a baseline).

    Args:
        source: A table file (read directly), a DuckDB store file, or a `Store`.
        table_id: Which table: a store id, or for a file an index ("0") or its store id;
            None when the source holds exactly one table.
        question: The question (a claim with task "fact_verification").
        llm: The model.
        encoder: minilm | bm25 | hybrid | api (api uses `embed_url` / `embed_model`).
        cache: Store (or DuckDB path) where database embeddings are kept across runs;
            default: the store itself for a store source, else an in-memory store.
        trace: Trace to record into; default a new file in `trace_dir`.
        encoder_impl: A ready encoder (tests); overrides `encoder`'s default model.
        sandbox: A ready sandbox (tests); default a private one.

    Returns:
        The `Result`; ``details["source"]`` holds the path (and sheet) for display.

    Raises:
        RagSourceError: unreadable source, unknown or ambiguous table id, bad cache path.
        ValueError: an invalid option (budget < 1, unknown encoder or baseline, ...).
    """
    config = RagConfig(
        budget=budget, top_k=top_k, encoder=encoder, sc=sc, baseline=baseline, max_steps=max_steps
    )
    src = open_rag_source(source, table_id)
    store_for_cache = src.store
    own_cache = False
    if cache is not None:
        store_for_cache, own_cache = _cache_store(cache)
    enc = encoder_impl
    if enc is None and encoder == "api":
        enc = make_encoder("api", url=embed_url, model=embed_model, api_key=api_key)
    trace = trace or Trace.for_query(trace_dir)
    try:
        method = TableRAG(
            llm, config, usage=usage, encoder=enc, store=store_for_cache, sandbox=sandbox
        )
        try:
            result = method.answer(
                question, src.table, task=task, trace=trace, table_id=src.table_id
            )
        finally:
            method.close()
    finally:
        if own_cache and store_for_cache is not None:
            store_for_cache.close()
        src.close()
    table = src.table
    result.details["source"] = {"path": table.source.path, "sheet": table.source.sheet}
    return result


def rag_preview(
    source: str | Path | Store,
    table_id: str | None,
    question: str,
    *,
    budget: int = 10_000,
    top_k: int = 5,
    encoder: EncoderKind = "minilm",
    embed_url: str | None = None,
    embed_model: str | None = None,
    api_key: str | None = None,
    cache: str | Path | Store | None = None,
    trace: Trace | None = None,
    trace_dir: str | Path | None = None,
    encoder_impl: Encoder | None = None,
) -> dict[str, Any]:
    """The LLM-free part of TableRAG: databases and retrieval with the question's keywords.

    Schema and cell queries are the question's content words (numbers dropped from the cell
    queries, as the official expansion does), since query expansion needs the LLM.

    Returns:
        The ``ask --json`` payload with status "failed", reason "no LLM configured" and
        ``retrieval`` (queries, retrieved schema entries and cell pairs) and ``databases``.

    Raises:
        RagSourceError: as `run_rag`.
        ValueError: an invalid option.
    """
    config = RagConfig(budget=budget, top_k=top_k, encoder=encoder)
    src = open_rag_source(source, table_id)
    store_for_cache = src.store
    own_cache = False
    if cache is not None:
        store_for_cache, own_cache = _cache_store(cache)
    enc = encoder_impl
    if enc is None and encoder == "api":
        enc = make_encoder("api", url=embed_url, model=embed_model, api_key=api_key)
    trace = trace or Trace.for_query(trace_dir)
    words = keywords(question) or [question.strip()]
    schema_queries = words[: config.max_queries]
    cell_queries = [w for w in words if not is_numeric(w)][: config.max_queries]
    trace.event(
        "fallback",
        stage="ask",
        reason="no LLM configured; schema and cell retrieval with the question's keywords",
    )
    try:
        with TableRAG(None, config, encoder=enc, store=store_for_cache) as rag:
            prepared = rag.prepare(src.table, trace=trace)
            found = rag.retrieve(prepared, schema_queries, cell_queries, trace=trace)
    finally:
        if own_cache and store_for_cache is not None:
            store_for_cache.close()
        src.close()
    table = src.table
    result = Result(
        answer=None,
        status="failed",
        tables_consulted=[src.table_id],
        trace_path=str(trace.path) if trace.path else None,
        details={
            "reason": "no LLM configured",
            "config": config.name,
            "source": {"path": table.source.path, "sheet": table.source.sheet},
        },
    )
    payload = rag_payload(result)
    payload["retrieval"] = {
        "encoder": prepared.encoder_kind,
        "cache_hits": prepared.cache_hits,
        "schema_queries": schema_queries,
        "cell_queries": cell_queries,
        "columns": [
            {"column": c.name, "score": round(score, 4), "query": q, "schema": c.doc}
            for c, score, q in found.columns
        ],
        "cells": [
            {
                "column": e.column,
                "value": e.value,
                "count": e.count,
                "score": round(score, 4),
                "query": q,
            }
            for e, score, q in found.cells
        ],
    }
    payload["databases"] = {
        "shape": [table.n_rows, table.n_cols],
        "columns": len(prepared.schema.columns),
        "distinct_pairs": prepared.cells.n_distinct,
        "kept_pairs": len(prepared.cells),
        "budget": budget,
        "seconds": {k: round(v, 4) for k, v in prepared.seconds.items()},
    }
    trace.event("decision", stage="end", status="failed", answer=None, reason="no LLM configured")
    return payload


def rag_payload(result: Result) -> dict[str, Any]:
    """The ``ask --json`` payload of a TableRAG result."""
    src = result.details.get("source") or {}
    shown = src.get("path")
    if shown and src.get("sheet"):
        shown = f"{shown}#{src['sheet']}"

    def ref(tid: str) -> dict[str, Any]:
        return {"table_id": tid, "source": shown}

    usage = result.usage
    return {
        "answer": result.answer,
        "status": result.status,
        "reason": result.details.get("reason"),
        "tables_consulted": [ref(t) for t in result.tables_consulted],
        "final_table": ref(result.final_table) if result.final_table else None,
        "evidence": [
            {"table_id": c.table_id, "row": c.row, "col": c.col, "value": c.value}
            for c in result.evidence
        ],
        "steps": result.steps,
        "config": result.details.get("config"),
        "databases": result.details.get("databases"),
        "votes": result.details.get("votes", {}),
        "samples": [
            {
                k: s.get(k)
                for k in (
                    "answer",
                    "status",
                    "n_iter",
                    "schema_queries",
                    "cell_queries",
                    "retrieved_columns",
                    "retrieved_cells",
                    "reason",
                )
            }
            for s in result.details.get("samples", [])
        ],
        "usage": {
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "seconds": round(usage.seconds, 3),
            "cache_hits": usage.cache_hits,
            "cost": usage.cost,
        },
        "trace": result.trace_path,
    }
