"""Concluding a question (DTR Eq. 6 and §4.1): the vote, the non-code fallback, the Result's
details and the report (see `method` for the algorithm and `reflect.vote` for Eq. 6).

The non-code fallback's answer is its reply's ``Final Answer:`` line (or an ``Answer:`` line or
``<answer>`` tag). A reply without one — a greeting, prose — is never the answer: Eq. 6 counts
"only answers satisfying the query requirements and correct formats" (DTR, arXiv:2603.09151, §3.5),
so the question fails with the reason "the model's reply had no answer in the expected
format" and the reply's start in the trace (issue 36; unless the sandbox was unavailable,
which stays the reason), and the reply leaves the LLM cache (`LLM.discard`, issue 39).
"""

from __future__ import annotations

from typing import Any

from tablequest.llm import (
    NO_ANSWER_IN_FORMAT,
    LLMError,
    ParseError,
    extract_answer,
    is_non_answer,
    reply_start,
)
from tablequest.methods.base import Task
from tablequest.methods.research.evidence import research_evidence
from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.meta import MetaGraph
from tablequest.methods.research.operations import path_key
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.research.planner import rank
from tablequest.methods.research.prompts import direct_messages
from tablequest.methods.research.reflect import vote
from tablequest.methods.research.report import ReportInput, build_report
from tablequest.methods.research.state import QuestionRun
from tablequest.methods.result import Result, Status
from tablequest.table import serialize

__all__ = ["breakdown", "conclude", "details", "direct_answer", "direct_table_text", "report"]

DIRECT_TABLE_CHARS = 12_000


def conclude(
    run: QuestionRun, options: ResearchOptions, question: str, task: Task
) -> tuple[Result, list[bytes]]:
    """Eq. 6 vote, else the non-code fallback; the Result with its details."""
    answer, votes = vote(run.outcomes, ordered=run.query_type == "ranking")
    fallback = None
    if answer is None and options.fallback_direct:
        answer = direct_answer(run, options, question, task)
        fallback = "direct" if answer is not None else None
    winner = _winner(run.outcomes, answer) if fallback is None else None
    status, reason = _status(run, answer)
    figures = winner.figures if winner else []
    if not figures and run.query_type == "chart":
        figures = next((o.figures for o in run.outcomes if o.figures), [])
    cells, verdict = research_evidence(run, answer, winner) if answer else ([], None)
    result = Result(
        answer=answer, status=status, tables_consulted=[run.table_id],
        final_table=run.table_id, evidence=cells, method="research",
    )  # fmt: skip
    if verdict is not None:
        result.verified, result.verification = verdict.verified, verdict.why  # type: ignore[assignment]
    result.details = details(run, options, votes, winner, fallback, reason)
    return result, figures


def direct_answer(
    run: QuestionRun, options: ResearchOptions, question: str, task: Task
) -> str | None:
    q = run.q
    if q.llm is None or not q.budget.can_spend("qa"):
        return None
    text = direct_table_text(run)
    q.budget.spend("qa")
    q.trace.event("fallback", stage="direct", reason="no path gave a valid answer")
    try:
        reply = q.llm.chat(
            direct_messages(question, text, task=task),
            temperature=options.temperature, max_tokens=options.max_tokens,
        )[0]  # fmt: skip
    except LLMError as exc:
        q.trace.event("fallback", stage="direct", reason=f"{type(exc).__name__}: {exc}")
        return None
    answer = _direct_reply_answer(run, question, reply.text)
    if run.direct_unformatted is not None:  # no answer in the format: the cache forgets it
        q.llm.discard(reply)
    return answer


def _direct_reply_answer(run: QuestionRun, question: str, reply: str) -> str | None:
    """The fallback reply's ``Final Answer:``; None (recorded) without one, or for a refusal
    or the prompt echoed back (seen from a base model behind llama.cpp)."""
    trace = run.q.trace
    try:
        answer = extract_answer(reply.replace("Final Answer:", "Answer:"), bare=False)
    except ParseError:
        run.direct_unformatted = reply_start(reply)
        trace.event("fallback", stage="direct", reason=NO_ANSWER_IN_FORMAT,
                    reply=run.direct_unformatted)  # fmt: skip
        return None
    answer = " ".join(answer.split())[:500]
    if is_non_answer(answer) or " ".join(question.split()) in answer:
        trace.event("fallback", stage="direct", reason=f"not an answer: {answer[:80]!r}")
        return None
    return answer or None


