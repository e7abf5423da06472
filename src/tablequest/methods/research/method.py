"""DTR, Algorithm 1 of arXiv:2603.09151 (appendix A), over one table.

    T_meta ← comprehension of T (meta graph, frame)                 (LLM-free, §3.1)
    M_q ← MOD(q, T_meta)                                             (1 call, §3.2)
    Π ← K candidate paths under the operation map                    (§3.2)
    while not converged and budget remains:                          (§3.3–3.5, `explore`)
        top-k paths by E(π) that may run and fit the budget          (Eq. 1, selection)
        execute each operation by operation ([THINK]/[CODE])         (L calls)
        r = φ(f) of each operation; update R̂, N per operation        (Eq. 4, Alg. 1 l. 17–20;
          (update=lr: once per path with r(π))                       Eq. 5)
        if failed or invalid: experience → replan (revise Π)         (≤ 1 call, Alg. 1 l. 21–23)
    a* ← majority vote over format-valid ballots                     (Eq. 6)
    report: analysis by the model, execution record generated       (≤ 1 call, §3.5)

Choices (ours): convergence is k format-valid ballots (one per distinct path) with a strict
majority (one more path breaks a tie); paths that do not fit the remaining budget are
skipped; when no path gives a valid answer, one non-code call answers from the table text
(``fallback_direct``, the paper's "non-code mode" for RealHiTBench) using the QA reserve;
experience is written to the memory once per question. Selection with repeats, the
model-written experience and report with their template fallbacks, and the Table 3/4 ablation
switches are documented in `explore`, `abstraction`, `narrate` and `prompts`. Status:
"answered" (vote or fallback), "failed" (no model, sandbox or model errors only), else
"insufficient".
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from tablequest.corpus import Store
from tablequest.llm import StepBudget, ask_json
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.query import Query, start_query
from tablequest.methods.relframe import frame_for
from tablequest.methods.research.conclude import breakdown, conclude
from tablequest.methods.research.execute import StepContext, Workspace
from tablequest.methods.research.explore import execute, rules_of, select
from tablequest.methods.research.feedback import guess_query_type
from tablequest.methods.research.frame import ExecFrame, build_frame, describe_frame
from tablequest.methods.research.memory import ExperienceMemory, Lesson, MemoryUnavailable
from tablequest.methods.research.meta import build_meta_graph, triples
from tablequest.methods.research.narrate import write_report
from tablequest.methods.research.operations import (
    DEFAULT_OPS,
    TableTraits,
    enumerate_paths,
    path_key,
)
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.research.planner import Candidate, PathStats
from tablequest.methods.research.prompts import FREE_OP, Plan, mod_messages, parse_mod
from tablequest.methods.research.report import ReportInput, build_report, write_charts
from tablequest.methods.research.state import (
    Comprehension,
    QuestionRun,
    Research,
    copy_stats,
    one_table,
)
from tablequest.methods.result import Result
from tablequest.sandbox import Sandbox, SandboxError
from tablequest.settings import TracesSettings
from tablequest.table import Table, serialize
from tablequest.trace import Trace
from tablequest.trace.retention import RetentionError, chart_retention, prune_charts

__all__ = ["ANSWER_SEPARATORS", "DEFAULT_OPS", "DTR", "Comprehension", "Research"]

ANSWER_SEPARATORS = (", ",)
"""How a DTR answer lists items: its answer prompt asks for values "separated by ', '"."""
PLAIN_HEAD_ROWS = 15
"""Rows of the plain table head that replace the triples with meta_graph=false."""


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
        self._idle: dict[str, Workspace] = {}
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Close idle sessions; stop the sandbox this method started (a shared one stays)."""
        with self._lock:
            self._closed = True
            idle, self._idle = list(self._idle.values()), {}
        for workspace in idle:
            workspace.close()
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
                self._sandbox = self.context.new_sandbox()
            return self._sandbox

    # -- comprehension -------------------------------------------------------------------
    def comprehend(
        self, table: Table, *, store: Store | None = None, table_id: str | None = None
    ) -> Comprehension:
        """Meta graph, frame and triples of `table` (LLM-free; cached by content).

        With ``meta_graph=false`` (Table 3 without Meta) the model sees the plain table head
        instead of triples, the frame is `Table.to_dataframe` (no ``_aggregate``, no unit or
        section columns; read from the table's relation when `store` holds `table_id`,
        `relframe.frame_for`) and the prior gets no table traits; the graph is still built,
        for the memory's structure key and the result's details only.
        """
        key = table.content_hash
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        graph = build_meta_graph(table)
        if self.options.meta_graph:
            frame = build_frame(graph)
            traits = TableTraits(
                has_aggregates=bool(graph.aggregate_rows or graph.layout.additive_rows),
                has_unparsed=bool(frame.unparsed),
                hierarchical=graph.depth("column") >= 2
                or graph.depth("row") >= 2
                or bool(graph.layout.section_rows),
            )
            lines = triples(graph, max_chars=self.options.triples_chars)
        else:
            frame, traits = plain_frame(table, store, table_id), TableTraits()
            lines = plain_head(table, self.options.triples_chars)
        comp = Comprehension(
            graph=graph, frame=frame, triples=lines, frame_text=describe_frame(frame),
            traits=traits,
        )  # fmt: skip
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
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """Answer `question` from the one table of `source` (a TableSet or a Table)."""
        run = self.research(question, source, task=task, budget=budget, trace=trace)
        result = run.result
        directory = self._charts_dir(result)
        if run.figures and directory is not None:
            paths = write_charts(run.figures, directory, stem="chart")
            result.details["charts"] = [str(p) for p in paths]
            if not self.options.charts_dir:  # one folder per run next to its trace: bound them
                settings = self.context.settings
                prune_chart_folders(directory, settings.traces if settings is not None else None)
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
        table_id, table = one_table(source)
        comp = self.comprehend(table, store=_store_of(source, table_id), table_id=table_id)
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
            "breakdown": breakdown(query_type, comp.graph),
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
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Research:
        """Algorithm 1 (see the module docstring); never raises for model or program failures."""
        table_id, table = one_table(source)
        if self.context.llm is None:
            result = self.preview(question, source, task=task, trace=trace)
            text = build_report(
                ReportInput(
                    question=question, answer=None, status=result.status, reason=result.reason,
                    query_type=result.details["query_type"], winner=None, paths=[],
                    comprehension=result.details["comprehension"],
                )
            )  # fmt: skip
            result.details.update(report=text, report_source="template")
            result.details["report_fallback"] = "no model"
            return Research(result, [], text)
        opts = self.options
        q = start_query(self.context, budget=budget, trace=trace, default_steps=opts.steps)
        if opts.fallback_direct and q.budget.reserve == 0 and q.budget.max_steps >= 3:
            q.budget.reserve = 1
        q.trace.event(
            "decision", stage="start", method="research", question=question, task=task,
            table=table_id, shape=[table.n_rows, table.n_cols], options=opts.label(),
        )  # fmt: skip
        comp = self.comprehend(table, store=_store_of(source, table_id), table_id=table_id)
        q.trace.event("decision", stage="comprehension", **comp.graph.summary())
        memory = self._memory(getattr(source, "store", None), q.trace)
        plan, query_type = self._decompose(q, question, task, comp)
        structure = comp.graph.structure_key()
        stats, lessons = self._recall(memory, structure, query_type, q.trace)
        run = QuestionRun(q, table_id, table, comp, query_type, plan, [], lessons)
        run.candidates = self._candidates(run, stats)
        self._explore(run, question)
        result, figures = conclude(run, self.options, question, task)
        self._remember(run, memory, structure)
        result.details.update(ablation_details(run, opts))
        report_text = write_report(run, question, result, figures, opts)
        result.details["report"] = report_text
        q.finish(result, self.name, ANSWER_SEPARATORS)  # the verdict's event, then the end
        q.trace.event("decision", stage="end", status=result.status, answer=result.answer)
        return Research(result, figures, report_text)

    # -- steps of Algorithm 1 ------------------------------------------------------------
    def _memory(self, store: Any, trace: Trace) -> ExperienceMemory | None:
        mode = self.options.memory
        if mode == "off":
            return None
        path = Path(self.options.memory_path).expanduser() if self.options.memory_path else None
        state = self.context.state_dir
        if state is not None and (store is None or getattr(store, "read_only", False)):
            # a read-only corpus (an evaluation run): learn in the run's own memory file
            store, path = None, path or state / "dtr_memory.duckdb"
        memory = ExperienceMemory(store=store, path=path, writable=mode == "readwrite")
        trace.event("decision", stage="memory", mode=mode, where=memory.where)
        return memory

    def _recall(
        self, memory: ExperienceMemory | None, structure: str, query_type: str, trace: Trace
    ) -> tuple[dict[str, PathStats], list[Lesson]]:
        """Path statistics (R̂, N) and lessons remembered for this structure and query type
        (none of the statistics with expectation=false, none of the lessons with
        abstraction=false)."""
        if memory is None:
            return {}, []
        opts = self.options
        try:
            stats, lessons = memory.recall(
                structure, query_type, rule=opts.update, eta=opts.eta, limit=opts.lessons
            )
        except MemoryUnavailable as exc:
            trace.event("fallback", stage="memory", reason=str(exc))
            return {}, []
        return (stats if opts.expectation else {}), (lessons if opts.abstraction else [])

    def _decompose(
        self, q: Query, question: str, task: Task, comp: Comprehension
    ) -> tuple[Plan | None, str]:
        """MOD (Alg. 1 step 1): one call, one repair; keyword plan when unusable.
        With operations=false (Table 3 without QDO): no call, the keyword query type."""
        assert q.llm is not None
        opts = self.options
        plan: Plan | None = None
        if opts.operations:
            columns = [str(c) for c in comp.frame.df.columns]
            messages = mod_messages(
                question, comp.triples, comp.frame_text, [], plain=not opts.meta_graph
            )
            plan = ask_json(
                q.llm, messages, lambda text: parse_mod(text, columns=columns,
                                                        max_ops=opts.max_path_len),
                budget=q.budget, kind="mod", trace=q.trace,
                temperature=opts.temperature, max_tokens=opts.max_tokens,
            ).value  # fmt: skip
        if plan is not None and plan.invented_columns:
            q.trace.event("error", stage="mod", invented_columns=plan.invented_columns)
        if plan is not None and plan.unknown_ops:
            q.trace.event("error", stage="mod", unknown_operations=plan.unknown_ops)
        query_type = plan.query_type if plan is not None else guess_query_type(question, task)
        if task == "fact_verification":
            query_type = "fact_check"
        if plan is None and opts.operations:
            q.trace.event("fallback", stage="mod", reason="keyword plan", query_type=query_type)
        operations = plan.operations if plan else DEFAULT_OPS[query_type]
        q.trace.event(
            "decision", stage="mod", query_type=query_type, qdo=opts.operations,
            operations=operations if opts.operations else [FREE_OP],
            sub_queries=plan.sub_queries if plan else [],
        )  # fmt: skip
        return plan, query_type

    def _candidates(self, run: QuestionRun, stats: dict[str, PathStats]) -> list[Candidate]:
        """Alg. 1 step 2: K paths with priors; R̂ and N from the memory. With
        operations=false, the one free-form path (prior 1)."""
        if self.options.operations:
            ops = run.plan.operations if run.plan else DEFAULT_OPS[run.query_type]
            scored = enumerate_paths(
                ops, query_type=run.query_type, traits=run.comp.traits,
                k=self.options.k_paths, max_len=self.options.max_path_len, rules=rules_of(run),
            )  # fmt: skip
        else:
            scored = [((FREE_OP,), 1.0)]
        out = [Candidate(p, s, copy_stats(stats.get(path_key(p)))) for p, s in scored]
        run.q.trace.event(
            "decision", stage="candidates",
            paths=[{"path": c.key, "prior": c.prior, "r_hat": c.stats.r_hat, "n": c.stats.n}
                   for c in out],
        )  # fmt: skip
        return out

    def _explore(self, run: QuestionRun, question: str) -> None:
        """Alg. 1 step 3 (`explore`): select, execute, update, replan; until converged."""
        q, opts = run.q, self.options
        assert q.llm is not None
        ctx = StepContext(
            llm=q.llm, budget=q.budget, trace=q.trace, question=question,
            query_type=run.query_type, triples=run.comp.triples[:60],
            frame=run.comp.frame_text, lessons=[x.text for x in run.lessons],
            exec_timeout=opts.exec_timeout, observation_chars=opts.observation_chars,
            temperature=opts.temperature, max_tokens=opts.max_tokens, w_type=opts.w_type,
            time_scale=opts.time_scale, prompting=opts.prompting, plain=not opts.meta_graph,
        )  # fmt: skip
        key = run.table.content_hash
        workspace = self._checkout(key, run.comp)
        healthy = True
        try:
            while run.stop is None:
                pick = select(run, opts)
                if pick is None:
                    break
                execute(run, pick, ctx, workspace, opts)
        except SandboxError as exc:
            healthy = False
            run.sandbox_error = f"sandbox unavailable: {exc}"
            q.trace.event("error", stage="sandbox", reason=run.sandbox_error)
        finally:
            self._checkin(key, workspace, healthy)

    def _checkout(self, key: str, comp: Comprehension) -> Workspace:
        """An idle session on this table's frame (paths reset it), else a new one."""
        with self._lock:
            idle = self._idle.pop(key, None)
        if idle is not None:
            return idle
        df = comp.frame.df
        return Workspace(lambda: self._sandbox_for().session({"df": df}))

    def _checkin(self, key: str, workspace: Workspace, healthy: bool) -> None:
        """Keep the session for the next question on the same table (one idle session)."""
        with self._lock:
            keep = healthy and not self._idle and not self._closed
            if keep:
                self._idle[key] = workspace
        if not keep:
            workspace.close()

    def _remember(self, run: QuestionRun, memory: ExperienceMemory | None, structure: str) -> None:
        if memory is None or not memory.writable:
            return
        learned = run.learned if self.options.abstraction else []
        try:
            memory.record(structure, run.query_type, run.records, learned)
        except MemoryUnavailable as exc:
            run.q.trace.event("fallback", stage="memory", reason=str(exc))


