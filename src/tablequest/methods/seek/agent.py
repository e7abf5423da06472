"""TableSeek, Algorithm 1 of the TableSeek paper (Tian et al., 2026).

    P ← GeneratePatterns(q, τ); s ← 1; R ← Rank(S, P)
    while s < S_max − 1:  previews of top-n; δ ← RefineDecision; s ← s+1
        select → K ← δ.tables; break | regenerate → P ← δ.patterns; R ← Rank(S, P) | none → break
    if K empty: K ← top-K_fb of R
    ŷ ← QA(q, C_K); s ← s+1
    for T in R \\ K while ŷ unsatisfactory and s < S_max: ŷ ← QA(q, C_T); s ← s+1

Every LLM call of the query, repair requests included, spends one step of S_max; the last
step is reserved for QA (`StepBudget(reserve=1)`), so when refinement exhausts the budget QA
runs on the current top-1. The agent sees only table content under temporary ids (`Table_i`,
new per round and per QA call), never paths, file names or formats.

Choices (ours, the paper is silent): an unparsable reply gets one repair request when the
budget allows, then a documented fallback (content-word patterns; refine-none; QA reply text
taken as the answer when short; a QA reply with no answer in that form — long prose, a
greeting — is unsatisfactory, so Algorithm 1's fallback tries the next table, and when it is
the last QA the status is "failed" with the reason "the model's reply had no answer in the
expected format", its start in the trace: `seek.qa`). A select naming only unknown ids
counts as refine-none. A fact check whose every QA call said "mismatch" (or
"insufficient") has no verdict from the model; it is answered "false", the paper's rule for
unverifiable claims in its standalone fact-verification prompt (Table 23), with no evidence
cells and a ``fallback`` trace event.
With a rerank strategy, R is reordered by the model's ranking (unknown ids ignored, missing
ones kept in grep order) and its top table goes to QA. An empty R does not end the run
(Algorithm 1 does not): refinement still runs, with no previews, and may regenerate patterns
while budget remains; with R still empty the status is "insufficient" without a QA call.

The budget is the question's ``--steps`` (`SeekConfig.max_steps` by default): S_max.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tablequest.corpus import Corpus, grep_ranking, question_patterns, text_format
from tablequest.llm import (
    LLM,
    QA,
    Completion,
    LLMError,
    Message,
    ParseError,
    StepBudget,
    UsageMeter,
    ask_json,
    extract_json,
)
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.query import Query, start_query
from tablequest.methods.result import Result, Status
from tablequest.methods.seek import prompts
from tablequest.methods.seek.config import SeekConfig
from tablequest.methods.seek.qa import QAOutcome, qa_context, read_qa, record_no_answer
from tablequest.table import Table, preview
from tablequest.trace import Trace

MAX_PATTERNS = 20
MAX_PATTERN_CHARS = 200


@dataclass
class _Run:
    """State of one query."""

    question: str
    task: Task
    budget: StepBudget
    trace: Trace
    llm: LLM
    spent_before: dict[str, int]
    counts: Counter[str] = field(default_factory=Counter)
    rounds_top1: list[str | None] = field(default_factory=list)
    patterns_history: list[list[str]] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    """Patterns left out of Eq. 1 for running past their time budget, and why."""
    qa_reason: str | None = None
    """Why the last QA reply gave no answer (`QAOutcome.reason`), None when it gave one."""

    def action_counts(self) -> dict[str, int]:
        """Calls per kind (pattern_gen, refine, repair, qa) and refine decisions."""
        calls = {k: n - self.spent_before.get(k, 0) for k, n in self.budget.spent.items()}
        merged = {k: n for k, n in calls.items() if n} | dict(self.counts)
        return merged


@dataclass
class Selection:
    """What refinement chose: tables for QA, the ranked list R, the last patterns."""

    selected: list[str]
    ranked: list[str]
    patterns: list[str]
    run: _Run
    query: Query

    def action_counts(self) -> dict[str, int]:
        return self.run.action_counts()


class TableSeek:
    """Agentic grep search over a corpus, then QA with an answerability check.

    Args:
        options: `SeekConfig` (the paper's defaults when None).
        context: The model and the meter every question's calls roll up into.
    """

    name = "seek"

    def __init__(
        self, options: SeekConfig | None = None, context: MethodContext | None = None
    ) -> None:
        self.config = options or SeekConfig()
        self.context = context or MethodContext()

    @property
    def usage(self) -> UsageMeter:
        return self.context.usage

    def close(self) -> None:
        """Nothing to release (the store and the model belong to the caller)."""

    # -- public ------------------------------------------------------------------------
    def answer(
        self,
        question: str,
        source: Corpus,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """Run Algorithm 1 for `question` over the store `source` (budget: S_max calls)."""
        selection = self.select(question, source, task=task, budget=budget, trace=trace)
        run, query = selection.run, selection.query
        result = self._answer(run, source, selection.ranked, selection.selected, selection.patterns)
        if result.status == "failed" and run.qa_reason:
            result.details["reason"] = run.qa_reason
        result = query.finish(result, self.name)
        result.details.update(
            action_counts=run.action_counts(),
            rounds_top1=run.rounds_top1,
            patterns=run.patterns_history,
            selected=selection.selected,
            config=self.config.label(),
        )
        if run.dropped:
            result.details["dropped_patterns"] = [
                {"pattern": p, "reason": r} for p, r in run.dropped.items()
            ]
        run.trace.event(
            "decision",
            stage="end",
            status=result.status,
            answer=result.answer,
            steps=result.steps,
            tables_consulted=result.tables_consulted,
        )
        return result

    def select(
        self,
        question: str,
        source: Corpus,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Selection:
        """Algorithm 1 up to QA: patterns, ranking, refinement → the tables to answer from.

        Keeps one step of `budget` for QA (its `reserve`). The router (``auto``) answers the
        selected tables with the method each one needs instead of this QA.
        """
        cfg = self.config
        query = start_query(
            self.context, budget=budget, trace=trace, default_steps=cfg.default_steps()
        )
        if query.llm is None:
            raise ValueError("TableSeek needs an LLM")
        query.budget.reserve = min(1, query.budget.max_steps)
        run = _Run(question, task, query.budget, query.trace, query.llm, dict(query.budget.spent))
        run.trace.event(
            "decision", stage="start", method="seek", config=cfg.label(), task=task,
            question=question, steps=query.budget.max_steps,
        )  # fmt: skip
        patterns = self._generate_patterns(run)
        ranked = self._rank(run, source, patterns)
        selected: list[str] = []
        if cfg.refine:
            selected, ranked, patterns = self._refine(run, source, ranked, patterns)
        if not selected:
            selected = ranked[: cfg.fallback_top_k]
        return Selection(selected, ranked, patterns, run, query)

    def answer_tables(
        self,
        question: str,
        source: TableSet,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """TableSeek's QA (with its answerability check) over given tables: one call."""
        query = start_query(self.context, budget=budget, trace=trace, default_steps=1)
        if query.llm is None:
            raise ValueError("TableSeek needs an LLM")
        run = _Run(question, task, query.budget, query.trace, query.llm, dict(query.budget.spent))
        outcome = self._qa(run, source.tables, [])
        ids = source.ids
        result = Result(
            answer=outcome.answer,
            status=_status(outcome),
            tables_consulted=ids,
            final_table=outcome.final_table or (ids[0] if ids else None),
            evidence=outcome.evidence,
            details={"action_counts": run.action_counts()},
        )
        if result.status != "answered":
            result.details["reason"] = outcome.reason or f"QA said {outcome.status}"
        return query.finish(result, self.name)

    # -- LLM calls ---------------------------------------------------------------------
    def _call(self, run: _Run, kind: str, messages: list[Message]) -> Completion | None:
        """One budgeted call; None when the budget forbids it or the model failed."""
        if not run.budget.can_spend(kind):
            return None
        run.budget.spend(kind)
        try:
            completions = run.llm.chat(
                messages, temperature=self.config.temperature, max_tokens=self.config.max_tokens
            )
        except LLMError as exc:
            run.trace.event("fallback", stage=kind, reason=f"{type(exc).__name__}: {exc}")
            return None
        return completions[0]

    def _ask_json(
        self, run: _Run, kind: str, messages: list[Message], validate: Callable[[Any], Any]
    ) -> Any | None:
        """Call, parse and validate with one repair request (`ask_json`); None when no
        usable value came back or the model failed (the caller applies its fallback)."""

        def parse(text: str) -> Any:
            try:
                return validate(extract_json(text))
            except ParseError:
                raise
            except ValueError as exc:
                raise ParseError(str(exc), text) from None

        return ask_json(
            run.llm,
            messages,
            parse,
            repair_prompt=prompts.REPAIR,
            budget=run.budget,
            kind=kind,
            repair_kind="repair",
            trace=run.trace,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
        ).value

    # -- stages ------------------------------------------------------------------------
    def _generate_patterns(self, run: _Run) -> list[str]:
        messages = prompts.pattern_messages(run.question, run.task)
        value = self._ask_json(run, "pattern_gen", messages, _validate_patterns)
        if value is None:
            value = question_patterns(run.question)
            run.trace.event(
                "fallback", stage="pattern_gen", reason="no usable patterns", patterns=value
            )
        run.patterns_history.append(value)
        run.trace.event("decision", stage="patterns", patterns=value)
        return list(value)

    def _rank(self, run: _Run, store: Corpus, patterns: Sequence[str]) -> list[str]:
        top, gone = grep_ranking(store, patterns, self.config.rank_depth)
        ranked = [h.table_id for h in top]
        run.rounds_top1.append(ranked[0] if ranked else None)
        dropped = [{"pattern": d.pattern, "reason": d.reason} for d in gone]
        run.dropped.update((d.pattern, d.reason) for d in gone)
        run.trace.event(
            "rank",
            patterns=list(patterns),
            hits=[{"table_id": h.table_id, "score": round(h.score, 4)} for h in top],
            **({"dropped": dropped} if dropped else {}),
        )
        return ranked

    def _previews(
        self, run: _Run, store: Corpus, ids: Sequence[str], patterns: Sequence[str]
    ) -> tuple[str, dict[str, str]]:
        cfg = self.config
        blocks, mapping = [], {}
        for i, tid in enumerate(ids):
            anon = f"Table_{i}"
            mapping[anon] = tid
            table = store.get(tid)
            if cfg.evidence == "full":
                text = store.text(tid)
            else:
                shown = preview(
                    table,
                    patterns,
                    fmt=text_format(table),  # type: ignore[arg-type]
                    head_chars=cfg.preview_chars,
                    max_rows=cfg.max_matched_rows,
                    rows_per_pattern=cfg.rows_per_pattern,
                    line_chars=cfg.max_line_chars,
                    match_only=cfg.match_only_refine,
                )
                text = shown.text
                run.dropped.update((d.pattern, d.reason) for d in shown.dropped)
            blocks.append(f"[{anon}]\n{text}")
        run.trace.event("preview", tables=mapping, chars=sum(len(b) for b in blocks))
        if not blocks:
            return "(no table matches the current patterns)", mapping
        return "\n\n".join(blocks), mapping

    def _refine(
        self, run: _Run, store: Corpus, ranked: list[str], patterns: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        cfg = self.config
        while run.budget.can_spend("refine"):
            candidates = ranked[: cfg.n_candidates]
            text, mapping = self._previews(run, store, candidates, patterns)
            messages = prompts.refine_messages(
                run.question,
                run.task,
                text,
                patterns,
                max_select=cfg.max_select_tables,
                rerank=cfg.rerank,
                allow_select=cfg.select,
                allow_regenerate=cfg.regenerate,
                example_ids=list(mapping),
            )
            decision = self._ask_json(run, "refine", messages, _validate_decision)
            action = decision["action"] if decision else "none"
            if decision is None:
                run.trace.event("fallback", stage="refine", reason="no usable decision → none")
            if action == "regenerate" and cfg.regenerate:
                run.counts["refine_regenerate"] += 1
                patterns = decision["patterns"] if decision else patterns
                run.patterns_history.append(patterns)
                run.trace.event("decision", stage="refine", action="regenerate", patterns=patterns)
                ranked = self._rank(run, store, patterns)
                continue
            if action in ("select", "rerank") and cfg.select and decision:
                chosen, ranked = self._apply_selection(run, decision, mapping, ranked)
                if chosen:
                    return chosen, ranked, patterns
            run.counts["refine_none"] += 1
            run.trace.event(
                "decision",
                stage="refine",
                action="none",
                requested=action if action != "none" else None,
            )
            break
        return [], ranked, patterns

    def _apply_selection(
        self, run: _Run, decision: dict[str, Any], mapping: dict[str, str], ranked: list[str]
    ) -> tuple[list[str], list[str]]:
        cfg = self.config
        key = "ranking" if decision["action"] == "rerank" else "selected_tables"
        named = [str(x).strip() for x in decision.get(key, [])]
        valid = [mapping[n] for n in dict.fromkeys(named) if n in mapping]
        unknown = [n for n in named if n not in mapping]
        if unknown:
            run.trace.event(
                "error", stage="refine", problem="unknown table ids ignored", ids=unknown
            )
        if decision["action"] == "rerank" and cfg.rerank:
            run.counts["refine_rerank"] += 1
            rest = [t for t in ranked if t not in valid]
            ranked = valid + rest
            chosen = ranked[:1] if valid else []
        else:
            run.counts["refine_select"] += 1
            chosen = valid[: cfg.max_select_tables]
        run.trace.event(
            "decision", stage="refine", action=decision["action"], selected=chosen, named=named
        )
        return chosen, ranked

    def _answer(
        self,
        run: _Run,
        store: Corpus,
        ranked: list[str],
        selected: list[str],
        patterns: list[str],
    ) -> Result:
        if not selected:
            run.trace.event("fallback", stage="qa", reason="no candidate table matched")
            return Result(answer=None, status="insufficient")
        consulted: list[str] = []
        outcome = self._qa(run, [(t, store.get(t)) for t in selected], patterns)
        consulted.extend(selected)
        final = outcome.final_table or selected[0]
        if self.config.fallback:
            for tid in (t for t in ranked if t not in selected):
                if outcome.satisfactory or not run.budget.can_spend(QA):
                    break
                run.trace.event(
                    "fallback", stage="qa", reason=f"QA said {outcome.status}", next_table=tid
                )
                outcome = self._qa(run, [(tid, store.get(tid))], patterns)
                consulted.append(tid)
                final = outcome.final_table or tid
        if run.task == "fact_verification" and outcome.status in ("mismatch", "insufficient"):
            # no table let QA decide: unverifiable counts as false (Table 23's rule)
            run.trace.event(
                "fallback", stage="qa", reason=f"QA said {outcome.status} on every table",
                verdict="false",
            )  # fmt: skip
            outcome = QAOutcome("answered", "false", [], outcome.final_table)
        return Result(
            answer=outcome.answer,
            status=_status(outcome),
            tables_consulted=consulted,
            final_table=final,
            evidence=outcome.evidence,
        )

    def _qa(self, run: _Run, given: Sequence[tuple[str, Table]], patterns: list[str]) -> QAOutcome:
        cfg = self.config
        tables = {f"Table_{i}": pair for i, pair in enumerate(given)}
        context = qa_context(
            tables,
            patterns=patterns if cfg.match_only_qa else None,
            config=cfg,
        )
        messages = prompts.qa_messages(run.question, run.task, context, standalone=False)
        reply = self._call(run, QA, messages)
        outcome = read_qa(run.llm, reply, tables, task=run.task)  # unusable: leaves the cache
        run.qa_reason = outcome.reason
        record_no_answer(run.trace, outcome)
        run.trace.event(
            "qa",
            tables=[tid for tid, _ in tables.values()],
            status=outcome.status,
            answer=outcome.answer,
        )
        return outcome


def _status(outcome: QAOutcome) -> Status:
    if outcome.satisfactory:
        return "answered"
    return "failed" if outcome.status == "failed" else "insufficient"


def _validate_patterns(value: Any) -> list[str]:
    # Only the requested object form: a bare list is often a prompt echo ("[INST]").
    items = value.get("patterns") if isinstance(value, dict) else None
    if not isinstance(items, list):
        raise ValueError('expected {"patterns": [...]}')
    patterns = [str(p).strip()[:MAX_PATTERN_CHARS] for p in items if str(p).strip()]
    patterns = list(dict.fromkeys(patterns))[:MAX_PATTERNS]
    if not patterns:
        raise ValueError("the pattern list is empty")
    return patterns


def _validate_decision(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError('expected an object like {"action": ...}')
    action = str(value.get("action", "")).strip().lower()
    if action not in ("select", "regenerate", "none", "rerank"):
        raise ValueError(f"unknown action {action!r}")
    out: dict[str, Any] = {"action": action}
    if action == "regenerate":
        out["patterns"] = _validate_patterns(value)
    elif action in ("select", "rerank"):
        key = "ranking" if action == "rerank" else "selected_tables"
        ids = value.get(key) or value.get("selected_tables") or value.get("ranking") or []
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, list):
            raise ValueError(f"{key} must be a list of table ids")
        out[key] = ids
    return out