def direct_table_text(run: QuestionRun) -> str:
    """The table as the non-code fallback shows it: Markdown, cut at a row boundary after
    `DIRECT_TABLE_CHARS` characters. A cut is never silent: a trace event and
    ``details["direct_table_cut"]`` say how many rows and characters the model saw."""
    full = serialize(run.table, "markdown")
    if len(full) <= DIRECT_TABLE_CHARS:
        return full
    lines = full.splitlines(keepends=True)
    kept: list[str] = []
    size = 0
    for line in lines:
        if kept and size + len(line) > DIRECT_TABLE_CHARS:
            break
        kept.append(line)
        size += len(line)
    cut = {"lines_shown": len(kept), "lines": len(lines), "chars_shown": size,
           "chars": len(full), "limit": DIRECT_TABLE_CHARS}  # fmt: skip
    run.direct_cut = cut
    run.q.trace.event(
        "decision", stage="direct_table_cut",
        reason=f"the fallback shows {len(kept):,} of {len(lines):,} table lines "
        f"({size:,} of {len(full):,} characters; limit {DIRECT_TABLE_CHARS:,})",
        **cut,
    )  # fmt: skip
    return "".join(kept)


def details(
    run: QuestionRun,
    options: ResearchOptions,
    votes: dict[str, int],
    winner: PathOutcome | None,
    fallback: str | None,
    reason: str | None,
) -> dict[str, Any]:
    total = sum(c.stats.n for c in run.candidates)
    scored = dict((c.key, e) for c, e in rank(run.candidates, options.alpha))
    by_path = {path_key(o.path): o for o in run.outcomes}
    paths = []
    for c in run.candidates:
        o = by_path.get(c.key)
        paths.append({
            "path": c.key, "prior": c.prior, "expectation": scored[c.key],
            "r_hat": c.stats.r_hat, "n": c.stats.n, "executed": c.executed, "runs": c.runs,
            "origin": c.origin, "reward": o.reward if o else None,
            "f": [o.feedback.f_exec, o.feedback.f_time, o.feedback.f_type] if o else None,
            "answer": o.answer if o else None, "valid": o.valid if o else None,
            "error": o.error if o else None,
        })  # fmt: skip
    details: dict[str, Any] = {
        "query_type": run.query_type,
        "breakdown": breakdown(run.query_type, run.comp.graph),
        "paths": paths, "votes": votes, "sum_n": total,
        "winner": winner and path_key(winner.path),
        "lessons": [x.text for x in [*run.lessons, *run.learned]],
        "comprehension": run.comp.graph.summary(), "stop": run.stop,
        "replans": run.replans, "charts": [],
    }  # fmt: skip
    if run.direct_cut is not None:
        details["direct_table_cut"] = dict(run.direct_cut)
    if winner is not None and winner.chart_data is not None:
        details["chart_data"] = winner.chart_data
    elif run.query_type == "chart":
        data = next((o.chart_data for o in run.outcomes if o.chart_data), None)
        if data is not None:
            details["chart_data"] = data
    if fallback:
        details["fallback"] = fallback
    if reason:
        details["reason"] = reason
    return details


def report(
    run: QuestionRun,
    question: str,
    result: Result,
    figures: list[bytes],
    *,
    narrative: str | None = None,
) -> str:
    """The template report (`report.build_report`), with the model's `narrative` if any."""
    winner = next(
        (o for o in reversed(run.outcomes) if path_key(o.path) == result.details.get("winner")),
        None,
    )
    return build_report(
        ReportInput(
            question=question, answer=result.answer, status=result.status,
            reason=result.reason, query_type=run.query_type, winner=winner,
            paths=result.details["paths"], comprehension=result.details["comprehension"],
            lessons=result.details["lessons"],
            charts=[f"chart-{i}.png" for i in range(1, len(figures) + 1)],
            fallback=result.details.get("fallback"), usage=run.q.usage.totals.to_dict(),
            narrative=narrative,
        )
    )  # fmt: skip


def _winner(outcomes: list[PathOutcome], answer: str | None) -> PathOutcome | None:
    return next((o for o in outcomes if o.valid and o.answer == answer), None)


def _status(run: QuestionRun, answer: str | None) -> tuple[Status, str | None]:
    if answer is not None:
        return "answered", None
    if run.sandbox_error:
        return "failed", run.sandbox_error
    if run.direct_unformatted is not None:
        return "failed", NO_ANSWER_IN_FORMAT
    if not any(o.learnable for o in run.outcomes):
        reason = next((o.stopped for o in run.outcomes if o.stopped), None)
        return "failed", reason or run.stop or "no path could run"
    errors = sorted({o.error_kind or "invalid" for o in run.outcomes if not o.valid})
    return "insufficient", f"no path gave a valid answer ({', '.join(errors)}); stop: {run.stop}"


def breakdown(query_type: str, graph: MetaGraph) -> dict[str, str]:
    if graph.both_axis_hierarchy:
        shape = "both-axis"
    elif graph.depth("column") >= 2:
        shape = "column-hierarchy"
    elif graph.depth("row") >= 2:
        shape = "row-hierarchy"
    else:
        shape = "flat"
    return {"task_family": query_type, "structure": shape}
