"""QA context and reply parsing shared by TableSeek and the QA baselines.

Tables are given as ``[Table: Table_i]\\n{table in its corpus format}`` (the paper's
Table 20 caption), each cut at `qa_table_chars` (ours). With match-only QA (ablation) each
table is shown only through the rows its patterns match, without its head.

Parsing (ours): the reply is one JSON object {status, answer, evidence}; evidence cells are
named by table, column and value and are checked against the table: a citation held by one cell
is ``cited``, by several ``ambiguous``, by none dropped (a ``fallback`` trace event lists it).
When the model cites nothing valid the answer has no evidence (unverified): the model read the
whole table, and a cell found there by the answer's value would be a search of the table, not
what the model used (a review found a sum, 22, "verified" by another row's total of 22). A reply
that is not JSON is read as plain text (`llm.parse.extract_answer`: its ``<answer>`` tag or
``Answer:`` line, else the whole text) and taken as the answer when short, with a ``fallback``
trace event saying so (`unparsed`); a JSON reply whose status is "answered" but that holds no
answer (cut off, malformed) is a failure with the reason `NO_ANSWER_IN_FORMAT`, never
"insufficient" (which says the tables lack the evidence); a missing reply (the call failed)
is a failure. A reply with no answer in this format — empty,
long prose without an answer marker, or a greeting (`llm.parse.is_chatter`) — is a failure with
the reason `NO_ANSWER_IN_FORMAT` and the reply's start kept for the trace (issue 36; the paper
does not say, ours). `read_qa` parses a reply and reports such a reply to the model
(`LLM.discard`), so the LLM cache does not serve it again (issue 39)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tablequest.corpus import text_format
from tablequest.llm import (
    LLM,
    NO_ANSWER_IN_FORMAT,
    Completion,
    ParseError,
    extract_answer,
    extract_json,
    is_chatter,
    is_non_answer,
    reply_start,
)
from tablequest.table import CellRef, EvidenceHow, Table, preview, serialize
from tablequest.trace import Trace

if TYPE_CHECKING:
    from tablequest.methods.seek.config import SeekConfig

MAX_PLAIN_ANSWER = 300
_TRUE = {"true", "yes", "supported", "support", "entailed", "1"}
_FALSE = {"false", "no", "refuted", "refute", "0"}


@dataclass
class QAOutcome:
    status: str  # answered | insufficient | mismatch | failed
    answer: str | None = None
    evidence: list[CellRef] = field(default_factory=list)
    final_table: str | None = None
    unparsed: bool = False
    reason: str | None = None
    """Why the reply gave no answer (`NO_ANSWER_IN_FORMAT`), for the Result and the trace."""
    reply: str | None = None
    """The start of a reply that had no answer in the expected format."""
    dropped: list[dict[str, str]] = field(default_factory=list)
    """Cited cells that do not exist (no such table, column or value), for the trace."""

    @property
    def satisfactory(self) -> bool:
        return self.status == "answered"


def qa_context(
    tables: Mapping[str, tuple[str, Table]],
    *,
    patterns: Sequence[str] | None,
    config: SeekConfig | None = None,
    max_chars: int = 60_000,
) -> str:
    """The tables block of a QA prompt (match-only when `patterns` is given)."""
    limit = config.qa_table_chars if config else max_chars
    blocks = []
    for key, (_, table) in tables.items():
        fmt = text_format(table)
        if patterns is not None and config is not None:
            text = preview(
                table,
                patterns,
                fmt=fmt,  # type: ignore[arg-type]
                max_rows=config.max_matched_rows,
                rows_per_pattern=config.rows_per_pattern,
                line_chars=config.max_line_chars,
                match_only=True,
            ).text
        else:
            text = serialize(table, fmt)  # type: ignore[arg-type]
        if len(text) > limit:
            text = text[:limit] + f"\n… [table cut at {limit} characters]"
        blocks.append(f"[Table: {key}]\n{text}")
    return "\n\n".join(blocks)


def parse_qa(raw: str | None, tables: Mapping[str, tuple[str, Table]], *, task: str) -> QAOutcome:
    """Turn a QA reply into an outcome; never raises."""
    if raw is None:
        return QAOutcome("failed")
    first = next(iter(tables.values()))[0] if tables else None
    try:
        data = extract_json(raw)
    except ParseError:
        data = None
    if not isinstance(data, dict):
        text = _plain_answer(raw)
        if text is None:
            return QAOutcome("failed", final_table=first, unparsed=True,
                             reason=NO_ANSWER_IN_FORMAT, reply=reply_start(raw))  # fmt: skip
        data = {"status": _plain_status(text), "answer": text}
        unparsed = True
    else:
        unparsed = False
    status = str(data.get("status", "answered")).strip().lower()
    if status not in ("answered", "insufficient", "mismatch"):
        status = "answered"
    if status == "answered" and data.get("answer") is None:  # cut off or malformed
        return QAOutcome("failed", final_table=first,
                         reason=NO_ANSWER_IN_FORMAT, reply=reply_start(raw))  # fmt: skip
    answer = _answer_text(data.get("answer"))
    if task == "fact_verification" and status == "answered":
        answer = _verdict(answer)
        if answer is None:
            return QAOutcome("failed", final_table=first,
                             reason=NO_ANSWER_IN_FORMAT, reply=reply_start(raw))  # fmt: skip
    if status == "answered" and (not answer or is_non_answer(answer)):
        status = "insufficient"  # a refusal or tool syntax is never an answer
    evidence, final, dropped = _evidence(data.get("evidence"), tables)
    answered = answer if status == "answered" else None
    shown = reply_start(raw) if unparsed else None
    return QAOutcome(status, answered, evidence, final or first, unparsed, reply=shown,
                     dropped=dropped)  # fmt: skip


def read_qa(
    llm: LLM | None,
    reply: Completion | None,
    tables: Mapping[str, tuple[str, Table]],
    *,
    task: str,
) -> QAOutcome:
    """`parse_qa` of `reply` (None: the call failed); a reply with no answer in the format is
    reported to `llm` (`LLM.discard`), so a cache under it does not serve it again."""
    outcome = parse_qa(None if reply is None else reply.text, tables, task=task)
    if llm is not None and reply is not None and outcome.reason is not None:
        llm.discard(reply)
    return outcome


def record_no_answer(trace: Trace, outcome: QAOutcome) -> None:
    """A "fallback" trace event with the start of a reply that had no answer (if it had none)."""
    if outcome.reason is not None:
        trace.event("fallback", stage="qa", reason=outcome.reason, reply=outcome.reply)
    elif outcome.unparsed and outcome.answer is not None:
        why = "the reply was not JSON: its answer line (or whole text) was taken"
        trace.event("fallback", stage="qa", reason=why, reply=outcome.reply)
    if outcome.dropped:
        trace.event("fallback", stage="evidence", reason="cited cells not in the table",
                    dropped=outcome.dropped[:20])  # fmt: skip


def _plain_answer(raw: str) -> str | None:
    """The answer of a reply that is not JSON; None when it has none in a usable form."""
    try:
        text = extract_answer(raw)
    except ParseError:
        return None
    return None if len(text) > MAX_PLAIN_ANSWER or is_chatter(text) else text


def _plain_status(text: str) -> str:
    low = text.lower()
    if "insufficient" in low or "not enough" in low:
        return "insufficient"
    if "mismatch" in low:
        return "mismatch"
    return "answered"


def _answer_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return " | ".join(str(v).strip() for v in value if str(v).strip()) or None
    text = str(value).strip()
    return text or None


def _verdict(answer: str | None) -> str | None:
    if answer is None:
        return None
    word = answer.strip().strip(".").lower()
    if word in _TRUE:
        return "true"
    if word in _FALSE:
        return "false"
    return None


def _evidence(
    cited: Any, tables: Mapping[str, tuple[str, Table]]
) -> tuple[list[CellRef], str | None, list[dict[str, str]]]:
    """Cited cells that really exist: (cells, the table most cited, the citations dropped).

    A citation names a table, a column and a value; the cell holding that value in that
    column is ``cited``; when several rows hold it, each is ``ambiguous``."""
    if not isinstance(cited, list):
        return [], None, []
    found: list[CellRef] = []
    dropped: list[dict[str, str]] = []
    for item in cited[:50]:
        if not isinstance(item, dict):
            continue
        key = str(item.get("table", "Table_0"))
        column, value = str(item.get("column", "")).strip(), str(item.get("value", "")).strip()
        cells = _find_cells(*tables[key], column, value) if key in tables else []
        if not cells:
            dropped.append({"table": key[:40], "column": column[:80], "value": value[:80]})
        how: EvidenceHow = "cited" if len(cells) == 1 else "ambiguous"
        found.extend(CellRef(c.table_id, c.row, c.col, c.value, how) for c in cells)
    if not found:
        return [], None, dropped
    counts: dict[str, int] = {}
    for ref in found:
        counts[ref.table_id] = counts.get(ref.table_id, 0) + 1
    return list(dict.fromkeys(found)), max(counts, key=lambda k: counts[k]), dropped


def _find_cells(tid: str, table: Table, column: str, value: str) -> list[CellRef]:
    cols = [j for j, name in enumerate(table.columns) if name.lower() == column.lower()]
    if not cols or not value:
        return []
    low = value.lower()
    return [
        CellRef(tid, table.row_ids[r], table.col_ids[j], row[j])
        for r, row in enumerate(table.body)
        for j in cols
        if row[j].strip().lower() == low
    ][:5]
