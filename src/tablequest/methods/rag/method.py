"""TableRAG, Algorithm 1 of arXiv:2410.04739, and its baselines (§4.2).

    schema_db ← BuildSchemaDB(T, f_enc); cell_db ← BuildCellDB(T, B, f_enc)
    Q_schema, Q_cell ← TabularQueryExpansion(L, q)
    R_schema ← MultiQueryRetrieve(f_enc, Q_schema, K, schema_db)
    R_cell ← MultiQueryRetrieve(f_enc, Q_cell, K, cell_db)
    Â ← ProgramAidedSolver(L, q, T, R_schema, R_cell)

Self-consistency (official ``--sc N``): the whole pipeline — expansion, retrieval, solver — runs
N times at the sampling temperature, each in a fresh sandbox session (started at the sample's
first action: a sample answered without code starts none), and the answers are
majority-voted (`solver.majority_vote`). The databases are built once per table and their
embeddings cached in the store (`retrieval.encode_cached`).

Database embeddings are cached (`encode_cached`) in the store given at construction, else in
the cache file `embedding_cache_path(context.cache_dir)` (when caches are allowed; a locked
file means this run encodes in memory, recorded), keyed by the table's content hash: any
source — a table file, a store table, a benchmark's gold table — reuses them.

Choices (ours, the paper is silent): the caption shown to the model is the table's title
(never its file name); the result's evidence and verdict are `rag.evidence`'s (the lineage of
the code that computed the answer, checked against the table); status is "answered" when a
sample reached a Final Answer, "failed" when every sample stopped on an LLM error, the
context budget, a reply with neither an Action nor a Final Answer ("the model's reply had no
answer in the expected format", `solver`), a baseline refusal or an unavailable sandbox, else
"insufficient" (no Final Answer within the step limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from tablequest.corpus import Encoder, EncoderUnavailable, Store, StoreError, make_encoder
from tablequest.llm import (
    LLM,
    ModelUnreachable,
    StepBudget,
    UsageMeter,
    default_cache_dir,
    estimate_tokens,
)
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.query import Query, start_query
from tablequest.methods.rag import baselines
from tablequest.methods.rag.config import RagConfig
from tablequest.methods.rag.evidence import rag_evidence
from tablequest.methods.rag.expansion import Expansion, expand, question_queries
from tablequest.methods.rag.prepared import (
    PreparedTable,
    Retrieval,
    attach_retrievers,
    prepare_table,
    retrieval_kind,
    retrieve,
)
from tablequest.methods.rag.prompts import rag_solver_prompt, table_solver_prompt
from tablequest.methods.rag.solver import (
    LazySession,
    SandboxStartFailed,
    SolveOutcome,
    solve,
    voted_result,
)
from tablequest.methods.result import Result
from tablequest.sandbox import Sandbox, SandboxError
from tablequest.table import Table
from tablequest.trace import Trace

EMBEDDING_CACHE_FILE = "rag_embeddings.duckdb"
ANSWER_SEPARATORS = (", ",)
"""How a TableRAG answer lists items: the paper's prompt asks for "Final Answer: Answer1,
Answer2, ..."."""


def embedding_cache_path(cache_dir: str | Path | None = None) -> Path:
    """Where database embeddings are kept across runs (next to the LLM cache)."""
    return Path(cache_dir or default_cache_dir()) / EMBEDDING_CACHE_FILE


