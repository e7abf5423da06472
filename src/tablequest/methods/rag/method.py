"""TableRAG, Algorithm 1 of papers/tablerag.txt (SEEDS.md §2), and its baselines (§4.2).

    schema_db ← BuildSchemaDB(T, f_enc); cell_db ← BuildCellDB(T, B, f_enc)
    Q_schema, Q_cell ← TabularQueryExpansion(L, q)
    R_schema ← MultiQueryRetrieve(f_enc, Q_schema, K, schema_db)
    R_cell ← MultiQueryRetrieve(f_enc, Q_cell, K, cell_db)
    Â ← ProgramAidedSolver(L, q, T, R_schema, R_cell)

Self-consistency (official ``--sc N``): the whole pipeline — expansion, retrieval, solver — runs
N times at the sampling temperature, each in a fresh sandbox session, and the answers are
majority-voted (`solver.majority_vote`). The databases are built once per table and their
embeddings cached in the store (`retrieval.encode_cached`).

Choices (ours, the paper is silent): the caption shown to the model is the table's title
(never its file name); the result's evidence is `prepared.locate`'s; status is "answered" when a
sample reached a Final Answer, "failed" when every sample stopped on an LLM error, the
context budget, a baseline refusal or an unavailable sandbox, else "insufficient" (no Final
Answer within the step limit).
"""

from __future__ import annotations

import time
from typing import Any

from tablequest.corpus.dense import Encoder, EncoderUnavailable
from tablequest.corpus.store import Store
from tablequest.llm.base import LLM, estimate_tokens
from tablequest.llm.instrument import Instrumented
from tablequest.llm.usage import UsageMeter
from tablequest.methods.base import Result, Status, Task
from tablequest.methods.rag import baselines
from tablequest.methods.rag.config import RagConfig
from tablequest.methods.rag.expansion import Expansion, expand, question_queries
from tablequest.methods.rag.prepared import (
    PreparedTable,
    Retrieval,
    attach_retrievers,
    locate,
    prepare_table,
    retrieve,
)
from tablequest.methods.rag.prompts import rag_solver_prompt, table_solver_prompt
from tablequest.methods.rag.retrieval import EncoderKind, make_encoder
from tablequest.methods.rag.solver import SolveOutcome, majority_vote, solve
from tablequest.sandbox import Sandbox, SandboxError
from tablequest.table import Table
from tablequest.trace import Trace


