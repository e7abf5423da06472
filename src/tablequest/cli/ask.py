"""`tablequest ask SOURCE "question"`: answer with an agent and show the evidence.

SOURCE is a store (DuckDB file) or a table file / folder, which is ingested into an
in-memory store first. Without a configured model the LLM-free part runs (search and
previews) and one line says how to connect a model.

``--method rag`` (TableRAG, one large table) reads a table file directly, or one table of a
store (``--table-id``); its options and output are in `cli/rag_command.py`. ``--top-k`` and
``--encoder`` depend on the method: K = 5 and minilm | bm25 | hybrid | api for rag; 1 table and
minilm | hash for the retrieval baselines.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table as RichTable
from rich.text import Text

from tablequest.cli.corpus import console, err_console, hit_json, search, show_hits
from tablequest.corpus import Store, StoreError, ingest
from tablequest.llm.base import LLM, LLMError
from tablequest.llm.config import NOT_CONFIGURED_HINT, ConfigError, build_llm, resolve_config
from tablequest.llm.usage import UsageMeter
from tablequest.methods.base import Result, Task
from tablequest.trace import Trace

METHODS = ("seek", "direct", "dense", "rerank", "bm25", "rag")
TABLE_ENCODERS = ("minilm", "hash")


def is_store_file(path: Path) -> bool:
    """DuckDB files carry the magic "DUCK" at byte 8."""
    try:
        with path.open("rb") as fh:
            return fh.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


def open_source(source: Path) -> Store:
    """A store file as is; any other file or folder ingested into memory."""
    if source.is_file() and is_store_file(source):
        return Store(source)
    if not source.exists():
        raise StoreError(f"no store, table file or folder at {str(source)!r}")
    store = Store()
    report = ingest(store, [source])
    if not report.ok:
        reasons = "; ".join(f"{f.path}: {f.reason}" for f in report.files_failed[:3])
        raise StoreError(f"no table could be read from {str(source)!r} ({reasons})")
    return store


def ask_command(
    source: Annotated[Path, typer.Argument(metavar="SOURCE", help="Store, table file or folder.")],
    question: Annotated[str, typer.Argument(help="The question (or claim, with --task fact).")],
    method: Annotated[
        str, typer.Option(help="seek | direct | dense | rerank | bm25 | rag (TableRAG).")
    ] = "seek",
    task: Annotated[str, typer.Option(help="tableqa | fact")] = "tableqa",
    steps: Annotated[
        int, typer.Option(help="TableSeek step budget S_max (5 or 10); rag: ReAct steps.")
    ] = 5,
    strategy: Annotated[str, typer.Option(help="5s1 5s3 10s1 10s3 10s5 r3 r5 r10")] = "5s1",
    evidence: Annotated[str, typer.Option(help="small | medium | big | full")] = "small",
    no_refine: Annotated[bool, typer.Option("--no-refine")] = False,
    no_fallback: Annotated[bool, typer.Option("--no-fallback")] = False,
    no_select: Annotated[bool, typer.Option("--no-select")] = False,
    no_regenerate: Annotated[bool, typer.Option("--no-regenerate")] = False,
    match_only: Annotated[bool, typer.Option("--match-only")] = False,
    match_only_qa: Annotated[bool, typer.Option("--match-only-qa")] = False,
    table_id: Annotated[
        list[str] | None,
        typer.Option(
            "--table-id",
            help="Tables for --method direct; rag: the table of a store or multi-table file.",
        ),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(
            help="Retrieval baselines: tables given to QA (default 1); rag: K results per "
            "query (default 5)."
        ),
    ] = None,
    encoder: Annotated[
        str | None,
        typer.Option(
            help="dense/rerank: minilm | hash (default minilm); rag: minilm | bm25 | hybrid "
            "| api (default minilm)."
        ),
    ] = None,
    budget: Annotated[int, typer.Option(help="rag: cell encoding budget B.")] = 10_000,
    sc: Annotated[
        int, typer.Option("--sc", help="rag: self-consistency samples (majority vote).")
    ] = 1,
    baseline: Annotated[
        str | None,
        typer.Option(help="rag: read-table | read-schema | rand-rows | rowcol (same solver)."),
    ] = None,
    embed_url: Annotated[
        str | None,
        typer.Option(help="rag --encoder api: /v1/embeddings server (default --llm-url)."),
    ] = None,
    embed_model: Annotated[
        str | None, typer.Option(help="rag --encoder api: embedding model name.")
    ] = None,
    rerank_url: Annotated[str | None, typer.Option(help="Server with /v1/rerank.")] = None,
    rerank_model: Annotated[str | None, typer.Option(help="Reranker model name.")] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible URL.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="API key.")] = None,
    llm: Annotated[str | None, typer.Option("--llm", help="gguf:/path/model.gguf")] = None,
    no_cache: Annotated[
        bool,
        typer.Option("--no-cache", help="Do not use the LLM cache (rag: nor the embedding cache)."),
    ] = False,
    trace_dir: Annotated[Path | None, typer.Option(help="Where the JSONL trace goes.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Answer QUESTION from SOURCE and show the evidence, tables consulted and trace."""
    if method not in METHODS:
        _fail(f"unknown --method {method!r}; one of {', '.join(METHODS)}")
    if method != "rag" and encoder is not None and encoder not in TABLE_ENCODERS:
        _fail(f"unknown --encoder {encoder!r} for --method {method}; one of minilm, hash")
    task_name: Task = "fact_verification" if task in ("fact", "fact_verification") else "tableqa"
    try:
        config = resolve_config(
            url=llm_url, model=model, api_key=api_key, cache=False if no_cache else None
        )
        model_llm = build_llm(config, llm_spec=llm)
    except (ConfigError, LLMError) as exc:
        _fail(str(exc))
    if method == "rag":
        from tablequest.cli.rag_command import RagOptions, ask_rag

        ids = table_id or []
        if len(ids) > 1:
            _fail("--method rag answers from one table: pass --table-id once")
        rag_options = RagOptions(
            table_id=ids[0] if ids else None,
            budget=budget,
            top_k=5 if top_k is None else top_k,
            encoder=encoder or "minilm",
            sc=sc,
            baseline=baseline,
            max_steps=steps,
            embed_url=embed_url or config.url,
            embed_model=embed_model,
            api_key=config.api_key,
            cache=not no_cache,
        )
        ask_rag(
            source,
            question,
            task=task_name,
            llm=model_llm,
            options=rag_options,
            trace_dir=trace_dir,
            json_out=json_out,
        )
        return
    try:
        store = open_source(source)
    except StoreError as exc:
        _fail(str(exc))
    trace = Trace.for_query(trace_dir)
    with store:
        if model_llm is None:
            _llm_free(store, question, trace, json_out)
            return
        options = dict(
            steps=steps,
            strategy=strategy,
            evidence=evidence,
            refine=not no_refine,
            fallback=not no_fallback,
            select=not no_select,
            regenerate=not no_regenerate,
            match_only=match_only,
            match_only_qa=match_only_qa,
            table_ids=table_id or [],
            top_k=1 if top_k is None else top_k,
            encoder=encoder or "minilm",
            rerank_url=rerank_url,
            rerank_model=rerank_model,
            api_key=api_key,
        )
        try:
            result = run_method(method, model_llm, store, question, task_name, trace, options)
        except (ValueError, LLMError) as exc:
            _fail(str(exc))
        except Exception as exc:  # never a traceback: record it and report a failed run
            trace.event(
                "error",
                stage="ask",
                error=type(exc).__name__,
                message=str(exc),
                traceback=traceback.format_exc(limit=8),
            )
            result = Result(
                answer=None,
                status="failed",
                trace_path=str(trace.path),
                details={"error": f"{type(exc).__name__}: {exc}"},
            )
        finally:
            model_llm.close()
        if json_out:
            print(json.dumps(result_json(store, result, trace), ensure_ascii=False))
        else:
            show_result(store, result, trace)


