"""TabScope: question-adaptive scope selection for one table (arXiv:2609.03395).

    τ̂ ← classify(q, T)                                (§3.3, App. C.4; JSON, one repair)
    z ← π(τ̂, s(T)),  s(T) = large iff tokens(T) > 4,096 (Table 9)
    if z = local:
        R′, C′ ← aggregate(K row samples ‖ K column samples)   (§3.4, App. C.1, Eqs 2–5)
        R′, C′ ← refine(q, T, T[R′, C′])               (one round, App. C.2)
        ŷ ← answer(q, T[R′, C′])                        (App. C.3)
    else:
        ŷ ← answer(q, T)

Every LLM call of the question, repairs included, is one step of the budget (``--steps``;
default `ScopeOptions.default_steps`), and the last step is kept for the answer: when the
budget runs short the question takes the full-table path or skips refinement, recorded.
Every stage that meets bad model output (prose, invented ids, truncated JSON, server errors)
ends in a recorded fallback (``fallback`` trace events, ``details["fallbacks"]``): classifier →
full table; a retrieval dimension → all its ids; refinement → keep; the answer → "failed".

Choices the paper leaves open are listed in each stage's module docstring and in
docs/methods.md.
"""

from __future__ import annotations

import threading
from typing import Any

from tablequest.llm import StepBudget
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.query import start_query
from tablequest.methods.result import Result
from tablequest.methods.scope.answer import answer
from tablequest.methods.scope.options import ScopeOptions
from tablequest.methods.scope.policy import classify, policy_scope, policy_table
from tablequest.methods.scope.refine import refine
from tablequest.methods.scope.retrieval import retrieve
from tablequest.methods.scope.state import ScopeRun, linearize
from tablequest.methods.scope.tokens import (
    DEFAULT_CONTEXT,
    TokenCounter,
    safe_count,
    token_counter,
)
from tablequest.table import Table
from tablequest.trace import Trace

__all__ = ["ANSWER_SEPARATORS", "TabScope"]

ANSWER_SEPARATORS = ("\n", " | ", "; ", ", ")
"""How a TabScope answer lists items (ours: the paper's answer prompt names no list format):
one item per line, else the first of " | ", "; ", ", " the answer contains."""


