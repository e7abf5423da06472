"""DTR, Algorithm 1 of papers/dtr.txt (appendix A; SEEDS.md §4), over one table.

    T_meta ← comprehension of T (meta graph, frame)                 (LLM-free, §3.1)
    M_q ← MOD(q, T_meta)                                             (1 call, §3.2)
    Π ← K candidate paths under the operation map                    (§3.2)
    while not converged and budget remains:                          (§3.3–3.5)
        π* ← argmax E(π) over unexecuted paths that fit the budget   (Eq. 1)
        execute π* operation by operation ([THINK]/[CODE])           (L calls)
        f(π*) → r = φ(f); update R̂, N                               (Eq. 4, Alg. 1 l. 20 / Eq. 5)
        if failed or invalid: lessons → replan (revise Π)            (Alg. 1 l. 21–23)
    a* ← majority vote over format-valid answers                     (Eq. 6)

Choices (ours): convergence is k format-valid answers with a strict majority (one more path
breaks a tie); paths that do not fit the remaining budget are skipped; when no path gives a
valid answer, one non-code call answers from the table text (``fallback_direct``, the paper's
"non-code mode" for RealHiTBench) using the QA reserve; experience is written to the memory
once per question. Status: "answered" (vote or fallback), "failed" (no model, sandbox or model
errors only), else "insufficient".
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.llm.base import LLMError
from tablequest.llm.parse import ParseError, extract_answer
from tablequest.llm.repair import ask_with_repair
from tablequest.methods.base import (
    MethodContext,
    Query,
    Result,
    Status,
    TableSet,
    Task,
    start_query,
)
from tablequest.methods.research.execute import PathOutcome, StepContext, Workspace, run_path
from tablequest.methods.research.feedback import guess_query_type, locate
from tablequest.methods.research.frame import ExecFrame, build_frame, describe_frame
from tablequest.methods.research.memory import (
    ExperienceMemory,
    FeedbackRecord,
    Lesson,
    MemoryUnavailable,
)
from tablequest.methods.research.meta import MetaGraph, build_meta_graph, triples
from tablequest.methods.research.operations import (
    Rule,
    TableTraits,
    enumerate_paths,
    path_key,
    prior,
)
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.research.planner import Candidate, PathStats, propagate, rank, update
from tablequest.methods.research.prompts import Plan, direct_messages, mod_messages, parse_mod
from tablequest.methods.research.reflect import contrast, converged, lessons_from, revise, vote
from tablequest.methods.research.report import ReportInput, build_report, write_charts
from tablequest.sandbox import Sandbox, SandboxError
from tablequest.table import Table, serialize
from tablequest.trace import Trace

__all__ = ["DEFAULT_OPS", "DTR", "Comprehension", "Research"]

DEFAULT_OPS: dict[str, list[str]] = {
    "lookup": ["SELECT"],
    "aggregation": ["SELECT", "FILTER", "AGG"],
    "ranking": ["SELECT", "SORT"],
    "comparison": ["SELECT", "COMPARE"],
    "fact_check": ["SELECT", "COMPARE"],
    "chart": ["SELECT", "CHART"],
    "analysis": ["SELECT", "STAT"],
}
"""Operations per query type when the model's decomposition is unusable (keyword fallback)."""
DIRECT_TABLE_CHARS = 12_000


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
class _Run:
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


