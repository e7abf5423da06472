"""The Result every method returns, the details other layers read, and `failed`.

The Result carries the answer, a status, the cells that support it, the tables the method
consulted (ids; `sources` maps them to the user's paths), usage and the trace path;
`Result.to_json()` is the ``ask --json`` payload for every method. `details` stays an open
dict (each method records its own keys); the keys the CLI and the web read are listed with
their types in `ResultDetails`, and readers go through `Result.typed_details`. Failures are
Results, never exceptions: `failed` builds every "failed" Result that is not a method's own
answer (an unexpected error, no model, a broken route).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, cast

from tablequest.llm import UsageTotals
from tablequest.methods.lineage import cell_json
from tablequest.table import CellRef, Table
from tablequest.trace import Trace

__all__ = [
    "CandidateRecord",
    "Result",
    "ResultDetails",
    "RouteRecord",
    "Status",
    "Verified",
    "failed",
]

Status = Literal["answered", "insufficient", "failed"]
Verified = Literal["verified", "unverified", "contradicted"]
"""Whether an answered result recomputes from its evidence, LLM-free (`methods.recompute.verify`):
``verified`` (it does), ``unverified`` (no evidence, or only matched, ambiguous or untracked cells),
``contradicted`` (the evidence gives another value). None on a result that is not answered."""


class CandidateRecord(TypedDict, total=False):
    """One candidate table of an LLM-free search (``details["candidates"]``)."""

    table_id: str
    score: float
    preview: str
    """The table's preview around the question's words (plain text, rich markup escaped)."""
    matched_rows: list[int]
    """Body row ids the question's words match (the web highlights them)."""


class RouteRecord(TypedDict, total=False):
    """One routing decision of ``auto`` (``details["routes"]``)."""

    table_id: str
    route: str
    """The rule that held: big | analytical | messy | lookup | default."""
    method: str
    status: str
    """The routed method's status (absent in an LLM-free preview: nothing ran)."""
    reason: str


class ResultDetails(TypedDict, total=False):
    """The `Result.details` keys that readers outside the method (the CLI, the web, the
    Result itself) rely on, with their types. Methods record more keys (their own trace of
    the run); those are shown as-is in ``ask --json`` and read by nobody else."""

    reason: str
    """Why the status is not "answered" (`Result.reason`)."""
    error: str
    """The unexpected error a failed run ended with ("Type: message")."""
    action_counts: dict[str, int]
    """LLM calls per kind and agent decisions (``ask --json``'s ``action_counts``)."""
    partial_answer: str
    """An answer reached before the question's deadline or model stopped it."""
    stopped_by: Literal["model", "deadline"]
    """What ended the question before the method could: its model proved unreachable
    (``model``), or its deadline passed (``deadline``) — `Query.finish`."""
    config: str
    """The method's configuration label (CLI answer panel title)."""
    encoder: str
    """The dense encoder that ran (TableRAG; CLI ``encoder:`` line)."""
    candidates: list[CandidateRecord]
    """LLM-free search hits when no model ran (CLI previews, web candidate cards)."""
    routes: list[RouteRecord]
    """``auto``'s route per candidate table (CLI ``route:`` lines, web route list)."""
    selected: list[str]
    """The tables TableSeek's refinement selected (``auto`` over a corpus too)."""
    breakdown: dict[str, str]
    """What the answer went through: ``auto``'s route, DTR's query type and structure."""
    retrieval: dict[str, Any]
    """TableRAG's LLM-free retrieval (queries, schema entries, cells; CLI table)."""
    report: str
    """DTR's Markdown report (the web renders it)."""
    charts: list[str]
    """Paths of DTR's saved chart PNGs (the web serves them by index)."""
    chart_data: dict[str, Any]
    """The data behind DTR's chart, as the generated code printed it."""
    direct_table_cut: dict[str, int]
    """Rows and characters of the table DTR's non-code fallback showed the model."""
    dropped_patterns: list[dict[str, str]]
    """TableSeek patterns left out of Eq. 1 for running past their time budget, and why."""
    conversation: dict[str, Any]
    """The conversation the question was asked in (`methods.conversation`): ``id``,
    ``turn``, ``question`` as asked, ``rewritten_question`` (None: asked as it was),
    ``table_ids`` preferred."""


@dataclass
class Result:
    """What a method found. `tables_consulted` are the tables given to QA, in order.

    `details` is the method's open record of its run; the keys other layers read are typed
    in `ResultDetails` (read them through `typed_details`)."""

    answer: str | None
    status: Status
    tables_consulted: list[str] = field(default_factory=list)
    final_table: str | None = None
    evidence: list[CellRef] = field(default_factory=list)
    steps: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)
    trace_path: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    method: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict, repr=False, compare=False)
    """The final table's content, when the caller could give it (for showing evidence)."""
    items: list[str] = field(default_factory=list)
    """The answer as a list of items, split by the method in its own prompt's list format
    (`Query.finish` with the method's `separators`); empty when there is no answer."""
    verified: Verified | None = None
    """Whether the answer recomputes from its evidence (`Verified`); None unless answered."""
    verification: str | None = None
    """Why `verified` says what it says, in one line ("205 equals its cell (row 3, Q3)")."""

    def _repr_html_(self) -> str:
        from tablequest.display import result_html  # notebooks only: loaded on first display

        return result_html(self)

    def _repr_markdown_(self) -> str:
        from tablequest.display import result_markdown

        return result_markdown(self)

    @property
    def typed_details(self) -> ResultDetails:
        """`details` seen through `ResultDetails` (the same dict, for typed readers)."""
        return cast(ResultDetails, self.details)

    @property
    def reason(self) -> str | None:
        """Why the status is not "answered" (when the method said)."""
        value = self.details.get("reason") or self.details.get("error")
        return None if value is None else str(value)

    def to_json(self) -> dict[str, Any]:
        """The ``ask --json`` payload (the same shape for every method)."""

        def ref(tid: str) -> dict[str, Any]:
            return {"table_id": tid, "source": self.sources.get(tid)}

        extra = {
            k: v for k, v in self.details.items() if k not in ("reason", "error", "action_counts")
        }
        conversation = self.details.get("conversation")
        asked = (
            {"conversation_id": conversation.get("id"),
             "rewritten_question": conversation.get("rewritten_question")}
            if isinstance(conversation, dict) else {}
        )  # fmt: skip
        return {
            **asked,
            "answer": self.answer,
            "items": list(self.items),
            "status": self.status,
            "method": self.method,
            "reason": self.reason,
            "tables_consulted": [ref(t) for t in self.tables_consulted],
            "final_table": ref(self.final_table) if self.final_table else None,
            "verified": self.verified,
            "verification": self.verification,
            "evidence": [cell_json(c) for c in self.evidence],
            "steps": self.steps,
            "action_counts": dict(self.details.get("action_counts", {})),
            "usage": self.usage.to_dict(),
            "trace": self.trace_path,
            "details": extra,
        }


def failed(
    reason: str,
    *,
    trace: Trace | None = None,
    tables_consulted: Sequence[str] = (),
    method: str | None = None,
    **details: Any,
) -> Result:
    """A "failed" Result with its reason (and the trace path, when there is one): the one
    builder of the failed Results no method answered (an unexpected error, no model, a
    routed method that broke). `details` are further `ResultDetails` keys."""
    path = str(trace.path) if trace is not None and trace.path else None
    return Result(
        answer=None,
        status="failed",
        tables_consulted=list(tables_consulted),
        trace_path=path,
        details={"reason": reason, **details},
        method=method,
    )