class TabScope:
    """TabScope over the one table of a `TableSet`."""

    name = "scope"

    def __init__(self, options: ScopeOptions | None = None, context: MethodContext | None = None):
        self.options = options or ScopeOptions()
        self.context = context or MethodContext()
        self._counter: TokenCounter | None = None
        self._lock = threading.Lock()

    # -- size ----------------------------------------------------------------------------
    def counter(self) -> TokenCounter:
        """The token counter (built once: server /tokenize probe, else local)."""
        with self._lock:
            if self._counter is None:
                cfg = self.context.llm_config
                self._counter = token_counter(
                    cfg.url if cfg else None,
                    cfg.model if cfg else None,
                    cfg.api_key if cfg else None,
                    mode=self.options.tokenizer,
                )
            return self._counter

    def context_tokens(self) -> int:
        """The model's context: the option, else what the server reported, else 32,768."""
        if self.options.context_tokens is not None:
            return self.options.context_tokens
        return self.counter().context or DEFAULT_CONTEXT

    def measure(self, table: Table) -> dict[str, Any]:
        """Serialized tokens of `table`, who counted them, the size regime and the context."""
        text = linearize(table)
        tokens, name = safe_count(self.counter(), text)
        return {
            "tokens": tokens,
            "tokenizer": name,
            "regime": "large" if tokens > self.options.large_tokens else "default",
            "large_tokens": self.options.large_tokens,
            "context_tokens": self.context_tokens(),
        }

    # -- the method ----------------------------------------------------------------------
    def preview(
        self, question: str, source: TableSet, *, task: Task = "tableqa", trace: Trace | None = None
    ) -> Result:
        """What can be known without a model: size, regime and the policy ("failed")."""
        table_id, table = source.one("scope")
        size = self.measure(table)
        if trace is not None:
            trace.event("decision", stage="size", **size)
        return Result(
            answer=None,
            status="failed",
            tables_consulted=[table_id],
            final_table=table_id,
            details={
                "reason": "no LLM configured",
                **size,
                "policy": policy_table(),
                "scope_option": self.options.scope,
            },
            method=self.name,
        )

    def answer(
        self,
        question: str,
        source: TableSet,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """Answer `question` from the one table of `source`."""
        table_id, table = source.one("scope")
        q = start_query(
            self.context, budget=budget, trace=trace, default_steps=self.options.default_steps()
        )
        q.budget.reserve = 1
        if q.llm is None:
            shown = self.preview(question, source, task=task, trace=q.trace)
            return q.finish(shown, self.name, ANSWER_SEPARATORS)
        text = linearize(table)
        counter = self.counter()
        tokens, tokenizer = safe_count(counter, text)
        run = ScopeRun(
            question=question,
            task=task,
            table_id=table_id,
            table=table,
            options=self.options,
            query=q,
            counter=counter,
            context=self.context_tokens(),
            table_text=text,
            table_tokens=tokens,
            tokenizer=tokenizer,
        )
        run.decision("start", method=self.name, options=self.options.label(), question=question)
        result = q.finish(_run(run), self.name, ANSWER_SEPARATORS)  # verdict event before end
        q.trace.event(
            "decision",
            stage="end",
            status=result.status,
            answer=result.answer,
            steps=q.budget.calls,
            reason=result.details.get("reason"),
            breakdown=result.details.get("breakdown"),
            subtable=result.details.get("subtable"),
        )
        return result

    def close(self) -> None:
        with self._lock:
            if self._counter is not None:
                self._counter.close()
                self._counter = None


def _choose_scope(run: ScopeRun, question_type: str | None, large: bool) -> tuple[str, str]:
    opts = run.options
    if opts.scope != "policy":
        return opts.scope, f"forced by option scope={opts.scope}"
    if question_type is None:
        return "full", "no question type (classifier fallback) → full table"
    return policy_scope(question_type, large), "Table 9"


def _localize(
    run: ScopeRun, details: dict[str, Any]
) -> tuple[frozenset[int], frozenset[int]] | None:
    """R′, C′ after aggregation and refinement; None when the full table must be used."""
    table = run.table
    if table.n_rows == 0 or table.n_cols == 0:
        run.fallback("retrieve", "the table has no body rows or no columns → full table")
        return None
    got = retrieve(run)
    if got is None:
        return None
    chosen, report = got
    details["retrieval"] = report
    rows, cols = chosen.rows, chosen.cols
    if run.options.refine:
        if run.query.budget.can_spend("refine"):
            rows, cols, details["refinement"] = refine(run, rows, cols)
        else:
            run.fallback("refine", "no step left for refinement → skipped")
    return rows, cols


def _run(run: ScopeRun) -> Result:
    opts, table = run.options, run.table
    large = run.table_tokens > opts.large_tokens
    regime = "large" if large else "default"
    run.decision(
        "size",
        tokens=run.table_tokens,
        tokenizer=run.tokenizer,
        regime=regime,
        context_tokens=run.context,
    )
    question_type = classify(run) if opts.classifies else None
    scope, why = _choose_scope(run, question_type, large)
    run.decision("scope", question_type=question_type, regime=regime, scope=scope, why=why)
    details: dict[str, Any] = {}
    selection = _localize(run, details) if scope == "local" else None
    used = "local" if selection is not None else "full"
    rows, cols = selection or (frozenset(table.row_ids), frozenset(table.col_ids))
    qa_table = table.sub_table(sorted(rows), sorted(cols)) if selection is not None else table
    result_answer = answer(run, qa_table, local=selection is not None)
    details.update(
        question_type=question_type or "unclassified",
        scope={"decided": scope, "used": used, "why": why},
        breakdown={
            "question_type": question_type or "unclassified",
            "scope": used,
            "regime": regime,
        },
        subtable={
            "rows": sorted(rows),
            "columns": list(qa_table.columns),
            "col_ids": sorted(cols),
            "scope": used,
            "n_rows": table.n_rows,
            "n_cols": table.n_cols,
        },
        tokens=run.table_tokens,
        tokenizer=run.tokenizer,
        regime=regime,
        context_tokens=run.context,
        answer=result_answer.details,
        evidence_source=result_answer.evidence_source,
        fallbacks=run.fallbacks,
        action_counts=dict(run.query.budget.spent),
    )
    if result_answer.unparsed:
        details["answer_unparsed"] = True
    if result_answer.text is None:
        details["reason"] = result_answer.reason
    return Result(
        answer=result_answer.text,
        status="answered" if result_answer.text is not None else "failed",
        tables_consulted=[run.table_id],
        final_table=run.table_id,
        evidence=result_answer.evidence,
        details=details,
    )
