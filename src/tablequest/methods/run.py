"""One way in: `ask(question, source, method=...)` opens the source, builds the method from
the registry with its options, runs it within a budget and returns its `Result`.

The CLI's ``ask``, the HTTP API and library users call `ask`; the eval runner builds methods
the same way (`resolve_options`, `MethodSpec.build`) over a benchmark's corpus.

Sources (`open_source`), by what the method answers from (`MethodSpec.input`):

- a DuckDB store file, a sharded corpus's manifest (both opened read-only by `open_corpus`)
  or an opened `Corpus`: corpus methods get the corpus, or with
  `table_ids` an in-memory store of just those tables (`Store.subset`: the same ids and
  sources), so an answer never comes from a table the user did not name; table methods get
  the tables named by `table_ids`, or the store's only table;
- a table file (any format `read_tables` reads): table (and "any") methods read it directly
  (no ingest:
  a 10^6-cell CSV would otherwise be serialized three times; ``table_ids`` pick among the
  file's tables by index "0", "1", … or by id); corpus methods get it ingested into memory,
  and so do "any" methods (auto) for a file of several tables without ``table_ids``;
- a folder: ingested into memory;
- a `Table` or a `TableSet`: as given.

Without a model (`llm=None`) a method that needs one runs its LLM-free `preview` when it has
one (TableRAG: retrieval with the question's keywords); a corpus method falls back to the
LLM-free grep search. Either way the Result is "failed" with reason "no LLM configured".
Errors in the run itself become a "failed" Result with the error recorded in the trace,
never an exception; bad arguments (unknown method or option, unreadable source) raise.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.configfile import ConfigFile
from tablequest.corpus import (
    Corpus,
    EncoderUnavailable,
    Store,
    StoreError,
    ensure_indexes,
    ingest,
    is_corpus_file,
    open_corpus,
    preview_hit,
    search,
    table_id_for,
)
from tablequest.errors import BadValue, UsageError, trace_note
from tablequest.llm import LLM, LLMConfig, StepBudget, UsageMeter
from tablequest.methods.base import (
    LIST_IDS,
    Input,
    Method,
    MethodContext,
    Previewing,
    TableSet,
    Task,
)
from tablequest.methods.conversation import Conversation, FollowUp
from tablequest.methods.options import MethodOptions
from tablequest.methods.registry import MethodSpec, get_method
from tablequest.methods.result import CandidateRecord, Result, failed
from tablequest.sandbox import Sandbox
from tablequest.settings import Settings
from tablequest.table import ReadBudget, Table, UnreadableTable, read_tables
from tablequest.trace import Trace, store_key

__all__ = ["OpenSource", "SourceError", "ask", "open_source", "resolve_options"]

NO_LLM = "no LLM configured"


class SourceError(UsageError):
    """The source or table id cannot be used; the message names it and the fix."""


class _ManyTables(SourceError):
    """A table file holds several tables and no --table-id says which."""


@dataclass
class OpenSource:
    """What a method answers from, the user-facing name of each table, what to close."""

    value: Corpus | TableSet | None
    names: dict[str, str] = field(default_factory=dict)
    store: Corpus | None = None
    owned: list[Corpus] = field(default_factory=list)

    def name_of(self, table_id: str) -> str | None:
        if table_id in self.names:
            return self.names[table_id]
        if self.store is not None:
            try:
                src = self.store.source(table_id)
            except KeyError:
                return None
            return src.path if src.sheet is None else f"{src.path}#{src.sheet}"
        return None

    def table(self, table_id: str) -> Table | None:
        """The table `table_id` of this source, when it has it."""
        if isinstance(self.value, TableSet):
            for tid, table in self.value.tables:
                if tid == table_id:
                    return table
        if self.store is not None:
            try:
                return self.store.get(table_id)
            except KeyError:
                return None
        return None

    def close(self) -> None:
        while self.owned:
            self.owned.pop().close()


def _pick_from_store(store: Corpus, table_ids: Sequence[str], label: str) -> TableSet:
    ids = list(table_ids)
    if not ids:
        known = store.table_ids()
        if len(known) != 1:
            raise SourceError(f"{label} holds {len(known)} tables; pass --table-id ID ({LIST_IDS})")
        ids = known
    tables = []
    for tid in ids:
        try:
            tables.append((tid, store.get(tid)))
        except KeyError:
            raise SourceError(f"no table {tid!r} in {label}; {LIST_IDS}") from None
    return TableSet(tables, store)


def _pick_from_file(
    path: Path, table_ids: Sequence[str], budget: ReadBudget | None = None
) -> OpenSource:
    try:
        tables = read_tables(path, budget=budget)
    except UnreadableTable as exc:
        raise SourceError(str(exc)) from None
    if not tables:
        raise SourceError(f"no table found in {str(path)!r}")
    key = str(path.resolve())
    ids = [table_id_for(key, i) for i in range(len(tables))]
    wanted = list(table_ids)
    if not wanted:
        if len(tables) > 1:
            choices = ", ".join(
                f"{i} ({f'sheet {t.source.sheet}, ' if t.source.sheet else ''}"
                f"{t.n_rows}x{t.n_cols})"
                for i, t in enumerate(tables)
            )
            raise _ManyTables(
                f"{str(path)!r} holds {len(tables)} tables; pass --table-id (`table_ids` in the "
                f"API and MCP) with one of {choices}"
            )
        wanted = ["0"]
    chosen: list[tuple[str, Table]] = []
    for tid in wanted:
        if tid.isdigit() and int(tid) < len(tables):
            chosen.append((ids[int(tid)], tables[int(tid)]))
        elif tid in ids:
            chosen.append((tid, tables[ids.index(tid)]))
        else:
            raise SourceError(
                f"no table {tid!r} in {str(path)!r}; use an index 0..{len(tables) - 1}"
            )
    names = {}
    for tid, table in chosen:
        sheet = table.source.sheet
        names[tid] = str(path) if sheet is None else f"{path}#{sheet}"
    return OpenSource(TableSet(chosen), names)


def _ingested(path: Path, budget: ReadBudget | None = None) -> Store:
    store = Store()
    report = ingest(store, [path], budget=budget)
    if not report.ok:
        store.close()
        reasons = "; ".join(f"{f.path}: {f.reason}" for f in report.files_failed[:3])
        raise SourceError(f"no table could be read from {str(path)!r} ({reasons})")
    return store


def _from_store(store: Corpus, input: Input, table_ids: Sequence[str], label: str) -> OpenSource:
    if input == "none" and table_ids:
        raise SourceError("this method answers without tables: --table-id does not apply")
    if input == "corpus" and table_ids:
        # a corpus method asked about given tables searches those tables only
        try:
            sub = store.subset(table_ids)
        except KeyError as exc:
            raise SourceError(f"{exc.args[0]} ({label}); {LIST_IDS}") from None
        ensure_indexes(sub)
        return OpenSource(sub, store=sub, owned=[sub])
    if input == "corpus" or (input == "any" and not table_ids):
        return OpenSource(store, store=store)
    if input == "none":
        return OpenSource(None, store=store)
    return OpenSource(_pick_from_store(store, table_ids, label), store=store)


def open_source(
    source: str | Path | Corpus | Table | TableSet,
    *,
    input: Input,
    table_ids: Sequence[str] = (),
    budget: ReadBudget | None = None,
) -> OpenSource:
    """Open `source` as a method that answers from `input` needs it (see module doc); a
    table file or folder is read within `budget` (default: the environment's).

    Raises:
        SourceError: a missing or unreadable source, an unknown or ambiguous table id.
    """
    if input == "table" and len(table_ids) > 1:
        raise SourceError(
            "this method answers from one table: pass --table-id once (one id in `table_ids`)"
        )
    if isinstance(source, TableSet):
        return OpenSource(source, store=source.store)
    if isinstance(source, Table):
        tid = table_id_for(source.source.path or "table", 0)
        return OpenSource(TableSet([(tid, source)]), {tid: source.source.path or "(table)"})
    if not isinstance(source, str | Path):  # an opened corpus
        return _from_store(source, input, table_ids, "the store")
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceError(f"no store, table file or folder at {str(path)!r}")
    if is_corpus_file(path):
        try:
            store = open_corpus(path)
        except StoreError as exc:
            raise SourceError(str(exc)) from None
        return _owned(store, input, table_ids, path)
    if path.is_file() and input in ("table", "tables", "any"):
        try:
            return _pick_from_file(path, table_ids, budget)
        except _ManyTables:
            if input != "any":
                raise
            # a method that also answers from a corpus (auto) searches the file's tables
    if input == "none":
        return OpenSource(None)
    return _owned(_ingested(path, budget), input, table_ids, path)


def _owned(store: Corpus, input: Input, table_ids: Sequence[str], path: Path) -> OpenSource:
    """`_from_store` on a store opened here: closed when it fails, else owned by the source."""
    try:
        opened = _from_store(store, input, table_ids, repr(str(path)))
    except SourceError:
        store.close()
        raise
    opened.owned.append(store)
    return opened


def resolve_options(
    spec: MethodSpec,
    *,
    config: str | None = None,
    options: Mapping[str, Any] | MethodOptions | None = None,
    config_paths: Sequence[Path | ConfigFile] | None = None,
) -> MethodOptions:
    """The method's options: defaults < ``[methods.NAME]`` in tablequest.toml < the named
    config < `options` (`MethodSpec.resolve_options`; see `tablequest.methods.options`);
    `config_paths`: the files to read (an entry point passes `Settings.files`).

    Raises:
        OptionError: unknown option, bad value, or unknown config name.
    """
    return spec.resolve_options(config=config, options=options, config_paths=config_paths)


def ask(
    question: str,
    source: str | Path | Corpus | Table | TableSet,
    *,
    method: str = "auto",
    options: Mapping[str, Any] | MethodOptions | None = None,
    config: str | None = None,
    llm: LLM | None = None,
    llm_config: LLMConfig | None = None,
    task: Task = "tableqa",
    steps: int | None = None,
    table_ids: Sequence[str] = (),
    trace: Trace | None = None,
    trace_dir: str | Path | None = None,
    cache: bool = True,
    cache_dir: Path | None = None,
    usage: UsageMeter | None = None,
    sandbox: Sandbox | None = None,
    settings: Settings | None = None,
    conversation: Conversation | None = None,
) -> Result:
    """Answer `question` from `source` with the registered method `method`.

    Args:
        question: The question (a claim with task "fact_verification").
        source: A store file, a table file, a folder, a `Store`, a `Table` or a `TableSet`.
        method: A registered method name (`tablequest methods` lists them).
        options: Option values (names as in `tablequest methods NAME`), or ready options.
        config: A named paper configuration of the method (``10step-5s1-small``).
        llm: The model (None: the method's LLM-free preview).
        llm_config: Where the model lives (embeddings and rerank servers default to it).
        task: "tableqa" or "fact_verification".
        steps: Cap on LLM calls for this question (default: the method's).
        table_ids: Tables to answer from, for methods that answer from given tables.
        trace: Trace to record into (default: a new file in `trace_dir`).
        cache: Whether caches (embeddings) may be used.
        settings: What the entry point loaded (`Settings.load`): the config files of the
            method's options, the trace folder and its retention limits, the cache folder,
            the reading budget of a table file or folder, embeddings and sandbox isolation
            (None: the environment's and the config files found here).

    Raises:
        UnknownMethod, OptionError: a bad method name or option.
        SourceError: an unreadable source or a bad table id.
        BadValue: an empty or blank question, or steps < 1.
        EncoderUnavailable: the method's encoder needs an extra that is not installed.
    """
    if not question.strip():
        raise BadValue("the question is empty")
    spec = get_method(method)
    files = settings.files if settings is not None else None
    opts = resolve_options(spec, config=config, options=options, config_paths=files)
    if steps is not None and steps < 1:
        raise BadValue(f"--steps must be >= 1, got {steps}")
    budget = StepBudget(steps if steps is not None else opts.default_steps(), reserve=0)
    if trace is None:
        traces = settings.traces if settings is not None else None  # also its retention
        trace = Trace.for_query(trace_dir, traces=traces)
    if cache_dir is None and settings is not None:
        cache_dir = settings.store.cache_dir
    context = MethodContext(
        llm=llm,
        usage=usage or UsageMeter(),
        llm_config=llm_config,
        cache=cache,
        cache_dir=cache_dir,
        sandbox=sandbox,
        settings=settings,
    )
    reading = ReadBudget.from_settings(settings.reading) if settings is not None else None
    followup = None
    if conversation is not None:
        followup = conversation.prepare(
            question, llm=llm, trace=trace, input=spec.input, usage=context.usage
        )
        question = followup.question
    opened = _open_preferring(source, spec, table_ids, followup, reading, trace)
    try:
        result = _run(spec, opts, context, opened, question, task, budget, trace)
    except Exception as exc:  # a surface names the trace with the error (tablequest.errors)
        if trace.path is not None and trace.path.exists():
            trace_note(exc, trace.path)
        raise
    finally:
        opened.close()
    if conversation is not None and followup is not None:
        conversation.record(followup, result)
    return result


def _open_preferring(
    source: str | Path | Corpus | Table | TableSet,
    spec: MethodSpec,
    table_ids: Sequence[str],
    followup: FollowUp | None,
    reading: ReadBudget | None,
    trace: Trace,
) -> OpenSource:
    """`open_source`, with a follow-up's preferred tables as the table ids when the caller
    named none; tables the source no longer holds fall back to the whole source."""
    if table_ids or followup is None or not followup.table_ids:
        return open_source(source, input=spec.input, table_ids=table_ids, budget=reading)
    try:
        return open_source(source, input=spec.input, table_ids=followup.table_ids, budget=reading)
    except SourceError as exc:
        trace.event("fallback", stage="rewrite", reason=f"previous tables not usable: {exc}")
        return open_source(source, input=spec.input, budget=reading)


def _run(
    spec: MethodSpec,
    opts: MethodOptions,
    context: MethodContext,
    opened: OpenSource,
    question: str,
    task: Task,
    budget: StepBudget,
    trace: Trace,
) -> Result:
    method = spec.build(opts, context)  # refused (a missing option): no trace is started
    trace.event(
        "decision", stage="ask", method=spec.name, options=opts.label(), task=task,
        question=question, store=_store_name(opened),
    )  # fmt: skip
    try:
        if context.llm is None and spec.needs_llm:
            result = _without_llm(method, opened, question, task, trace)
            if not _ended(trace):  # the method never ran: say how the ask ended
                trace.event("decision", stage="result", status=result.status, reason=result.reason)
        else:
            result = method.answer(question, opened.value, task=task, budget=budget, trace=trace)
    except EncoderUnavailable:
        raise  # a missing extra: the caller says which one to install
    except Exception as exc:  # never a traceback: record it and report a failed run
        result = failed_result(trace, exc)
    finally:
        method.close()
    result.method = result.method or spec.name
    result.trace_path = result.trace_path or (str(trace.path) if trace.path else None)
    ids = [*result.tables_consulted, *([result.final_table] if result.final_table else [])]
    details = result.typed_details
    ids += [str(c["table_id"]) for c in details.get("candidates", [])]
    ids += [str(r["table_id"]) for r in details.get("routes", [])]
    result.sources = {tid: name for tid in ids if (name := opened.name_of(tid)) is not None}
    if result.final_table and result.final_table not in result.tables:
        table = opened.table(result.final_table)
        if table is not None:
            result.tables[result.final_table] = table
    return result


def _store_name(opened: OpenSource) -> str | None:
    """The store file the ask reads, as its trace records it (`trace.store_key`); None for
    a table file, a folder or anything else held in memory."""
    name = opened.store.name if opened.store is not None else ":memory:"
    return None if name == ":memory:" else store_key(name)


def _ended(trace: Trace) -> bool:
    """Whether the trace's last event states the ask's status (a method's ``end``)."""
    events = trace.events
    return bool(events) and events[-1].get("stage") in ("end", "result") and "status" in events[-1]


def _without_llm(
    method: Method, opened: OpenSource, question: str, task: Task, trace: Trace
) -> Result:
    if isinstance(method, Previewing) and opened.value is not None:
        result = method.preview(question, opened.value, task=task, trace=trace)
        if isinstance(result, Result):  # a plugin's preview may return something else
            return result
    candidates: list[CandidateRecord] = []
    if opened.value is not None and not isinstance(opened.value, TableSet):
        hits = search(opened.value, question, k=5)
        trace.event(
            "rank", method="grep", hits=[{"table_id": h.table_id, "score": h.score} for h in hits]
        )
        candidates = [
            {"table_id": h.table_id, "score": round(h.score, 6),
             "matched_rows": sorted({r for rs in h.matched_rows.values() for r in rs}),
             "preview": preview_hit(opened.value, h, question)}
            for h in hits
        ]  # fmt: skip
    trace.event("fallback", stage="ask", reason=f"{NO_LLM}; LLM-free search only")
    return failed(NO_LLM, trace=trace, candidates=candidates)


def failed_result(trace: Trace, exc: BaseException) -> Result:
    """A "failed" Result for an unexpected error, recorded in the trace."""
    reason = f"{type(exc).__name__}: {exc}"
    trace.event(
        "error",
        stage="ask",
        error=type(exc).__name__,
        message=str(exc),
        traceback=traceback.format_exc(limit=8),
    )
    return failed(reason, trace=trace, error=reason)
