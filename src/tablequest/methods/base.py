"""The Method interface, the sources a method answers from, and the Result it returns.

A method answers a question from a source:

- a `Corpus` (one store or a sharded corpus, `tablequest.corpus.storage.corpus`: TableSeek and
  the retrieve-then-QA baselines pick tables themselves),
- a `TableSet` (specific tables: a table file read on the fly, ``--table-id`` picks, or a
  benchmark's gold tables; TableRAG, TabScope and DTR answer from its one table, Direct QA
  from all of them),
- or nothing (the no-table baseline).

Which one a method takes is declared when it is registered (`MethodSpec.input`); the one way
in (`tablequest.methods.run.ask`) and the eval runner build the right source.

The Result carries the answer, a status, the cells that support it, the tables the method
consulted (ids; `sources` maps them to the user's paths), usage and the trace path;
`Result.to_json()` is the ``ask --json`` payload for every method.

The method contract (every registered method, built-in or plugin):

- **One constructor.** The registry builds a method as ``factory(options, context)``
  (`MethodSpec.build`); a method class takes the same two arguments,
  ``Cls(options=None, context=None)`` (None: the options' defaults, ``MethodContext()``), so a
  class is its own factory. Any further constructor argument is keyword-only and optional
  (test doubles: an encoder, a sandbox, a store).
- **One interface** (`Method`): ``answer(question, source, *, task, budget, trace) -> Result``
  and ``close()``; a question starts with `start_query` and ends with `Query.finish`.
- **Optional capabilities, typed** (checked with ``isinstance``, never by attribute name):
  `Previewing` (an LLM-free ``preview`` the one way in runs without a model), `HasRetriever`
  (a corpus method's table retriever) whose retriever may be `Priming` (its encoder encodes
  the corpus once and the questions in one batch, before an evaluation run).
- **Typed details**: `Result.details` stays an open dict (each method records its own
  keys); the keys the CLI and the web read are listed with their types in `ResultDetails`,
  and readers go through `Result.typed_details`.
- **Failures** are Results, never exceptions: `failed` builds every "failed" Result that is
  not a method's own answer (an unexpected error, no model, a broken route).
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, cast, runtime_checkable

from tablequest.errors import BadValue
from tablequest.llm import LLM, Deadline, Instrumented, StepBudget, UsageMeter, UsageTotals
from tablequest.methods.evidence import cell_json, verify_cells
from tablequest.table import CellRef, Table
from tablequest.trace import Trace

if TYPE_CHECKING:
    from tablequest.corpus import Corpus, EncoderSettings, Store
    from tablequest.llm import LLMConfig
    from tablequest.sandbox import Sandbox
    from tablequest.settings import Settings

Status = Literal["answered", "insufficient", "failed"]
Verified = Literal["verified", "unverified", "contradicted"]
"""Whether an answered result recomputes from its evidence, LLM-free (`methods.evidence.verify`):
``verified`` (it does), ``unverified`` (no evidence, or only ambiguous or untracked cells),
``contradicted`` (the evidence gives another value). None on a result that is not answered."""
Task = Literal["tableqa", "fact_verification"]
Input = Literal["corpus", "table", "tables", "none", "any"]
"""What a method answers from: a Corpus, one table, one or more tables, nothing, or "any" (a
Corpus when the source is one, a TableSet when it is a table file or --table-id picks)."""


@dataclass
class TableSet:
    """Specific tables to answer from, as (table id, Table) pairs.

    Attributes:
        tables: The tables, in the order given.
        store: The corpus they came from (methods cache embeddings in the store holding
            the table, `Corpus.locate`), if any.
    """

    tables: list[tuple[str, Table]]
    store: Corpus | None = None

    @property
    def ids(self) -> list[str]:
        return [tid for tid, _ in self.tables]

    def store_of(self, table_id: str | None) -> Store | None:
        """The store holding `table_id` (of a sharded corpus: its shard), when the tables
        came from a corpus; where a method reads the table's relation or caches for it."""
        if self.store is None or table_id is None:
            return None
        return self.store.locate(table_id)

    def one(self, method: str) -> tuple[str, Table]:
        """The single table of a one-table method; `BadValue` naming the fix otherwise."""
        if len(self.tables) != 1:
            raise BadValue(
                f"method {method} answers from one table, got {len(self.tables)}: "
                "pass --table-id ID (`tablequest tables --store STORE` lists the ids)"
            )
        return self.tables[0]