def run_method(
    method: str,
    llm: LLM,
    store: Store,
    question: str,
    task: Task,
    trace: Trace,
    options: dict[str, Any],
) -> Result:
    """Build the chosen method and run it (one library call)."""
    from tablequest.methods.direct import DirectQA, RetrieveThenQA
    from tablequest.methods.seek import SeekConfig, TableSeek

    usage = UsageMeter()
    if method == "seek":
        config = SeekConfig.named(
            f"{options['steps']}step-{options['strategy']}-{options['evidence']}",
            refine=options["refine"],
            fallback=options["fallback"],
            select=options["select"],
            regenerate=options["regenerate"],
            match_only=options["match_only"],
            match_only_qa=options["match_only_qa"],
        )
        return TableSeek(llm, config, usage=usage).answer(question, store, task=task, trace=trace)
    if method == "direct":
        ids = options["table_ids"]
        if not ids:
            raise ValueError("--method direct needs --table-id ID (the tables to answer from)")
        unknown = [i for i in ids if i not in set(store.table_ids())]
        if unknown:
            raise ValueError(f"unknown --table-id {unknown}; `tablequest search` shows ids")
        return DirectQA(llm, usage=usage).answer(
            question, store, task=task, table_ids=ids, trace=trace
        )
    retriever = _retriever(method, options)
    pipeline = RetrieveThenQA(llm, retriever, name=method, top_k=options["top_k"], usage=usage)
    return pipeline.answer(question, store, task=task, trace=trace)


