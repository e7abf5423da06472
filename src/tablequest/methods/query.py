"""Per-question state: `start_query` gives a question its metered model, step budget,
deadline and trace; `Query.finish` fills what every Result carries and settles its verdict.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from tablequest.llm import Deadline, Instrumented, StepBudget, UsageMeter
from tablequest.methods.base import MethodContext
from tablequest.methods.evidence import verify_cells
from tablequest.methods.lineage import cell_json
from tablequest.methods.result import Result, Verified
from tablequest.trace import Trace

__all__ = ["Query", "answer_items", "start_query"]


@dataclass
class Query:
    """The per-question state every method starts with (`start_query`).

    Attributes:
        llm: The context's model wrapped to meter, trace and cap every call (None: no model).
        budget: The question's step budget (``--steps``).
        trace: Where events go.
        usage: This question's meter (rolls up into the context's).
        deadline: The question's wall-clock deadline (its calls are refused once it passes).
    """

    llm: Instrumented | None
    budget: StepBudget
    trace: Trace
    usage: UsageMeter
    deadline: Deadline = field(default_factory=lambda: Deadline(None))

    def stop_if_unreachable(self) -> None:
        """Raise the question's `ModelUnreachable` once its model proved unreachable, so a
        method skips LLM-free work (encoding, a sandbox) whose only use is a later call."""
        if self.deadline.unreachable is not None:
            raise self.deadline.unreachable.again()

    def finish(self, result: Result, method: str, separators: Sequence[str] = (" | ",)) -> Result:
        """Fill what every Result carries: steps, usage, trace path, method name and the
        answer's items (`answer_items` with the method's list `separators`, unless the method
        set them).

        A question whose model was unreachable (`ModelUnreachable`), or whose deadline stopped
        an LLM call, fails with that reason (an answer reached on the way is kept as
        ``details["partial_answer"]``).
        """
        stopped = self.deadline.unreachable or self.deadline.stopped
        if stopped is not None and result.reason != str(stopped):
            if result.answer is not None:
                result.details["partial_answer"] = result.answer
            result.answer, result.status = None, "failed"
            result.details.pop("error", None)
            result.details["reason"] = str(stopped)
            stage = "model" if stopped is self.deadline.unreachable else "deadline"
            result.details["stopped_by"] = stage
            self.trace.event("error", stage=stage, reason=str(stopped))
        if result.status == "failed" and not result.reason:
            last = self.llm.last_error if self.llm is not None else None
            result.details["reason"] = (
                f"{type(last).__name__}: {last}" if last is not None
                else "the method stopped without saying why (the trace has its steps)"
            )  # fmt: skip
        if result.answer is None:
            result.items = []
        elif not result.items:
            result.items = answer_items(result.answer, separators)
        _settle_verdict(result, self.trace)
        result.steps = self.budget.calls
        result.usage = self.usage.totals
        result.trace_path = str(self.trace.path) if self.trace.path else None
        result.method = result.method or method
        return result


def _settle_verdict(result: Result, trace: Trace) -> None:
    """An answered result's verdict: the method's own (computed evidence re-run), else the
    check of its cited or matched cells (`evidence.verify_cells`); none when not answered."""
    if result.status != "answered" or result.answer is None:
        result.verified = result.verification = None
        return
    if result.verified is None:
        verdict = verify_cells(result.answer, result.evidence)
        result.verified = cast(Verified, verdict.verified)
        result.verification = verdict.why
    trace.event(
        "qa", stage="verify", verified=result.verified, why=result.verification,
        evidence=[cell_json(c) for c in result.evidence[:50]],
    )  # fmt: skip


def answer_items(answer: str | None, separators: Sequence[str]) -> list[str]:
    """The items of an answer written in a list format: the text split on the first of
    `separators` it contains (each item stripped, empty ones dropped); one item when it
    contains none. A method passes the separators its own prompt asks for."""
    text = (answer or "").strip()
    if not text:
        return []
    for sep in separators:
        if sep in text:
            return [p.strip() for p in text.split(sep) if p.strip()]
    return [text]


def start_query(
    context: MethodContext,
    *,
    budget: StepBudget | None,
    trace: Trace | None,
    default_steps: int,
) -> Query:
    """Per-question LLM wrapper, budget (default `default_steps` calls) and trace."""
    budget = budget if budget is not None else StepBudget(default_steps, reserve=0)
    trace = trace if trace is not None else Trace.in_memory()
    usage = context.usage.scope(f"q{time.monotonic_ns()}")
    deadline = context.question_deadline()
    llm = None
    if context.llm is not None:
        llm = Instrumented(context.llm, trace=trace, usage=usage, budget=budget, deadline=deadline)
    return Query(llm, budget, trace, usage, deadline)
