"""Answer generation over the sub-table or the full table (TabScope §3.5, App. C.3).

The prompt is the paper's, with ``{TABLE}`` the refined sub-table (localized path) or the
original table (full path), both linearized with original row ids; temperature 0, at most
2,048 new tokens (App. D).

Choices (ours): the answer is the last non-empty ``<answer>…</answer>``; a reply without it
gets one repair request when the budget has a step left, then a final ``Answer:`` line or a
short (≤ 300 characters) tag-less reply is taken (flagged ``answer_unparsed``), else — long
prose without an answer marker, a greeting (`llm.parse.is_chatter`), nothing — the status is
"failed" with the reason "the model's reply had no answer in the expected format" and the
reply's start in the trace (issue 36; the paper, App. C.3, gives the ``<answer>`` format but
not what happens without it); a refusal or tool syntax given as the answer
(`llm.parse.is_non_answer`) fails too. A reply without the tags leaves the LLM cache
(`ScopeRun.discard`, issue 39), even when its answer line is then taken. A
list answer keeps the model's separators. Evidence (the cells the answer used): on the
localized path, cells of the sub-table equal to an answer item (`locate_evidence`),
``matched``, or ``ambiguous`` when several hold the same item (`evidence.mark_matches`), and
when none match (counts, sums) the sub-table's cells (at most 50), ``untracked`` (read, use
unknown); none on the full path, where a cell equal to the answer would be a search of the
whole table, not what the model used (a review found a count of 3 "verified" by an
unrelated cell of 3). Matched cells never verify the answer (`evidence.verify_cells`). A
table that does not fit the model's context is never sent or cut: the status is "failed" with
the token counts as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablequest.llm import (
    NO_ANSWER_IN_FORMAT,
    Message,
    ParseError,
    extract_answer,
    extract_json,
    is_chatter,
    is_non_answer,
    reply_start,
)
from tablequest.methods.evidence import mark_matches
from tablequest.methods.locate import locate_evidence
from tablequest.methods.scope import prompts
from tablequest.methods.scope.state import ScopeRun, linearize
from tablequest.table import CellRef, Table

__all__ = ["MAX_PLAIN_ANSWER", "Answer", "answer", "subtable_evidence"]

MAX_PLAIN_ANSWER = 300
MAX_EVIDENCE = 50


@dataclass
class Answer:
    """What the answer stage produced."""

    text: str | None
    reason: str | None = None
    unparsed: bool = False
    evidence: list[CellRef] = field(default_factory=list)
    evidence_source: str = "none"
    details: dict[str, Any] = field(default_factory=dict)


def subtable_evidence(table: Table, table_id: str, limit: int = MAX_EVIDENCE) -> list[CellRef]:
    """Every body cell of `table` (original coordinates), at most `limit`, as ``untracked``:
    the model read them, which of them the answer used is not known."""
    out: list[CellRef] = []
    for r, row in enumerate(table.body):
        for c, value in enumerate(row):
            out.append(CellRef(table_id, table.row_ids[r], table.col_ids[c], value, "untracked"))
            if len(out) >= limit:
                return out
    return out


def _lenient(text: str) -> str | None:
    """The answer of a reply without tags: a JSON object's ``answer`` (a model that answered
    in JSON; its text as the answer was a review's finding), else its answer line."""
    found = _json_answer(text)
    if found is None:
        try:
            found = extract_answer(text)
        except ParseError:
            return None
    return None if len(found) > MAX_PLAIN_ANSWER or is_chatter(found) else found


def _json_answer(text: str) -> str | None:
    if not text.strip().startswith(("{", "```")):
        return None
    try:
        data = extract_json(text)
    except ParseError:
        return None
    value = data.get("answer") if isinstance(data, dict) else None
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or None
    return str(value).strip() or None if isinstance(value, (str, int, float)) else None


def _ask(run: ScopeRun, messages: list[Message], max_tokens: int) -> tuple[str | None, str | None]:
    """(answer, last reply): one call, one repair when the budget allows."""
    conversation = list(messages)
    last: str | None = None
    for attempt in range(2):
        if attempt and not run.query.budget.can_spend("qa"):
            break
        replies = run.chat(
            "qa", conversation, temperature=run.options.temperature, max_tokens=max_tokens
        )
        if not replies:
            break
        last = replies[0].text
        try:
            return extract_answer(last, require_tag=True), last
        except ParseError as exc:
            run.discard(replies[0])
            run.error("answer", f"{exc.kind}: {exc}", finish_reason=replies[0].finish_reason)
            conversation += [
                {"role": "assistant", "content": last},
                {"role": "user", "content": prompts.REPAIR_ANSWER.replace("{error}", str(exc))},
            ]
    return None, last


def _checked(
    run: ScopeRun, value: str | None, last: str | None
) -> tuple[str | None, str | None, bool]:
    """(answer, reason when there is none, taken from a tag-less reply) of the answer call."""
    unparsed = False
    if value is None and last is not None:
        value = _lenient(last)
        unparsed = value is not None
        if unparsed:
            run.fallback("answer", "no <answer> tags: the reply's answer line was taken")
    if value is not None and is_non_answer(value):
        run.fallback("answer", f"the answer {value[:80]!r} is a refusal or tool syntax")
        return None, f"no answer: the model answered {value[:80]!r}", False
    if value is None and last is not None:
        run.fallback("answer", NO_ANSWER_IN_FORMAT, reply=reply_start(last))
        return None, NO_ANSWER_IN_FORMAT, False
    if value is None:
        reason = "no answer: the answer call could not be made"
        run.fallback("answer", reason)
        return None, reason, False
    return value, None, unparsed


def answer(run: ScopeRun, qa_table: Table, *, local: bool) -> Answer:
    """Answer from `qa_table` (a sub-table when `local`)."""
    text = run.table_text if not local else linearize(qa_table)
    tokens = run.table_tokens if not local else run.count(text)
    messages = prompts.user(prompts.fill(prompts.ANSWER, TABLE=text, QUESTION=run.question))
    fit = run.fit(messages, tokens, len(text), run.options.qa_max_tokens)
    details: dict[str, Any] = {"table_tokens": tokens, "prompt_tokens": fit.prompt_tokens}
    if not fit.ok:
        reason = (
            f"the table is too large for the model: the answer prompt needs about "
            f"{fit.prompt_tokens} tokens and the context holds {fit.context}; "
            "raise -o context_tokens if the server allows more"
        )
        run.fallback("answer", reason)
        return Answer(None, reason, details=details)
    if fit.max_tokens < run.options.qa_max_tokens:
        details["max_tokens_lowered_to"] = fit.max_tokens
    value, last = _ask(run, messages, fit.max_tokens)
    value, why, unparsed = _checked(run, value, last)
    if value is None:
        return Answer(None, why, details=details)
    # matched only in a localized sub-table (what the method selected), never in the whole
    # table it was shown: that would be a search of the table for the answer's value
    found = locate_evidence(qa_table, run.table_id, value) if local else []
    evidence = mark_matches(found, value)
    source = "answer_cells" if evidence else "none"
    if not evidence and local:  # a computed answer: the cells read, not which ones it used
        evidence, source = subtable_evidence(qa_table, run.table_id), "subtable"
    run.query.trace.event("qa", table=run.table_id, local=local, answer=value, evidence=source)
    return Answer(value, None, unparsed, evidence, source, details)