class DTR:
    """Deep Tabular Research over one table (`tablequest.methods.research`).

    Args:
        options: `ResearchOptions`.
        context: The model, usage meter, cache directory and shared sandbox.
    """

    name = "research"

    def __init__(
        self, options: ResearchOptions | None = None, context: MethodContext | None = None
    ) -> None:
        self.options = options or ResearchOptions()
        self.context = context or MethodContext()
        self._sandbox = self.context.sandbox
        self._own_sandbox = self._sandbox is None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Comprehension] = OrderedDict()

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the sandbox this method started (a shared one is left alone)."""
        with self._lock:
            if self._own_sandbox and self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None

    def __enter__(self) -> DTR:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sandbox_for(self) -> Sandbox:
        with self._lock:
            if self._sandbox is None:
                self._sandbox = Sandbox()
            return self._sandbox

    # -- comprehension -------------------------------------------------------------------
    def comprehend(self, table: Table) -> Comprehension:
        """Meta graph, frame and triples of `table` (LLM-free; cached by content)."""
        key = table.content_hash
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        graph = build_meta_graph(table)
        frame = build_frame(graph)
        traits = TableTraits(
            has_aggregates=bool(graph.aggregate_rows or graph.layout.additive_rows),
            has_unparsed=bool(frame.unparsed),
            hierarchical=graph.depth("column") >= 2
            or graph.depth("row") >= 2
            or bool(graph.layout.section_rows),
        )
        comp = Comprehension(
            graph=graph,
            frame=frame,
            triples=triples(graph, max_chars=self.options.triples_chars),
            frame_text=describe_frame(frame),
            traits=traits,
        )
        with self._lock:
            self._cache[key] = comp
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
        return comp

    # -- the method interface ------------------------------------------------------------
    def answer(
        self,
        question: str,
        source: Any,
        *,
        task: Task = "tableqa",
        budget: Any = None,
        trace: Trace | None = None,
    ) -> Result:
        """Answer `question` from the one table of `source` (a TableSet or a Table)."""
        run = self.research(question, source, task=task, budget=budget, trace=trace)
        result = run.result
        directory = self._charts_dir(result)
        if run.figures and directory is not None:
            paths = write_charts(run.figures, directory, stem="chart")
            result.details["charts"] = [str(p) for p in paths]
        elif run.figures:
            result.details["charts_unsaved"] = len(run.figures)
        return result

    def _charts_dir(self, result: Result) -> Path | None:
        if self.options.charts_dir:
            return Path(self.options.charts_dir).expanduser()
        if result.trace_path:
            trace = Path(result.trace_path)
            return trace.with_name(trace.stem + "-charts")
        return None

    def preview(
        self,
        question: str,
        source: Any,
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
    ) -> Result:
        """The LLM-free part: comprehension and a keyword plan; status "failed" (no LLM)."""
        table_id, table = _one_table(source)
        comp = self.comprehend(table)
        query_type = guess_query_type(question, task)
        paths = enumerate_paths(
            DEFAULT_OPS[query_type],
            query_type=query_type,
            traits=comp.traits,
            k=self.options.k_paths,
            max_len=self.options.max_path_len,
        )
        details = {
            "reason": "no LLM configured",
            "comprehension": comp.graph.summary(),
            "triples_head": comp.triples[:40],
            "frame": comp.frame_text,
            "query_type": query_type,
            "candidate_paths": [{"path": path_key(p), "prior": s} for p, s in paths],
            "breakdown": _breakdown(query_type, comp.graph),
        }
        if trace is not None:
            trace.event("decision", stage="preview", method="research", **details)
        return Result(
            answer=None,
            status="failed",
            tables_consulted=[table_id],
            final_table=table_id,
            trace_path=str(trace.path) if trace is not None and trace.path else None,
            details=details,
            method="research",
        )

    def research(
        self,
        question: str,
        source: Any,
        *,
        task: Task = "tableqa",
        budget: Any = None,
        trace: Trace | None = None,
    ) -> Research:
        """Algorithm 1 (see the module docstring); never raises for model or program failures."""
        table_id, table = _one_table(source)
        if self.context.llm is None:
            return Research(self.preview(question, source, task=task, trace=trace))
        opts = self.options
        q = start_query(self.context, budget=budget, trace=trace, default_steps=opts.steps)
        if opts.fallback_direct and q.budget.reserve == 0 and q.budget.max_steps >= 3:
            q.budget.reserve = 1
        q.trace.event(
            "decision", stage="start", method="research", question=question, task=task,
            table=table_id, shape=[table.n_rows, table.n_cols], options=opts.label(),
        )  # fmt: skip
        comp = self.comprehend(table)
        q.trace.event("decision", stage="comprehension", **comp.graph.summary())
        memory = self._memory(getattr(source, "store", None), q.trace)
        plan, query_type = self._decompose(q, question, task, comp, memory)
        structure = comp.graph.structure_key()
        lessons = self._recall(memory, structure, query_type, q.trace)
        run = _Run(q, table_id, table, comp, query_type, plan, [], lessons)
        run.candidates = self._candidates(run, memory, structure)
        self._explore(run, question)
        result, figures = self._conclude(run, question, task)
        self._remember(run, memory, structure)
        report = self._report(run, question, result, figures)
        result.details["report"] = report
        q.trace.event("decision", stage="end", status=result.status, answer=result.answer)
        return Research(q.finish(result, self.name), figures, report)

    # -- steps of Algorithm 1 ------------------------------------------------------------
    def _memory(self, store: Any, trace: Trace) -> ExperienceMemory | None:
        mode = self.options.memory
        if mode == "off":
            return None
        path = Path(self.options.memory_path).expanduser() if self.options.memory_path else None
        memory = ExperienceMemory(store=store, path=path, writable=mode == "readwrite")
        trace.event("decision", stage="memory", mode=mode, where=memory.where)
        return memory

    def _recall(
        self, memory: ExperienceMemory | None, structure: str, query_type: str, trace: Trace
    ) -> list[Lesson]:
        if memory is None:
            return []
        try:
            return memory.lessons(structure, query_type, limit=self.options.lessons)
        except MemoryUnavailable as exc:
            trace.event("fallback", stage="memory", reason=str(exc))
            return []

    def _decompose(
        self, q: Query, question: str, task: Task, comp: Comprehension, memory: Any
    ) -> tuple[Plan | None, str]:
        """MOD (Alg. 1 step 1): one call, one repair; keyword plan when unusable."""
        assert q.llm is not None
        columns = [str(c) for c in comp.frame.df.columns]
        messages = mod_messages(question, comp.triples, comp.frame_text, [])
        plan: Plan | None = None
        try:
            plan, _ = ask_with_repair(
                q.llm, messages, lambda text: parse_mod(text, columns=columns,
                                                        max_ops=self.options.max_path_len),
                budget=q.budget, kind="mod", trace=q.trace,
                temperature=self.options.temperature, max_tokens=self.options.max_tokens,
            )  # fmt: skip
        except LLMError as exc:
            q.trace.event("fallback", stage="mod", reason=f"{type(exc).__name__}: {exc}")
        if plan is not None and plan.invented_columns:
            q.trace.event("error", stage="mod", invented_columns=plan.invented_columns)
        if plan is not None and plan.unknown_ops:
            q.trace.event("error", stage="mod", unknown_operations=plan.unknown_ops)
        query_type = plan.query_type if plan is not None else guess_query_type(question, task)
        if task == "fact_verification":
            query_type = "fact_check"
        if plan is None:
            q.trace.event("fallback", stage="mod", reason="keyword plan", query_type=query_type)
        q.trace.event(
            "decision", stage="mod", query_type=query_type,
            operations=plan.operations if plan else DEFAULT_OPS[query_type],
            sub_queries=plan.sub_queries if plan else [],
        )  # fmt: skip
        return plan, query_type

    def _rules(self, run: _Run) -> list[Rule]:
        return [x.rule for x in [*run.lessons, *run.learned] if x.rule is not None]

    def _candidates(
        self, run: _Run, memory: ExperienceMemory | None, structure: str
    ) -> list[Candidate]:
        """Alg. 1 step 2: K paths with priors; R̂ and N from the memory."""
        ops = run.plan.operations if run.plan else DEFAULT_OPS[run.query_type]
        scored = enumerate_paths(
            ops, query_type=run.query_type, traits=run.comp.traits, k=self.options.k_paths,
            max_len=self.options.max_path_len, rules=self._rules(run),
        )  # fmt: skip
        stats = self._stats(memory, structure, run)
        out = [Candidate(p, s, _copy(stats.get(path_key(p)))) for p, s in scored]
        run.q.trace.event(
            "decision", stage="candidates",
            paths=[{"path": c.key, "prior": c.prior, "r_hat": c.stats.r_hat, "n": c.stats.n}
                   for c in out],
        )  # fmt: skip
        return out

    def _stats(
        self, memory: ExperienceMemory | None, structure: str, run: _Run
    ) -> dict[str, PathStats]:
        if memory is None:
            return {}
        try:
            return memory.stats(
                structure, run.query_type, rule=self.options.update, eta=self.options.eta
            )
        except MemoryUnavailable as exc:
            run.q.trace.event("fallback", stage="memory", reason=str(exc))
            return {}

    def _explore(self, run: _Run, question: str) -> None:
        """Alg. 1 step 3: select by E(π), execute, update, replan; until converged."""
        q, opts = run.q, self.options
        assert q.llm is not None
        ctx = StepContext(
            llm=q.llm, budget=q.budget, trace=q.trace, question=question,
            query_type=run.query_type, triples=run.comp.triples[:60],
            frame=run.comp.frame_text, lessons=[x.text for x in run.lessons],
            exec_timeout=opts.exec_timeout, observation_chars=opts.observation_chars,
            temperature=opts.temperature, max_tokens=opts.max_tokens, w_type=opts.w_type,
            time_scale=opts.time_scale,
        )  # fmt: skip
        df = run.comp.frame.df
        workspace = Workspace(lambda: self._sandbox_for().session({"df": df}))
        try:
            while run.stop is None:
                pick = self._select(run)
                if pick is None:
                    break
                self._execute(run, pick, ctx, workspace)
        except SandboxError as exc:
            run.sandbox_error = f"sandbox unavailable: {exc}"
            q.trace.event("error", stage="sandbox", reason=run.sandbox_error)
        finally:
            workspace.close()

    def _select(self, run: _Run) -> Candidate | None:
        remaining = run.q.budget.remaining_for("step")
        ranked = rank(run.candidates, self.options.alpha)
        run.q.trace.event(
            "decision", stage="rank", remaining_steps=remaining,
            expectations=[{"path": c.key, "E": round(e, 4), "r_hat": round(c.stats.r_hat, 4),
                           "n": c.stats.n, "prior": c.prior, "executed": c.executed}
                          for c, e in ranked],
        )  # fmt: skip
        for cand, _ in ranked:
            if not cand.executed and len(cand.path) <= remaining:
                return cand
        waiting = any(not c.executed for c in run.candidates)
        run.stop = "step budget exhausted" if waiting else "all candidate paths executed"
        return None

    def _execute(self, run: _Run, cand: Candidate, ctx: StepContext, ws: Workspace) -> None:
        run.q.trace.event("decision", stage="select", path=cand.key, origin=cand.origin)
        outcome = run_path(cand.path, ctx, ws)
        cand.executed = True
        run.outcomes.append(outcome)
        if outcome.learnable:
            update(cand.stats, outcome.reward, rule=self.options.update, eta=self.options.eta)
            if self.options.update == "lr":
                propagate(run.candidates, cand, outcome.reward, eta=self.options.eta)
            run.records.append(_record(outcome))
        run.q.trace.event(
            "decision", stage="feedback", path=cand.key, f_exec=outcome.feedback.f_exec,
            f_time=outcome.feedback.f_time, f_type=outcome.feedback.f_type,
            reward=round(outcome.reward, 4), answer=outcome.answer, valid=outcome.valid,
            error=outcome.error, stopped=outcome.stopped,
        )  # fmt: skip
        if outcome.stopped is not None:
            run.stop = outcome.stopped
        elif not outcome.valid:
            self._replan(run, outcome, ctx)
        ordered = run.query_type == "ranking"
        if run.stop is None and converged(run.outcomes, self.options.top_k, ordered=ordered):
            run.stop = "converged"

    def _replan(self, run: _Run, failed: PathOutcome, ctx: StepContext) -> None:
        """Alg. 1 lines 21–23: learn from the failure, revise Π, restart with the best path."""
        run.replans += 1
        new = lessons_from(failed, run.query_type)
        for good in (o for o in run.outcomes if o.valid):
            new += contrast(good, failed)
        known = {x.text for x in [*run.lessons, *run.learned]}
        new = [x for x in new if x.text not in known]
        run.learned += new
        ctx.lessons = [x.text for x in [*run.lessons, *run.learned]][-8:]
        rules = self._rules(run)
        added = revise([c.path for c in run.candidates], rules, self.options.max_path_len)
        proposed = tuple(run.plan.operations) if run.plan else tuple(DEFAULT_OPS[run.query_type])
        for cand in run.candidates:
            cand.prior = prior(cand.path, proposed=proposed, query_type=run.query_type,
                               traits=run.comp.traits, rules=rules)  # fmt: skip
        for path in added:
            score = prior(path, proposed=proposed, query_type=run.query_type,
                          traits=run.comp.traits, rules=rules)  # fmt: skip
            run.candidates.append(Candidate(path, score, origin="replan"))
        run.q.trace.event(
            "decision", stage="replan", failed=path_key(failed.path), error=failed.error_kind,
            lessons=[x.text for x in new], added=[path_key(p) for p in added],
        )  # fmt: skip
        if run.replans > self.options.max_replans:
            run.stop = "replan limit reached"

    def _conclude(self, run: _Run, question: str, task: Task) -> tuple[Result, list[bytes]]:
        """Eq. 6 vote, else the non-code fallback; the Result with its details."""
        answer, votes = vote(run.outcomes, ordered=run.query_type == "ranking")
        fallback = None
        if answer is None and self.options.fallback_direct:
            answer = self._direct(run, question, task)
            fallback = "direct" if answer is not None else None
        winner = _winner(run.outcomes, answer) if fallback is None else None
        status, reason = _status(run, answer)
        figures = winner.figures if winner else []
        if not figures and run.query_type == "chart":
            figures = next((o.figures for o in run.outcomes if o.figures), [])
        result = Result(
            answer=answer, status=status, tables_consulted=[run.table_id],
            final_table=run.table_id,
            evidence=locate(run.table, run.table_id, answer) if answer else [],
            method=self.name,
        )  # fmt: skip
        result.details = self._details(run, votes, winner, fallback, reason)
        return result, figures

    def _direct(self, run: _Run, question: str, task: Task) -> str | None:
        q = run.q
        if q.llm is None or not q.budget.can_spend("qa"):
            return None
        text = serialize(run.table, "markdown")[:DIRECT_TABLE_CHARS]
        q.budget.spend("qa")
        q.trace.event("fallback", stage="direct", reason="no path gave a valid answer")
        try:
            reply = q.llm.chat(
                direct_messages(question, text, task=task),
                temperature=self.options.temperature, max_tokens=self.options.max_tokens,
            )[0].text  # fmt: skip
            answer = extract_answer(reply.replace("Final Answer:", "Answer:"))
        except (LLMError, ParseError) as exc:
            q.trace.event("fallback", stage="direct", reason=f"{type(exc).__name__}: {exc}")
            return None
        answer = " ".join(answer.split())[:500]
        return answer or None

    def _details(
        self,
        run: _Run,
        votes: dict[str, int],
        winner: PathOutcome | None,
        fallback: str | None,
        reason: str | None,
    ) -> dict[str, Any]:
        total = sum(c.stats.n for c in run.candidates)
        scored = dict((c.key, e) for c, e in rank(run.candidates, self.options.alpha))
        by_path = {path_key(o.path): o for o in run.outcomes}
        paths = []
        for c in run.candidates:
            o = by_path.get(c.key)
            paths.append({
                "path": c.key, "prior": c.prior, "expectation": scored[c.key],
                "r_hat": c.stats.r_hat, "n": c.stats.n, "executed": c.executed,
                "origin": c.origin, "reward": o.reward if o else None,
                "f": [o.feedback.f_exec, o.feedback.f_time, o.feedback.f_type] if o else None,
                "answer": o.answer if o else None, "valid": o.valid if o else None,
                "error": o.error if o else None,
            })  # fmt: skip
        details: dict[str, Any] = {
            "query_type": run.query_type,
            "breakdown": _breakdown(run.query_type, run.comp.graph),
            "paths": paths, "votes": votes, "sum_n": total,
            "winner": winner and path_key(winner.path),
            "lessons": [x.text for x in [*run.lessons, *run.learned]],
            "comprehension": run.comp.graph.summary(), "stop": run.stop,
            "replans": run.replans, "charts": [],
        }  # fmt: skip
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

    def _remember(self, run: _Run, memory: ExperienceMemory | None, structure: str) -> None:
        if memory is None or not memory.writable:
            return
        try:
            memory.record(structure, run.query_type, run.records, run.learned)
        except MemoryUnavailable as exc:
            run.q.trace.event("fallback", stage="memory", reason=str(exc))

    def _report(self, run: _Run, question: str, result: Result, figures: list[bytes]) -> str:
        winner = next(
            (o for o in run.outcomes if path_key(o.path) == result.details.get("winner")), None
        )
        return build_report(
            ReportInput(
                question=question, answer=result.answer, status=result.status,
                reason=result.reason, query_type=run.query_type, winner=winner,
                paths=result.details["paths"], comprehension=result.details["comprehension"],
                lessons=result.details["lessons"],
                charts=[f"chart-{i}.png" for i in range(1, len(figures) + 1)],
                fallback=result.details.get("fallback"), usage=run.q.usage.totals.to_dict(),
            )
        )  # fmt: skip


def _one_table(source: Any) -> tuple[str, Table]:
    if isinstance(source, Table):
        return "table", source
    if isinstance(source, TableSet):
        return source.one("research")
    raise TypeError(f"method research answers from a TableSet or a Table, not {type(source)!r}")


def _copy(stats: PathStats | None) -> PathStats:
    return PathStats(stats.r_hat, stats.n) if stats else PathStats()


def _record(outcome: PathOutcome) -> FeedbackRecord:
    f = outcome.feedback
    return FeedbackRecord(
        path=path_key(outcome.path), f_exec=f.f_exec, f_time=f.f_time, f_type=f.f_type,
        reward=outcome.reward, failed_op=outcome.failed_op, error=outcome.error_kind,
    )  # fmt: skip


def _winner(outcomes: list[PathOutcome], answer: str | None) -> PathOutcome | None:
    return next((o for o in outcomes if o.valid and o.answer == answer), None)


def _status(run: _Run, answer: str | None) -> tuple[Status, str | None]:
    if answer is not None:
        return "answered", None
    if run.sandbox_error:
        return "failed", run.sandbox_error
    if not any(o.learnable for o in run.outcomes):
        reason = next((o.stopped for o in run.outcomes if o.stopped), None)
        return "failed", reason or run.stop or "no path could run"
    errors = sorted({o.error_kind or "invalid" for o in run.outcomes if not o.valid})
    return "insufficient", f"no path gave a valid answer ({', '.join(errors)}); stop: {run.stop}"


def _breakdown(query_type: str, graph: MetaGraph) -> dict[str, str]:
    if graph.both_axis_hierarchy:
        shape = "both-axis"
    elif graph.depth("column") >= 2:
        shape = "column-hierarchy"
    elif graph.depth("row") >= 2:
        shape = "row-hierarchy"
    else:
        shape = "flat"
    return {"task_family": query_type, "structure": shape}
