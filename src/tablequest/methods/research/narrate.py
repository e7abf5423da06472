"""The report's analysis written by the model (DTR §3.5 "analysis reports", App. E/F).

The paper's reports (App. E.x.4, F.1.3) are the model's own prose: a data overview, the
calculation process, the key figures and insights. With ``llm_report`` one call after the vote
asks for those sections (`prompts.report_messages`), given the answer, the winning program with
its key outputs and what comprehension found; the reply goes into the template report
between the answer and the execution record (`report.build_report`).

Choices (ours):
- **One call, no repair request**, after the vote. The QA reserve exists for the non-code
  fallback, which has had its chance by then, so the report may use that step.
- **Checks on the reply** (`parse_report`): think blocks and code fences removed, level-1
  headings demoted (the report has one title); at least two lines and 80 characters, not a
  ``Final Answer:`` line; when the answer has numbers (and there are at most three items), the
  text must state one of them (compared at 3 significant digits, thousands separators
  ignored): a report that never states the answer it explains is not used.
- **Fallback**: no model, ``llm_report=false``, no step left, an LLM error or a reply that fails
  the checks → the template report; a reply that fails the checks leaves the LLM cache
  (`LLM.discard`, issue 39). ``details["report_source"]`` is ``"llm"`` or
  ``"template"``, ``details["report_fallback"]`` says why, and a ``decision/report`` trace
  event records both.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tablequest.llm import BadCall, LLMError, ParseError, strip_think
from tablequest.methods.research.conclude import report as template_report
from tablequest.methods.research.operations import path_key
from tablequest.methods.research.prompts import report_messages
from tablequest.methods.research.report import execution_record
from tablequest.methods.result import Result

if TYPE_CHECKING:
    from tablequest.methods.research.options import ResearchOptions
    from tablequest.methods.research.state import QuestionRun

__all__ = ["parse_report", "write_report"]

MAX_CHARS = 8000
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _key(token: str) -> str | None:
    try:
        return f"{float(token.replace(',', '')):.3g}"
    except ValueError:
        return None


def _numbers(text: str) -> set[str]:
    return {k for k in (_key(t) for t in _NUMBER.findall(text)) if k is not None}


def parse_report(text: str, answer: str | None) -> str:
    """The model's report sections, checked (see the module docstring).

    Raises:
        BadCall: the reply is not a usable report (a `ParseError`).
    """
    body = _FENCE.sub("", strip_think(text)).strip()
    lines = [re.sub(r"^#(?!#)", "##", line) for line in body.splitlines()]
    body = "\n".join(lines).strip()[:MAX_CHARS]
    content = [x for x in lines if x.strip()]
    if len(content) < 2 or len(body) < 80:
        raise BadCall("the report is too short (two lines and 80 characters at least)", text)
    if re.match(r"\s*(final\s+)?answer\s*:", content[0], re.I):
        raise BadCall("the reply is an answer line, not a report", text)
    items = [x for x in re.split(r",\s+", answer or "") if x.strip()]
    wanted = _numbers(answer or "") if len(items) <= 3 else set()
    if wanted and not wanted & _numbers(body):
        raise BadCall(f"the report never states the answer {answer!r}", text)
    return body


def _narrative(run: QuestionRun, question: str, result: Result, opts: ResearchOptions) -> str:
    q = run.q
    assert q.llm is not None
    winner = next(
        (o for o in reversed(run.outcomes) if path_key(o.path) == result.details.get("winner")),
        None,
    )
    comp = result.details.get("comprehension") or {}
    table = (
        f"{run.table.n_rows} rows × {run.table.n_cols} columns; "
        f"{comp.get('column_depth')} level(s) of column headers, "
        f"{comp.get('row_depth')} of row headers; units: {comp.get('units') or 'none found'}; "
        f"total rows: {', '.join((comp.get('aggregate_rows') or [])[:8]) or 'none'}"
    )
    messages = report_messages(
        question=question, answer=result.answer or f"none ({result.status})",
        query_type=run.query_type, table=table,
        record=execution_record(winner) if winner is not None else [],
    )  # fmt: skip
    q.budget.spend("report")
    reply = q.llm.chat(messages, temperature=opts.temperature, max_tokens=opts.max_tokens)[0]
    try:
        return parse_report(reply.text, result.answer)
    except ParseError:
        q.llm.discard(reply)  # not served again from the LLM cache (issue 39)
        raise


def write_report(
    run: QuestionRun, question: str, result: Result, figures: list[bytes], opts: ResearchOptions
) -> str:
    """The report, its analysis by the model when possible; records the source."""
    q = run.q
    q.budget.reserve = 0  # the fallback's reserve is no longer needed (module docstring)
    narrative, reason = None, None
    if not opts.llm_report:
        reason = "llm_report is off"
    elif q.llm is None:
        reason = "no model"
    elif not q.budget.can_spend("report"):
        reason = "step budget exhausted"
    else:
        try:
            narrative = _narrative(run, question, result, opts)
        except (LLMError, ParseError) as exc:
            reason = f"{type(exc).__name__}: {exc}"[:300]
    source = "llm" if narrative else "template"
    result.details["report_source"] = source
    if reason:
        result.details["report_fallback"] = reason
    q.trace.event("decision", stage="report", source=source, reason=reason)
    return template_report(run, question, result, figures, narrative=narrative)