class TableRAG:
    """TableRAG over one (large) table, or one of its baselines with the same solver.

    Args:
        options: `RagConfig` (the paper's defaults when None).
        context: The method context: the model (None only for LLM-free retrieval with
            `retrieve` / `preview`), its server for the ``auto``/``api`` encoders, caches;
            default: no model and no on-disk cache (``MethodContext(cache=False)``).
        encoder: A ready dense encoder (tests); default: `config.encoder` from the registry.
        store: Where database embeddings are cached (default: the cache file when
            `context.cache`, else a private in-memory store).
        sandbox: Where actions run (default: the context's, else a private `Sandbox()`).
    """

    name = "rag"

    def __init__(
        self,
        options: RagConfig | None = None,
        context: MethodContext | None = None,
        *,
        encoder: Encoder | None = None,
        store: Store | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.config = options or RagConfig()
        self.context = context or MethodContext(cache=False)
        self._encoder = encoder
        self._encoder_ready = encoder is not None
        self.notes: dict[str, str] = {}  # stage → why a resource fell back (traced)
        self._store = store
        self._own_store: Store | None = None
        self._sandbox = sandbox or self.context.sandbox
        self._own_sandbox: Sandbox | None = None
        self._prepared: PreparedTable | None = None

    @property
    def llm(self) -> LLM | None:
        return self.context.llm

    @property
    def usage(self) -> UsageMeter:
        return self.context.usage

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Stop the private sandbox and close the private store."""
        if self._own_sandbox is not None:
            self._own_sandbox.close()
            self._own_sandbox = None
        if self._own_store is not None:
            self._own_store.close()
            self._own_store = None

    def __enter__(self) -> TableRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- resources ---------------------------------------------------------------------
    @property
    def encoder(self) -> Encoder | None:
        """The dense encoder `config.encoder` names (None: BM25), resolved once."""
        if not self._encoder_ready:
            self._encoder_ready = True
            cfg = self.config
            settings = self.context.encoder_settings(cfg.embed_url, cfg.embed_model)
            try:
                self._encoder = make_encoder(cfg.encoder, settings)
            except EncoderUnavailable as exc:
                self.notes["encoder"] = f"encoder {cfg.encoder!r} unavailable ({exc}); BM25 instead"
        return self._encoder

    @property
    def store(self) -> Store:
        """Where database embeddings are cached (see the class docstring)."""
        if self._store is None:
            self._store = self._open_cache()
        return self._store

    def _open_cache(self) -> Store:
        if self.context.cache:
            path = embedding_cache_path(self.context.cache_dir)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._own_store = Store(path)
                return self._own_store
            except (OSError, StoreError, duckdb.Error) as exc:
                self.notes["embedding_cache"] = f"unavailable ({exc}); encoding in memory"
        self._own_store = Store()
        return self._own_store

    def _sandbox_for(self) -> Sandbox:
        if self._sandbox is None:
            self._own_sandbox = self._sandbox = self.context.new_sandbox()
        return self._sandbox

    # -- databases ---------------------------------------------------------------------
    def prepare(
        self,
        table: Table,
        *,
        trace: Trace | None = None,
        store: Store | None = None,
        table_id: str | None = None,
    ) -> PreparedTable:
        """Build (or reuse, for the same content) the schema and cell databases of `table`;
        with the corpus `store` holding `table_id`, with SQL over its relation (the same
        databases, `rag.relation_db`)."""
        content_hash = table.content_hash
        if self._prepared is not None and self._prepared.content_hash == content_hash:
            return self._prepared
        self._prepared = prepare_table(
            table, self.config, trace=trace, store=store, table_id=table_id,
            content_hash=content_hash,
        )  # fmt: skip
        return self._prepared

    def retrieve(
        self,
        prepared: PreparedTable,
        schema_queries: list[str],
        cell_queries: list[str],
        *,
        trace: Trace | None = None,
    ) -> Retrieval:
        """Multi-query schema and cell retrieval (LLM-free; used by benchmarks too)."""
        store, encoder = self.store, self.encoder
        if trace is not None:
            for stage, reason in self.notes.items():
                trace.event("fallback", stage=stage, reason=reason)
        attach_retrievers(prepared, self.config, encoder=encoder, store=store,
                          trace=trace)  # fmt: skip
        return retrieve(prepared, self.config, schema_queries, cell_queries, trace=trace)

    # -- answering ---------------------------------------------------------------------
    def answer(
        self,
        question: str,
        source: TableSet | Table,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
        table_id: str | None = None,
    ) -> Result:
        """Answer `question` from the one table of `source` (a `TableSet`, or a `Table`)."""
        if self.llm is None:
            raise ValueError("TableRAG.answer needs an LLM; preview() works without one")
        corpus: Store | None = None
        if isinstance(source, TableSet):
            table_id, table = source.one(self.name)
            corpus = source.store_of(table_id)
        else:
            table = source
        cfg = self.config
        query = start_query(
            self.context, budget=budget, trace=trace, default_steps=cfg.default_steps()
        )
        trace = query.trace
        trace.event(
            "decision", stage="start", method="rag", config=cfg.name, baseline=cfg.baseline,
            encoder=cfg.encoder, sc=cfg.sc, task=task, question=question,
            shape=[table.n_rows, table.n_cols], steps=query.budget.max_steps,
        )  # fmt: skip
        details: dict[str, Any] = {"config": cfg.name, "baseline": cfg.baseline, "samples": []}
        prepared = self.prepare(table, trace=trace, store=corpus, table_id=table_id)
        details["databases"] = _databases(table, prepared, cfg.budget)
        context: baselines.BaselineContext | None = None
        if cfg.baseline is not None:
            context = self._baseline_context(prepared, question)
            details["baseline_context"] = {
                "rows": len(context.rows),
                "columns": context.columns,
                **context.details,
            }
            if context.text is None:
                trace.event("fallback", stage="baseline", reason=context.reason)
                failed = Result(answer=None, status="failed", details={"reason": context.reason})
                return self._finish(query, details, failed, table_id)
        outcomes: list[SolveOutcome] = []
        try:
            for sample in range(cfg.sc):
                outcomes.append(
                    self._sample(query, prepared, question, task, context, details, sample)
                )
        except (SandboxError, SandboxStartFailed) as exc:
            reason = f"sandbox unavailable: {exc}"
            trace.event("error", stage="sandbox", reason=reason)
            failed = Result(answer=None, status="failed", details={"reason": reason})
            return self._finish(query, details, failed, table_id)
        except ModelUnreachable as exc:  # Query.finish records it as the question's end
            failed = Result(answer=None, status="failed", details={"reason": str(exc)})
            return self._finish(query, details, failed, table_id)
        retrieved = [c for s in details["samples"] for c in s.get("retrieved_cells", [])]
        voted = voted_result(
            outcomes,
            evidence=lambda answer, agreeing: rag_evidence(
                answer, agreeing, prepared, table_id or "", retrieved
            ),
            max_depth=self.config.max_depth,
            trace=trace,
        )
        return self._finish(query, details, voted, table_id)

    def _baseline_context(
        self, prepared: PreparedTable, question: str
    ) -> baselines.BaselineContext:
        cfg, table = self.config, prepared.table
        if cfg.baseline == "read-table":
            return baselines.read_table(table, context_tokens=cfg.context_tokens)
        if cfg.baseline == "read-schema":
            return baselines.read_schema(prepared.frame)
        if cfg.baseline == "rand-rows":
            return baselines.rand_rows(
                table, k=cfg.baseline_k, seed=cfg.seed, context_tokens=cfg.context_tokens
            )
        encoder = self.encoder
        kind = retrieval_kind(cfg, encoder)
        try:
            return baselines.rowcol(
                table,
                question,
                k=cfg.baseline_k,
                budget=cfg.budget,
                kind=kind,
                encoder=encoder,
                store=self.store,
                content_hash=prepared.content_hash,
                weight=cfg.hybrid_weight,
            )
        except EncoderUnavailable:
            return baselines.rowcol(
                table,
                question,
                k=cfg.baseline_k,
                budget=cfg.budget,
                kind="bm25",
                encoder=None,
                store=None,
                content_hash=prepared.content_hash,
            )

    def _rag_prompt(
        self,
        query: Query,
        prepared: PreparedTable,
        question: str,
        task: Task,
        record: dict[str, Any],
    ) -> str:
        """Expand the question, retrieve schema and cells, and build the solver prompt
        (what was asked and found goes into `record`)."""
        cfg = self.config
        llm, trace = query.llm, query.trace
        assert llm is not None
        caption = prepared.table.title
        expansion: Expansion = (
            expand(
                llm,
                question,
                caption=caption,
                trace=trace,
                task=task,
                temperature=cfg.sampling_temperature,
                max_tokens=cfg.step_max_tokens,
                max_queries=cfg.max_queries,
            )
            if cfg.expansion
            else question_queries(question)
        )
        query.stop_if_unreachable()  # no encoding for a solver that cannot be asked
        found = self.retrieve(
            prepared, expansion.schema_queries, expansion.cell_queries, trace=trace
        )
        record.update(
            schema_queries=expansion.schema_queries,
            cell_queries=expansion.cell_queries,
            query_sources=[expansion.schema_source, expansion.cell_source],
            retrieved_columns=[c.name for c, _, _ in found.columns],
            retrieved_cells=[[e.column, e.value] for e, _, _ in found.cells],
        )
        return rag_solver_prompt(
            question,
            caption,
            [c.doc for c, _, _ in found.columns],
            expansion.cell_queries if cfg.cell_mode == "retrieval" else None,
            found.cell_lines(cfg.max_cell_chars),
            task,
        )

    def _sample(
        self,
        query: Query,
        prepared: PreparedTable,
        question: str,
        task: Task,
        context: baselines.BaselineContext | None,
        details: dict[str, Any],
        sample: int,
    ) -> SolveOutcome:
        cfg = self.config
        llm, trace = query.llm, query.trace
        assert llm is not None
        caption = prepared.table.title
        temperature = cfg.sampling_temperature
        record: dict[str, Any] = {"sample": sample}
        if context is not None and context.text is not None:
            prompt = table_solver_prompt(question, caption, context.text, task)
        else:
            prompt = self._rag_prompt(query, prepared, question, task, record)
        record["solver_prompt_tokens"] = estimate_tokens(prompt + "Thought: ")
        details.setdefault("solver_prompt_tokens", record["solver_prompt_tokens"])
        session = LazySession(lambda: self._sandbox_for().session({"df": prepared.frame}))
        try:
            outcome = solve(
                llm,
                session,
                prompt,
                trace=trace,
                max_steps=cfg.max_depth,
                temperature=temperature,
                max_tokens=cfg.step_max_tokens,
                context_tokens=cfg.context_tokens,
                timeout=cfg.action_timeout,
                max_observation_chars=cfg.max_observation_chars,
            )
        finally:
            session.close()
        record.update(
            answer=outcome.answer,
            status=outcome.status,
            n_iter=outcome.n_iter,
            reason=outcome.reason,
            actions=outcome.actions,
        )
        details["samples"].append(record)
        trace.event(
            "qa",
            sample=sample,
            status=outcome.status,
            answer=outcome.answer,
            n_iter=outcome.n_iter,
            reason=outcome.reason,
        )
        return outcome

    def _finish(
        self, query: Query, details: dict[str, Any], result: Result, table_id: str | None
    ) -> Result:
        if table_id:
            result.tables_consulted = [table_id]
            result.final_table = table_id
        if self._prepared is not None and "databases" in details:  # now with encode time
            seconds = self._prepared.seconds
            details["databases"]["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
        details["encoder"] = self._encoder_label()
        result.details = {**details, **result.details}
        query.finish(result, self.name, ANSWER_SEPARATORS)
        query.trace.event(
            "decision",
            stage="end",
            status=result.status,
            answer=result.answer,
            steps=result.steps,
            reason=result.details.get("reason"),
        )
        return result

    def _encoder_label(self) -> str:
        encoder = self._encoder if self._encoder_ready else None
        return "bm25" if encoder is None else encoder.name

    # -- without a model ---------------------------------------------------------------
    def preview(
        self,
        question: str,
        source: TableSet,
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
    ) -> Result:
        """The LLM-free part: databases, and retrieval with the question's keywords.

        Schema and cell queries are the question's content words (numbers dropped from the
        cell queries, as the official expansion does), since query expansion needs the LLM.
        The Result is "failed" (reason "no LLM configured") with ``details["retrieval"]``
        (queries, retrieved schema entries and cell pairs) and ``details["databases"]``.
        """
        from tablequest.methods.rag.expansion import is_numeric, keywords

        table_id, table = source.one(self.name)
        cfg = self.config
        trace = trace or Trace.in_memory()
        words = keywords(question) or [question.strip()]
        schema_queries = words[: cfg.max_queries]
        cell_queries = [w for w in words if not is_numeric(w)][: cfg.max_queries]
        trace.event(
            "fallback",
            stage="ask",
            reason="no LLM configured; schema and cell retrieval with the question's keywords",
        )
        prepared = self.prepare(table, trace=trace, store=source.store_of(table_id),
                                table_id=table_id)  # fmt: skip
        found = self.retrieve(prepared, schema_queries, cell_queries, trace=trace)
        retrieval = {
            "encoder": self._encoder_label(),
            "cache_hits": prepared.cache_hits,
            "schema_queries": schema_queries,
            "cell_queries": cell_queries,
            "columns": [
                {"column": c.name, "score": round(score, 4), "query": q, "schema": c.doc}
                for c, score, q in found.columns
            ],
            "cells": [
                {"column": e.column, "value": e.value, "count": e.count,
                 "score": round(score, 4), "query": q}
                for e, score, q in found.cells
            ],
        }  # fmt: skip
        databases = _databases(table, prepared, cfg.budget)
        trace.event("decision", stage="end", status="failed", reason="no LLM configured")
        return Result(
            answer=None,
            status="failed",
            tables_consulted=[table_id],
            trace_path=str(trace.path) if trace.path else None,
            method=self.name,
            details={
                "reason": "no LLM configured",
                "config": cfg.name,
                "retrieval": retrieval,
                "databases": databases,
            },
        )


def _databases(table: Table, prepared: PreparedTable, budget: int) -> dict[str, Any]:
    """What ``details["databases"]`` says of the schema and cell databases of `table`."""
    return {
        "shape": [table.n_rows, table.n_cols],
        "columns": len(prepared.schema.columns),
        "distinct_pairs": prepared.cells.n_distinct,
        "kept_pairs": len(prepared.cells),
        "budget": budget,
        "seconds": {k: round(v, 4) for k, v in prepared.seconds.items()},
    }
