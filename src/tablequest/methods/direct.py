"""Direct QA and retrieve-then-QA baselines (papers/tableseek.txt App. D, Tables 10–12).

- `DirectQA`: the standalone QA prompt (Tables 22–23, no answerability option) over given
  tables — the gold tables for the oracle setting (table_source = gold, top_k = 1).
- `RetrieveThenQA`: a retriever (dense, rerank over dense, BM25, grep) picks the top-k
  tables, then the same standalone QA prompt answers.

One LLM call per question. An unparsable reply is taken as the answer when short, else the
status is "failed" (ours; same parser as TableSeek's QA).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tablequest.corpus.store import Hit, Store
from tablequest.llm.base import LLM, LLMError
from tablequest.llm.instrument import Instrumented
from tablequest.llm.usage import UsageMeter
from tablequest.methods.base import Result, Status, Task
from tablequest.methods.seek import prompts
from tablequest.methods.seek.qa import parse_qa, qa_context
from tablequest.table import Table
from tablequest.trace import Trace

Retriever = Callable[[Store, str, int], list[Hit]]


class DirectQA:
    """Answer from the given tables with the standalone QA prompt."""

    name = "direct"

    def __init__(
        self, llm: LLM, *, max_tokens: int = 8192, usage: UsageMeter | None = None
    ) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.usage = usage or UsageMeter()

    def answer_tables(
        self,
        question: str,
        tables: Sequence[tuple[str, Table]],
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
        query_id: str | None = None,
    ) -> Result:
        """QA over `tables` given as (table id, Table) pairs."""
        trace = trace or Trace.in_memory()
        meter = self.usage.scope(query_id or f"q{time.monotonic_ns()}")
        llm = Instrumented(self.llm, trace=trace, usage=meter)
        named = {f"Table_{i}": (tid, t) for i, (tid, t) in enumerate(tables)}
        messages = prompts.qa_messages(
            question, task, qa_context(named, patterns=None), standalone=True
        )
        try:
            raw: str | None = llm.chat(messages, temperature=0.0, max_tokens=self.max_tokens)[
                0
            ].text
        except LLMError as exc:
            trace.event("fallback", stage="qa", reason=f"{type(exc).__name__}: {exc}")
            raw = None
        outcome = parse_qa(raw, named, task=task)
        trace.event(
            "qa", tables=[tid for tid, _ in tables], status=outcome.status, answer=outcome.answer
        )
        status: Status = (
            "answered"
            if outcome.satisfactory
            else "failed"
            if outcome.status == "failed"
            else "insufficient"
        )
        return Result(
            answer=outcome.answer,
            status=status,
            tables_consulted=[tid for tid, _ in tables],
            final_table=outcome.final_table,
            evidence=outcome.evidence,
            steps=1,
            usage=meter.totals,
            trace_path=str(trace.path) if trace.path else None,
            details={"action_counts": {"qa": 1}},
        )

    def answer(
        self,
        question: str,
        source: Store,
        *,
        task: Task = "tableqa",
        table_ids: Sequence[str] = (),
        trace: Trace | None = None,
        query_id: str | None = None,
    ) -> Result:
        """QA over the store tables `table_ids` (the oracle setting passes gold ids)."""
        tables = [(tid, source.get(tid)) for tid in table_ids]
        return self.answer_tables(question, tables, task=task, trace=trace, query_id=query_id)


class RetrieveThenQA:
    """A retriever picks the top-k tables; `DirectQA` answers from them."""

    def __init__(
        self,
        llm: LLM,
        retriever: Retriever,
        *,
        name: str,
        top_k: int = 1,
        usage: UsageMeter | None = None,
    ) -> None:
        self.name = name
        self.retriever = retriever
        self.top_k = top_k
        self.qa = DirectQA(llm, usage=usage)

    def answer(
        self,
        question: str,
        source: Store,
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
        query_id: str | None = None,
    ) -> Result:
        trace = trace or Trace.in_memory()
        hits = self.retriever(source, question, self.top_k)
        trace.event(
            "rank",
            method=self.name,
            hits=[{"table_id": h.table_id, "score": round(h.score, 4)} for h in hits],
        )
        if not hits:
            trace.event("fallback", stage="qa", reason="retriever returned no table")
            return Result(
                answer=None,
                status="insufficient",
                trace_path=str(trace.path) if trace.path else None,
            )
        result = self.qa.answer(
            question,
            source,
            task=task,
            trace=trace,
            query_id=query_id,
            table_ids=[h.table_id for h in hits],
        )
        result.details["ranked"] = [h.table_id for h in hits]
        return result