def _store_of(source: Any, table_id: str | None) -> Store | None:
    """The store holding the table (a shard of a sharded corpus), if it came from one."""
    return source.store_of(table_id) if isinstance(source, TableSet) else None


def plain_frame(table: Table, store: Store | None = None, table_id: str | None = None) -> ExecFrame:
    """The frame without meta information (meta_graph=false): `Table.to_dataframe`, read
    from the table's relation when `store` holds `table_id` (`relframe.frame_for`)."""
    df = frame_for(table, store, table_id)
    numeric = [str(c) for c in df.columns if str(df[c].dtype).startswith(("int", "float"))]
    return ExecFrame(df, numeric=numeric)


def plain_head(table: Table, max_chars: int) -> list[str]:
    """The table's first rows as stored (Markdown lines), in place of the triples."""
    head = table.sub_table(rows=list(table.row_ids[:PLAIN_HEAD_ROWS]))
    lines: list[str] = []
    size = 0
    for line in serialize(head, "markdown").splitlines():
        if lines and size + len(line) > max_chars:
            break
        lines.append(line)
        size += len(line) + 1
    return lines


def ablation_details(run: QuestionRun, opts: ResearchOptions) -> dict[str, Any]:
    """What the result says about selection, the ablation switches and the experience."""
    sources = {x["source"] for x in run.experience}
    if not opts.abstraction:
        experience = "off"
    elif not sources:
        experience = "none"
    else:
        experience = sources.pop() if len(sources) == 1 else "mixed"
    return {
        "selection": opts.selection if opts.expectation else "prior",
        "iterations": run.iteration,
        "components": {"meta_graph": opts.meta_graph, "operations": opts.operations,
                       "expectation": opts.expectation, "abstraction": opts.abstraction,
                       "prompting": opts.prompting},
        "experience_source": experience,
        "experience": list(run.experience),
    }  # fmt: skip


def prune_chart_folders(written: Path, traces: TracesSettings | None = None) -> None:
    """Keep the chart folders next to the traces within the retention limits of `traces`
    (the run's loaded settings; None: the environment's, `tablequest.trace.retention`), never
    removing `written`; a bad setting is reported on stderr and nothing is removed (charts
    never break an answer)."""
    try:
        limits = chart_retention(traces=traces)
        prune_charts(written.parent, limits=limits, protect=[written])
    except RetentionError as exc:
        print(f"tablequest: {exc}; old charts are not removed", file=sys.stderr)
    except OSError:
        pass