@dataclass
class MethodContext:
    """What a method is built with besides its options.

    Attributes:
        llm: The model (wrapped by the caller: cache, eval gate); None for LLM-free use.
        usage: The meter every call of every question rolls up into.
        llm_config: Where the model lives (URL, key): the ``auto`` encoder asks its server
            for embeddings, rerank its ``/v1/rerank``.
        cache: Whether caches (LLM responses, embeddings) may be used.
        cache_dir: Where on-disk caches live (None: the default cache directory).
        sandbox: A shared sandbox for generated code (None: the method starts its own).
        deadline: Seconds per question for all its LLM calls and retries; None takes
            `llm_config.deadline` (600 s by default; 0 = no deadline); a `Deadline` is shared
            as is (a router passes its question's deadline to the methods it runs).
        state_dir: A folder for what a method learns during a run when its source is
            read-only (an evaluation run: beside the run file, so runs do not share or
            contaminate each other's learning); None: the method's own default place.
        settings: The settings the entry point loaded (`tablequest.settings.Settings`):
            embeddings, sandbox isolation, the config files of ``[methods.NAME]``; None (a
            direct library call): the environment's (`from_env`).
    """

    llm: LLM | None = None
    usage: UsageMeter = field(default_factory=UsageMeter)
    llm_config: LLMConfig | None = None
    cache: bool = True
    cache_dir: Path | None = None
    sandbox: Sandbox | None = None
    deadline: float | Deadline | None = None
    state_dir: Path | None = None
    settings: Settings | None = None

    def encoder_settings(self, url: str | None = None, model: str | None = None) -> EncoderSettings:
        """Where a dense encoder embeds: `url` (a method's ``embed_url``), else the
        ``[embeddings]`` URL, else the model's (`EmbeddingsSettings.endpoint`, the one rule);
        `model`, else the ``[embeddings]`` model; the device when a flag demanded one."""
        from tablequest.corpus import EncoderSettings
        from tablequest.settings import EmbeddingsSettings, from_env

        if self.settings is not None:
            return EncoderSettings.from_settings(
                self.settings, self.llm_config, url=url, model=model
            )
        embeddings = from_env(EmbeddingsSettings)
        endpoint, key = embeddings.endpoint(self.llm_config, url)
        return EncoderSettings(endpoint, model or embeddings.model, key)

    def new_sandbox(self) -> Sandbox:
        """A private sandbox with the loaded ``[sandbox] isolation`` (without settings: its
        own resolution, `Sandbox()`)."""
        from tablequest.sandbox import Sandbox

        return Sandbox.from_settings(self.settings)

    def question_deadline(self) -> Deadline:
        """The question's deadline: a given `Deadline` as is (a method that runs others
        shares its own), else a fresh one starting now (``Deadline(None)``: no limit)."""
        if isinstance(self.deadline, Deadline):
            return self.deadline
        seconds = self.deadline
        if seconds is None and self.llm_config is not None:
            seconds = self.llm_config.deadline
        return Deadline(seconds or None)


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


@runtime_checkable
class Method(Protocol):
    """One small interface: answer a question from a source within a budget of LLM calls."""

    name: str

    def answer(
        self,
        question: str,
        source: Any,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result: ...

    def close(self) -> None: ...


@runtime_checkable
class Previewing(Protocol):
    """A method with an LLM-free ``preview`` (what it would do, without a model): the one
    way in (`tablequest.methods.run.ask`) runs it when no model is configured."""

    def preview(
        self, question: str, source: Any, *, task: Task = "tableqa", trace: Trace | None = None
    ) -> Result: ...


@runtime_checkable
class Priming(Protocol):
    """A retriever whose `encoder` encodes the corpus once and whose ``prime`` encodes many
    questions in one batch (dense, hybrid, rerank), before an evaluation run."""

    encoder: Any

    def prime(self, questions: Sequence[str]) -> None: ...


@runtime_checkable
class HasRetriever(Protocol):
    """A corpus method that ranks tables with a `corpus.retrievers` retriever (the
    retrieve-then-QA baselines); it may be `Priming`."""

    retriever: Any


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


_CITATION = re.compile(r"\s*\[[^\]]*\]\s*$")
_SEP = "\x00"  # joins a table's cells so that one pass normalizes them all
_CITATIONS = re.compile(r"\s*\[[^\]\x00]*\]\s*(?=\x00|\Z)")
_NON_WORDS = re.compile(r"[^\w.%\x00-]+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # 1,024 → 1024 (before commas become spaces)


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _THOUSANDS.sub("", _CITATION.sub("", text))
    return " ".join(re.sub(r"[^\w.%-]+", " ", text.lower()).split())


def _norm_all(cells: list[str]) -> list[str]:
    """`_norm` of every cell, in a few passes over the joined text (the same result: a
    table's cells cost one regex pass instead of four calls each)."""
    if not cells:
        return []
    text = _SEP.join(cells)
    if text.count(_SEP) != max(len(cells) - 1, 0):  # a cell holds the separator itself
        return [_norm(c) for c in cells]
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    text = _NON_WORDS.sub(" ", _THOUSANDS.sub("", _CITATIONS.sub("", text)).lower())
    return [" ".join(part.split()) for part in text.split(_SEP)]


def locate_evidence(table: Table, table_id: str, answer: str, *, limit: int = 20) -> list[CellRef]:
    """Body cells whose text equals one of the answer's items (split on '|' and ', ').

    An LLM-free evidence locator (ours): used when the model cites no cells. Numbers are
    compared after removing thousands separators.
    """
    items = {_norm(a) for a in re.split(r"\s*\|\s*|,\s+|;\s*", answer) if a.strip()}
    items.discard("")
    found: list[CellRef] = []
    if not items:
        return found
    norms = iter(_norm_all([value for row in table.body for value in row]))
    for r, row in enumerate(table.body):
        for c, value in enumerate(row):
            norm = next(norms)
            if norm and norm in items:
                found.append(CellRef(table_id, table.row_ids[r], table.col_ids[c], value))
                if len(found) >= limit:
                    return found
    return found


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