def _retriever(method: str, options: dict[str, Any]) -> Any:
    from tablequest.corpus.dense import HashEncoder, MiniLMEncoder, dense_rank
    from tablequest.corpus.rank import bm25_rank
    from tablequest.corpus.rerank import APIReranker, rerank_rank

    if method == "bm25":
        return lambda st, q, k: bm25_rank(st, q, k, rows=False)
    encoder = HashEncoder() if options["encoder"] == "hash" else MiniLMEncoder()
    if method == "dense":
        return lambda st, q, k: dense_rank(st, q, k, encoder)
    if not options["rerank_url"] or not options["rerank_model"]:
        raise ValueError("--method rerank needs --rerank-url URL --rerank-model NAME")
    reranker = APIReranker(
        options["rerank_url"], options["rerank_model"], api_key=options["api_key"]
    )
    return lambda st, q, k: rerank_rank(st, q, k, encoder=encoder, reranker=reranker)


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _llm_free(store: Store, question: str, trace: Trace, json_out: bool) -> None:
    hits = search(store, question, k=5)
    trace.event(
        "rank", method="grep", hits=[{"table_id": h.table_id, "score": h.score} for h in hits]
    )
    trace.event("fallback", stage="ask", reason="no LLM configured; LLM-free search only")
    if json_out:
        payload = result_json(store, Result(answer=None, status="failed"), trace)
        payload["reason"] = "no LLM configured"
        payload["candidates"] = [hit_json(store, h) for h in hits]
        print(json.dumps(payload, ensure_ascii=False))
        print(NOT_CONFIGURED_HINT, file=sys.stderr)
        return
    show_hits(store, question, hits)
    console.print(f"[bold yellow]{NOT_CONFIGURED_HINT}[/bold yellow]", soft_wrap=True)
    console.print(f"trace: {trace.path}")


def result_json(store: Store, result: Result, trace: Trace) -> dict[str, Any]:
    """The `ask --json` payload."""

    def source(tid: str) -> str | None:
        src = store.source(tid)
        return src.path if src.sheet is None else f"{src.path}#{src.sheet}"

    usage = result.usage
    return {
        "answer": result.answer,
        "status": result.status,
        "tables_consulted": [{"table_id": t, "source": source(t)} for t in result.tables_consulted],
        "final_table": (
            {"table_id": result.final_table, "source": source(result.final_table)}
            if result.final_table
            else None
        ),
        "evidence": [
            {"table_id": c.table_id, "row": c.row, "col": c.col, "value": c.value}
            for c in result.evidence
        ],
        "steps": result.steps,
        "action_counts": result.details.get("action_counts", {}),
        "usage": {
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "seconds": round(usage.seconds, 3),
            "cache_hits": usage.cache_hits,
            "cost": usage.cost,
        },
        "trace": str(trace.path) if trace.path else None,
    }


def show_result(store: Store, result: Result, trace: Trace) -> None:
    """Answer, the evidence table with supporting cells, tables consulted, usage, trace."""
    colour = {"answered": "green", "insufficient": "yellow", "failed": "red"}[result.status]
    console.print(
        Panel(
            Text(result.answer or "(no answer)", style="bold"),
            title=f"answer · [{colour}]{result.status}[/{colour}]",
            title_align="left",
            expand=False,
        )
    )
    if result.final_table:
        console.print(evidence_view(store, result))
    data = result_json(store, result, trace)
    for i, t in enumerate(data["tables_consulted"], start=1):
        console.print(f"  consulted {i}: {t['source']}  [dim]({t['table_id']})[/dim]")
    u = data["usage"]
    console.print(
        f"  usage: {u['calls']} calls, {u['prompt_tokens']}+{u['completion_tokens']} "
        f"tokens, {u['seconds']} s, {u['cache_hits']} cache hits"
    )
    console.print(f"  trace: {data['trace']}")


def evidence_view(store: Store, result: Result, max_rows: int = 12) -> RichTable:
    """The final table around its evidence rows, supporting cells highlighted."""
    assert result.final_table is not None
    table = store.get(result.final_table)
    cited = {(c.row, c.col) for c in result.evidence if c.table_id == result.final_table}
    rows = sorted({r for r, _ in cited}) or list(table.row_ids[:max_rows])
    src = store.source(result.final_table)
    view = RichTable(title=f"evidence · {src.path}", title_justify="left", show_lines=False)
    view.add_column("row", style="dim")
    for name in table.columns:
        view.add_column(name)
    positions = {rid: i for i, rid in enumerate(table.row_ids)}
    for rid in rows[:max_rows]:
        cells = table.body[positions[rid]]
        view.add_row(
            str(rid),
            *[
                Text(v, style="bold black on yellow" if (rid, table.col_ids[j]) in cited else "")
                for j, v in enumerate(cells)
            ],
        )
    return view
