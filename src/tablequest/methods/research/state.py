"""Per-question state of DTR's Algorithm 1 and the values it returns (see `method`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablequest.methods.base import TableSet
from tablequest.methods.query import Query
from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.frame import ExecFrame
from tablequest.methods.research.memory import FeedbackRecord, Lesson
from tablequest.methods.research.meta import MetaGraph
from tablequest.methods.research.operations import TableTraits, path_key
from tablequest.methods.research.planner import Candidate, PathStats
from tablequest.methods.research.prompts import Plan
from tablequest.methods.result import Result
from tablequest.table import Table

__all__ = [
    "Comprehension",
    "QuestionRun",
    "Research",
    "copy_stats",
    "feedback_record",
    "one_table",
    "operation_records",
]


@dataclass
class Comprehension:
    """The LLM-free understanding of one table (cached per content hash)."""

    graph: MetaGraph
    frame: ExecFrame
    triples: list[str]
    frame_text: str
    traits: TableTraits


@dataclass
class Research:
    """A question's full outcome: the Result plus the chart PNGs and the report text."""

    result: Result
    figures: list[bytes] = field(default_factory=list)
    report: str = ""


@dataclass
class QuestionRun:
    """Per-question state of Algorithm 1."""

    q: Query
    table_id: str
    table: Table
    comp: Comprehension
    query_type: str
    plan: Plan | None
    candidates: list[Candidate]
    lessons: list[Lesson]
    outcomes: list[PathOutcome] = field(default_factory=list)
    records: list[FeedbackRecord] = field(default_factory=list)
    learned: list[Lesson] = field(default_factory=list)
    replans: int = 0
    stop: str | None = None
    sandbox_error: str | None = None
    direct_cut: dict[str, int] | None = None
    """Set when the non-code fallback showed the model only part of the table."""
    direct_unformatted: str | None = None
    """The start of the non-code fallback's reply when it had no ``Final Answer:`` line."""
    context: int = 0
    """Version of the lessons the step prompts show; +1 whenever they change."""
    batch: list[Candidate] = field(default_factory=list)
    """The current iteration's selected paths still to run (selection=repeat)."""
    iteration: int = 0
    experience: list[dict[str, Any]] = field(default_factory=list)
    """One entry per reflection: its source ("llm" | "template"), why, refused lessons."""
    values: Any = None
    """The frame's `abstraction.ValueIndex`, built when a model lesson is first checked."""


def one_table(source: Any) -> tuple[str, Table]:
    """(table id, table) of a one-table source: a TableSet or a bare Table."""
    if isinstance(source, Table):
        return "table", source
    if isinstance(source, TableSet):
        return source.one("research")
    raise TypeError(f"method research answers from a TableSet or a Table, not {type(source)!r}")


def copy_stats(stats: PathStats | None) -> PathStats:
    return PathStats(stats.r_hat, stats.n) if stats else PathStats()


def feedback_record(outcome: PathOutcome) -> FeedbackRecord:
    """The memory record of one executed path."""
    f = outcome.feedback
    return FeedbackRecord(
        path=path_key(outcome.path), f_exec=f.f_exec, f_time=f.f_time, f_type=f.f_type,
        reward=outcome.reward, failed_op=outcome.failed_op, error=outcome.error_kind,
    )  # fmt: skip


def operation_records(outcome: PathOutcome) -> list[FeedbackRecord]:
    """The memory records of one executed path, one per executed operation (Alg. 1 line 19:
    D ← D ∪ {(m, context, o, r)}), under the path's key, so that folding them with the
    incremental rule gives the R̂ and N the question reached (line 20). The operation that
    ended the path carries the path's failing operation and error class."""
    out = []
    last = len(outcome.op_feedback)
    for i, (f, r) in enumerate(zip(outcome.op_feedback, outcome.op_rewards, strict=True), 1):
        ended = i == last and outcome.error_kind is not None
        out.append(FeedbackRecord(
            path=path_key(outcome.path), f_exec=f.f_exec, f_time=f.f_time, f_type=f.f_type,
            reward=r, failed_op=outcome.failed_op if ended else None,
            error=outcome.error_kind if ended else None,
        ))  # fmt: skip
    return out
