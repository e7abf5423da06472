"""`auto`: one ask that picks the method — corpus → table → method, answerability around it.

None of the four papers routes between methods; this is ours (docs/methods.md):

1. **Tables.** A corpus source runs TableSeek's retrieval and refinement (`TableSeek.select`,
   Algorithm 1 up to QA): its selection first, then the rest of its ranking. A table source
   (a file, ``--table-id``) skips retrieval.
2. **Route per table**, from cheap signals (`auto.signals`, no LLM), first rule that holds:
   - the serialized table does not fit: tokens > `route_fit_fraction` × the model's context
     (what the model says, `LLM.context_length()`: the server's reported context length;
     else `route_context_tokens`) → `route_big`
     (TableRAG);
   - an analytical / chart / report request → `route_analytical` (DTR);
   - messy structure (multi-level headers on either axis, merged cells, aggregation rows)
     → `route_messy` (DTR);
   - a plain lookup on a small flat table (≤ `route_lookup_cells` cells) → `route_lookup`
     (``qa``: TableSeek's QA with its answerability check, one call);
   - otherwise → `route_default` (TabScope, whose classifier picks localized or full).
   A route naming a method that is not registered falls back to ``qa`` (recorded). The
   decision is one ``route`` trace event: signals, thresholds, route, reason.
3. **Answerability around any method**: an answer that is insufficient, failed, or a
   refusal / tool syntax (`llm.parse` non-answers) moves on to the next candidate table of
   the ranking (at most `max_tables`) while the ``--steps`` budget lasts — TableSeek's
   fallback, generalized to every route. A model that proved unreachable ends the question
   there: no next table is tried (or reported as consulted).

The budget is shared: retrieval's calls and every routed method's calls count against the
one `StepBudget` of the question. Routing itself makes no LLM call, so ``auto`` adds no call
over the method it routes to on a single table, and on a corpus it spends TableSeek's
retrieval calls instead of TableSeek's own QA call.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tablequest.configfile import ConfigFile
from tablequest.corpus import Corpus, preview_hit, search
from tablequest.llm import QA, StepBudget, is_non_answer
from tablequest.methods.auto.signals import (
    QuestionSignals,
    TableSignals,
    question_signals,
    table_signals,
)
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.options import MethodOptions, option
from tablequest.methods.query import Query, start_query
from tablequest.methods.registry import UnknownMethod, get_method
from tablequest.methods.result import CandidateRecord, Result, RouteRecord, failed
from tablequest.methods.seek import SeekConfig, TableSeek
from tablequest.table import Table
from tablequest.trace import Trace

QA_ROUTE = "qa"
DEFAULT_CONTEXT = 32_768


class AutoOptions(MethodOptions):
    """The route table and its thresholds (``-o route_big rag``, ``[methods.auto]``)."""

    route_big: str = option("rag", "method for tables that do not fit the context")
    route_analytical: str = option("research", "method for analytical / chart / report asks")
    route_messy: str = option("research", "method for messy tables (headers, merges, totals)")
    route_lookup: str = option("qa", "method for plain lookups on small flat tables")
    route_default: str = option("scope", "method for everything else")
    route_fit_fraction: float = option(
        0.5, "share of the context a serialized table may take", gt=0.0, le=1.0
    )
    route_context_tokens: int = option(
        DEFAULT_CONTEXT, "model context when the server does not report one", ge=256
    )
    route_lookup_cells: int = option(400, "most cells of a 'small' table for lookups", ge=1)
    fallback: bool = option(True, "try the next ranked table after a non-answer")
    max_tables: int = option(3, "tables tried at most (selection, then the ranking)", ge=1)

    def default_steps(self) -> int:
        return 12

    def routes(self) -> dict[str, str]:
        return {
            "big": self.route_big,
            "analytical": self.route_analytical,
            "messy": self.route_messy,
            "lookup": self.route_lookup,
            "default": self.route_default,
        }


@dataclass(frozen=True)
class Route:
    """One routing decision."""

    rule: str
    method: str
    reason: str


def choose_route(
    options: AutoOptions, table: TableSignals, question: QuestionSignals, context_tokens: int
) -> Route:
    """The first rule of the route table that holds (see the module doc)."""
    limit = int(options.route_fit_fraction * context_tokens)
    if table.tokens > limit:
        return Route("big", options.route_big, f"~{table.tokens} tokens > {limit} (fit limit)")
    if question.analytical:
        words = ", ".join(question.words[:3])
        return Route("analytical", options.route_analytical, f"analytical request ({words})")
    if table.messy:
        what = [
            f"{table.header_rows} header rows" if table.header_rows > 1 else "",
            f"{table.header_cols} header columns" if table.header_cols > 1 else "",
            f"{table.merges} merged ranges" if table.merges else "",
            f"{table.aggregation_rows} aggregation rows" if table.aggregation_rows else "",
        ]
        return Route("messy", options.route_messy, "messy: " + ", ".join(w for w in what if w))
    if question.lookup and table.cells <= options.route_lookup_cells:
        return Route("lookup", options.route_lookup, f"plain lookup, {table.cells} cells")
    reason = "operators: " + ", ".join(question.words[:3]) if question.words else "larger table"
    return Route("default", options.route_default, reason)


def is_answer(result: Result) -> bool:
    """An answered Result whose answer is not a refusal or leftover tool syntax."""
    return result.status == "answered" and not is_non_answer(result.answer or "")


class AutoRouter:
    """Routes each question (and each candidate table) to the method it needs."""

    name = "auto"

    def __init__(
        self, options: AutoOptions | None = None, context: MethodContext | None = None
    ) -> None:
        self.options = options or AutoOptions()
        self.context = context or MethodContext()

    def close(self) -> None:
        """Routed methods are built per question and closed there."""

    def preview(
        self,
        question: str,
        source: Corpus | TableSet,
        *,
        task: Task = "tableqa",
        trace: Trace | None = None,
    ) -> Result:
        """The LLM-free part: search, and the route each candidate would take (and why)."""
        return preview_routes(self, question, source, trace or Trace.in_memory())

    def answer(
        self,
        question: str,
        source: Corpus | TableSet,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        query = start_query(
            self.context, budget=budget, trace=trace, default_steps=self.options.default_steps()
        )
        context = dataclasses.replace(self.context, usage=query.usage, deadline=query.deadline)
        seek = TableSeek(_seek_options(context), context)
        selected: list[str] = []
        if not isinstance(source, TableSet):  # a corpus
            selection = seek.select(question, source, task=task, budget=query.budget,
                                    trace=query.trace)  # fmt: skip
            candidates = selection.selected + [
                t for t in selection.ranked if t not in selection.selected
            ]
            selected = list(selection.selected)
            store: Corpus | None = source
            given: dict[str, Table] = {}
        else:
            candidates, store, given = source.ids, source.store, dict(source.tables)
        query.budget.reserve = 0  # the routed method replaces TableSeek's QA
        result = self._answer_candidates(
            question, task, query, context, seek, candidates, store, given
        )
        result.details["selected"] = selected
        return query.finish(result, self.name)

    def _answer_candidates(
        self,
        question: str,
        task: Task,
        query: Query,
        context: MethodContext,
        seek: TableSeek,
        candidates: list[str],
        store: Corpus | None,
        given: dict[str, Table],
    ) -> Result:
        asked = question_signals(question)
        routes: list[RouteRecord] = []
        consulted: list[str] = []
        last: Result | None = None
        for tid in candidates[: self.options.max_tables]:
            if not query.budget.can_spend(QA):
                query.trace.event("fallback", stage="route", reason="step budget exhausted")
                break
            table = given[tid] if tid in given else store.get(tid)  # type: ignore[union-attr]
            route = self._route(question, tid, table, asked, query.trace)
            last = self._run_route(route, question, task, query, context, seek, tid, table, store)
            consulted.extend(t for t in last.tables_consulted or [tid] if t not in consulted)
            routes.append({"table_id": tid, "route": route.rule, "method": route.method,
                           "status": last.status, "reason": route.reason})  # fmt: skip
            if is_answer(last) or not self.options.fallback or query.deadline.unreachable:
                break  # an unreachable model ends the question: no next table is tried
            query.trace.event("fallback", stage="route", reason=f"{route.method} said "
                              f"{last.status}", next_table=True)  # fmt: skip
        if last is None:
            last = Result(answer=None, status="insufficient",
                          details={"reason": "no candidate table"})  # fmt: skip
        elif last.status == "answered" and not is_answer(last):
            last.status, last.details["reason"] = "insufficient", "the answer was a non-answer"
        last.tables_consulted = consulted
        last.details["routes"] = routes
        last.details["breakdown"] = {"route": routes[-1]["method"] if routes else "none"}
        last.method = self.name
        return last

    def _route(
        self, question: str, tid: str, table: Table, asked: QuestionSignals, trace: Trace
    ) -> Route:
        signals = table_signals(table)
        llm = self.context.llm
        reported = llm.context_length() if llm is not None else None
        tokens = reported or self.options.route_context_tokens
        route = choose_route(self.options, signals, asked, tokens)
        method = route.method
        if method != QA_ROUTE:
            try:
                usable = get_method(method).input in ("table", "tables", "any")
                problem = "does not answer from a table"
            except UnknownMethod:
                usable, problem = False, "is not registered"
            if not usable:
                route = Route(route.rule, QA_ROUTE, f"{route.reason}; {method} {problem} → qa")
        trace.event(
            "route", table_id=tid, rule=route.rule, method=route.method, reason=route.reason,
            table=signals.to_dict(), question=asked.to_dict(), context_tokens=tokens,
            context_source="server" if reported else "option",
            fit_limit=int(self.options.route_fit_fraction * tokens),
        )  # fmt: skip
        return route

    def _run_route(
        self,
        route: Route,
        question: str,
        task: Task,
        query: Query,
        context: MethodContext,
        seek: TableSeek,
        tid: str,
        table: Table,
        store: Corpus | None,
    ) -> Result:
        tables = TableSet([(tid, table)], store)
        if route.method == QA_ROUTE:
            return seek.answer_tables(question, tables, task=task, budget=query.budget,
                                      trace=query.trace)  # fmt: skip
        spec = get_method(route.method)
        method = spec.build(spec.resolve_options(config_paths=_files(context)), context)
        try:
            return method.answer(question, tables, task=task, budget=query.budget,
                                 trace=query.trace)  # fmt: skip
        except Exception as exc:  # a routed method that breaks is a failed route
            query.trace.event("error", stage="route", method=route.method, error=repr(exc))
            return failed(f"{route.method}: {type(exc).__name__}: {exc}", tables_consulted=[tid])
        finally:
            method.close()


def preview_routes(
    router: AutoRouter, question: str, source: Corpus | TableSet, trace: Trace
) -> Result:
    """Without a model: the LLM-free search (for a corpus) and the route each candidate
    table would take, with the reason."""
    asked = question_signals(question)
    routes: list[RouteRecord] = []
    candidates: list[CandidateRecord] = []
    if not isinstance(source, TableSet):  # a corpus
        hits = search(source, question, k=3)
        trace.event("rank", method="grep", hits=[{"table_id": h.table_id, "score": h.score}
                                                 for h in hits])  # fmt: skip
        pairs = [(h.table_id, source.get(h.table_id)) for h in hits]
        candidates = [
            {"table_id": h.table_id, "score": round(h.score, 6),
             "preview": preview_hit(source, h, question)} for h in hits
        ]  # fmt: skip
    else:
        pairs = list(source.tables)
    for tid, table in pairs:
        route = router._route(question, tid, table, asked, trace)
        routes.append({"table_id": tid, "route": route.rule, "method": route.method,
                       "reason": route.reason})  # fmt: skip
    trace.event("fallback", stage="ask", reason="no LLM configured; routes only")
    return failed(
        "no LLM configured", trace=trace, method=router.name, candidates=candidates, routes=routes
    )


def _files(context: MethodContext) -> tuple[ConfigFile, ...] | None:
    """The config files the entry point read (None: find them here)."""
    return context.settings.files if context.settings is not None else None


def _seek_options(context: MethodContext) -> SeekConfig:
    """TableSeek's options for the corpus stage: defaults < ``[methods.seek]``."""
    options = get_method("seek").resolve_options(config_paths=_files(context))
    assert isinstance(options, SeekConfig)
    return options