class TableRAG:
    """TableRAG over one (large) table, or one of its baselines with the same solver.

    Args:
        llm: The model (None only for LLM-free retrieval with `retrieve`).
        config: Knobs (`RagConfig`).
        usage: Meter the calls are added to.
        encoder: Dense encoder (default: MiniLM for minilm / hybrid; required for api).
        store: Where database embeddings are cached (default: a private in-memory store).
        sandbox: Where actions run (default: a private `Sandbox()`, started on first use).
    """

    name = "rag"

    def __init__(
        self,
        llm: LLM | None,
        config: RagConfig | None = None,
        *,
        usage: UsageMeter | None = None,
        encoder: Encoder | None = None,
        store: Store | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.llm = llm
        self.config = config or RagConfig()
        self.usage = usage or UsageMeter()
        kind = self.config.encoder
        if kind == "api" and encoder is None:
            raise ValueError("encoder 'api' needs an APIEncoder (embeddings URL and model)")
        self.encoder = encoder if encoder is not None else make_encoder(kind)
        self._own_store = store is None
        self.store = store if store is not None else Store()
        self._sandbox = sandbox
        self._own_sandbox = sandbox is None
        self._prepared: PreparedTable | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Stop the private sandbox and close the private store."""
        if self._own_sandbox and self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._own_store:
            self.store.close()

    def __enter__(self) -> TableRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- databases ---------------------------------------------------------------------
    def prepare(self, table: Table, *, trace: Trace | None = None) -> PreparedTable:
        """Build (or reuse, for the same content) the schema and cell databases of `table`."""
        if self._prepared is not None and self._prepared.content_hash == table.content_hash:
            return self._prepared
        self._prepared = prepare_table(table, self.config, trace=trace)
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
        attach_retrievers(prepared, self.config, encoder=self.encoder, store=self.store,
                          trace=trace)  # fmt: skip
        return retrieve(prepared, self.config, schema_queries, cell_queries, trace=trace)

    # -- answering ---------------------------------------------------------------------
    def answer(
        self,
        question: str,
        source: Table,
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
        table_id: str | None = None,
        query_id: str | None = None,
    ) -> Result:
        """Answer `question` from the table `source`."""
        if self.llm is None:
            raise ValueError("TableRAG.answer needs an LLM; retrieve() works without one")
        cfg = self.config
        trace = trace or Trace.in_memory()
        meter = self.usage.scope(query_id or f"q{time.monotonic_ns()}")
        llm = Instrumented(self.llm, trace=trace, usage=meter)
        trace.event(
            "decision",
            stage="start",
            method="rag",
            config=cfg.name,
            baseline=cfg.baseline,
            encoder=cfg.encoder,
            sc=cfg.sc,
            task=task,
            question=question,
            shape=[source.n_rows, source.n_cols],
        )
        details: dict[str, Any] = {"config": cfg.name, "baseline": cfg.baseline, "samples": []}
        prepared = self.prepare(source, trace=trace)
        details["databases"] = {
            "columns": len(prepared.schema.columns),
            "distinct_pairs": prepared.cells.n_distinct,
            "kept_pairs": len(prepared.cells),
            "budget": cfg.budget,
            "seconds": {k: round(v, 4) for k, v in prepared.seconds.items()},
        }
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
                return self._finish(
                    trace,
                    meter,
                    details,
                    Result(answer=None, status="failed", details={"reason": context.reason}),
                    table_id,
                )
        outcomes: list[SolveOutcome] = []
        try:
            for sample in range(cfg.sc):
                outcomes.append(
                    self._sample(llm, prepared, question, task, context, trace, details, sample)
                )
        except SandboxError as exc:
            reason = f"sandbox unavailable: {exc}"
            trace.event("error", stage="sandbox", reason=reason)
            return self._finish(
                trace,
                meter,
                details,
                Result(answer=None, status="failed", details={"reason": reason}),
                table_id,
            )
        return self._finish(
            trace, meter, details, self._vote(outcomes, prepared, table_id, trace), table_id
        )

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
        kind: EncoderKind = cfg.encoder
        try:
            return baselines.rowcol(
                table,
                question,
                k=cfg.baseline_k,
                budget=cfg.budget,
                kind=kind,
                encoder=self.encoder,
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

    def _sandbox_for(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def _sample(
        self,
        llm: LLM,
        prepared: PreparedTable,
        question: str,
        task: Task,
        context: baselines.BaselineContext | None,
        trace: Trace,
        details: dict[str, Any],
        sample: int,
    ) -> SolveOutcome:
        cfg = self.config
        caption = prepared.table.title
        temperature = cfg.sampling_temperature
        record: dict[str, Any] = {"sample": sample}
        if context is not None and context.text is not None:
            prompt = table_solver_prompt(question, caption, context.text, task)
        else:
            expansion: Expansion = (
                expand(
                    llm,
                    question,
                    caption=caption,
                    trace=trace,
                    task=task,
                    temperature=temperature,
                    max_tokens=cfg.step_max_tokens,
                    max_queries=cfg.max_queries,
                )
                if cfg.expansion
                else question_queries(question)
            )
            found = self.retrieve(
                prepared, expansion.schema_queries, expansion.cell_queries, trace=trace
            )
            prompt = rag_solver_prompt(
                question,
                caption,
                [c.doc for c, _, _ in found.columns],
                expansion.cell_queries if cfg.cell_mode == "retrieval" else None,
                found.cell_lines(cfg.max_cell_chars),
                task,
            )
            record.update(
                schema_queries=expansion.schema_queries,
                cell_queries=expansion.cell_queries,
                query_sources=[expansion.schema_source, expansion.cell_source],
                retrieved_columns=[c.name for c, _, _ in found.columns],
                retrieved_cells=[[e.column, e.value] for e, _, _ in found.cells],
            )
        record["solver_prompt_tokens"] = estimate_tokens(prompt + "Thought: ")
        details.setdefault("solver_prompt_tokens", record["solver_prompt_tokens"])
        with self._sandbox_for().session({"df": prepared.frame}) as session:
            outcome = solve(
                llm,
                session,
                prompt,
                trace=trace,
                max_steps=cfg.max_steps,
                temperature=temperature,
                max_tokens=cfg.step_max_tokens,
                context_tokens=cfg.context_tokens,
                timeout=cfg.action_timeout,
                max_observation_chars=cfg.max_observation_chars,
            )
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

    def _vote(
        self,
        outcomes: list[SolveOutcome],
        prepared: PreparedTable,
        table_id: str | None,
        trace: Trace,
    ) -> Result:
        answer, votes = majority_vote([o.answer for o in outcomes])
        trace.event("decision", stage="vote", votes=votes, answer=answer)
        if answer is not None:
            evidence = locate(prepared, table_id or "", answer)
            return Result(
                answer=answer, status="answered", evidence=evidence, details={"votes": votes}
            )
        failures = [o for o in outcomes if o.status in ("llm_error", "context")]
        status: Status = "failed" if len(failures) == len(outcomes) else "insufficient"
        reason = (
            failures[0].reason
            if failures and status == "failed"
            else f"no Final Answer within {self.config.max_steps} steps"
        )
        return Result(answer=None, status=status, details={"votes": votes, "reason": reason})

    def _finish(
        self,
        trace: Trace,
        meter: UsageMeter,
        details: dict[str, Any],
        result: Result,
        table_id: str | None,
    ) -> Result:
        result.usage = meter.totals
        result.steps = result.usage.calls
        result.trace_path = str(trace.path) if trace.path else None
        if table_id:
            result.tables_consulted = [table_id]
            result.final_table = table_id
        if self._prepared is not None and "databases" in details:  # now with encode time
            seconds = self._prepared.seconds
            details["databases"]["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
        result.details = {**details, **result.details}
        trace.event(
            "decision",
            stage="end",
            status=result.status,
            answer=result.answer,
            steps=result.steps,
            reason=result.details.get("reason"),
        )
        return result
