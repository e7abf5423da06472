"""What one server holds: the store, the asks, the model, the retrievers, the trace folder.

`ServerState` is the library side of every route: the API and the pages call it, so both
behave the same. A request sets only the options its method allows (`request_settable`: every
option not declared ``request=False``): options naming paths, URLs, sandbox settings or memory
files are refused with the option's name (they would let a client make the server call any
address or write anywhere); the operator sets them in ``tablequest.toml`` (``[methods.NAME]``),
which requests still get. A request raises a cost-bearing option (samples, depths, steps,
tokens per call) at most to the server's maximum in `tablequest.configfile.COST_BOUNDS`, else
422 naming it (`refuse_costly_options`, issue 40).

Every ask's trace starts with the server's ``request`` decision (question, method, table ids)
and ends with its ``result`` decision (status, answer, reason), so each trace names its
question and how it ended whatever the method records.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tablequest.configfile import COST_BOUNDS
from tablequest.corpus import (
    SQL_LIMIT,
    EncoderSettings,
    Retriever,
    RetrieverSettings,
    SqlResult,
    make_retriever,
)
from tablequest.llm import LLM, LLMConfig, build_llm
from tablequest.methods import (
    Conversation,
    Conversations,
    MethodOptions,
    MethodSpec,
    OptionError,
    Result,
    Task,
    ask,
    failed_result,
    get_method,
    list_methods,
    open_source,
    option_name,
    request_settable,
    resolve_options,
)
from tablequest.service.asks import AskCancelled, AskJob, AskManager, StreamingTrace
from tablequest.service.config import ServeConfig
from tablequest.service.names import short_name
from tablequest.service.public import Scrubber
from tablequest.service.stores import StoreManager
from tablequest.settings import Settings
from tablequest.trace import new_trace_path, store_key, store_of

__all__ = ["AskSpec", "CostlyOption", "ServerOnlyOption", "ServerState"]

TRACE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.-]{0,120}$")
LEXICAL = frozenset({"grep", "bm25"})
SEARCH_THREADS = 2
SQL_THREADS = 4
"""SQL queries running at once (each on DuckDB's 2 threads of the generation's runner)."""


@dataclass(frozen=True)
class AskSpec:
    """A validated ask."""

    question: str
    method: str
    options: Mapping[str, Any] = field(default_factory=dict)
    config: str | None = None
    steps: int | None = None
    table_ids: tuple[str, ...] = ()
    task: Task = "tableqa"
    conversation_id: str | None = None
    """Continue this conversation of the store (None: start a new one)."""


class ServerOnlyOption(OptionError):
    """A request tried to set a server-side option (the API answers 422 naming it)."""

    http_status = 422
    code = "server_only_option"


def refuse_server_options(method: MethodSpec, options: Mapping[str, Any]) -> None:
    """A request sets only the options its method allows (`request_settable`, an allowlist):
    paths, URLs, sandbox settings and memory files come from the operator, never a request.

    Raises:
        ServerOnlyOption: an option the method declares server-side only (unknown names are
            left to `resolve_options`, which names the known ones).
    """
    allowed = request_settable(method.options)
    for name in options:
        key = option_name(name)
        if key in method.options.model_fields and key not in allowed:
            raise ServerOnlyOption(
                f"option {name!r} of method {method.name} cannot be set by a request (it "
                "names a path, a URL, a sandbox setting or a memory file of the server); the "
                f"operator sets it in tablequest.toml [methods.{method.name}]"
            )


class CostlyOption(OptionError):
    """A request set a cost-bearing option (or ``steps``) above the server's maximum
    (`tablequest.configfile.COST_BOUNDS`); the API answers 422 naming it."""

    http_status = 422
    code = "over_server_limit"


def refuse_costly_options(
    method: MethodSpec, spec: AskSpec, asked: MethodOptions, base: MethodOptions
) -> None:
    """A request raises a cost-bearing option at most to its ``most`` in `COST_BOUNDS`:
    `asked` are the options with the request's, `base` those without (what the operator's
    files set stands, whatever its value).

    Raises:
        CostlyOption: `spec.steps` or an option over its bound, named with the bound.
    """
    steps = COST_BOUNDS["ask"]["steps"]
    if spec.steps is not None and steps.over(spec.steps, steps.most):
        raise CostlyOption(
            f"steps = {spec.steps} is over this server's limit for a request ({steps.most:g})"
        )
    for key, bound in COST_BOUNDS.get(f"methods.{method.name}", {}).items():
        value = getattr(asked, key, None)
        if value != getattr(base, key, None) and bound.over(value, bound.most):
            raise CostlyOption(
                f"option {key!r} of method {method.name} = {value} is over this server's "
                f"limit for a request ({bound.most:g}); it raises what the ask costs (the "
                f"operator may set more in tablequest.toml [methods.{method.name}])"
            )


class ServerState:
    """The store, asks, model and retrievers of one server (see the module doc)."""

    def __init__(self, config: ServeConfig, *, llm: LLM | None = None) -> None:
        self.config = config
        self.trace_dir = config.trace_dir.expanduser().resolve()
        self.stores = StoreManager(config.store)
        self.uploads = self.stores.path.with_name(self.stores.path.name + ".uploads")
        self.conversations = Conversations.for_source(self.stores.path)
        self.asks = AskManager(max_asks=config.limits.max_asks, timeout=config.limits.ask_timeout)
        self.settings = config.settings if config.settings is not None else Settings.load()
        self.llm_config = config.llm_config
        self.llm = llm
        if llm is None and (
            config.llm_spec or (config.llm_config and config.llm_config.configured)
        ):
            model = config.llm_config or LLMConfig.from_settings(self.settings)
            cache_dir = self.settings.store.cache_dir
            self.llm = build_llm(model, llm_spec=config.llm_spec, cache_dir=cache_dir)
        self._search_limiter: anyio.CapacityLimiter | None = None
        self._sql_limiter: anyio.CapacityLimiter | None = None
        self._retrievers: dict[tuple[str, str], tuple[Retriever, threading.Lock]] = {}
        self._lock = threading.Lock()

    # -- retrieval ---------------------------------------------------------------------
    @property
    def search_limiter(self) -> anyio.CapacityLimiter:
        """Searches run on at most `SEARCH_THREADS` threads: with the GIL, more threads only
        share one core in 5 ms slices, which stretches every search behind its neighbours
        (first come, first served keeps the tail short)."""
        if self._search_limiter is None:
            self._search_limiter = anyio.CapacityLimiter(SEARCH_THREADS)
        return self._search_limiter

    @property
    def sql_limiter(self) -> anyio.CapacityLimiter:
        """SQL queries run on at most `SQL_THREADS` threads (the rest wait their turn)."""
        if self._sql_limiter is None:
            self._sql_limiter = anyio.CapacityLimiter(SQL_THREADS)
        return self._sql_limiter

    def sql_limit(self, limit: int | None) -> int:
        """The rows a query may return: `limit` (default 1,000) within `max_sql_rows`."""
        return max(1, min(limit or SQL_LIMIT, self.config.limits.max_sql_rows))

    def run_sql(self, query: str, *, limit: int | None = None) -> SqlResult:
        """Run a read-only query on the current store (`SqlRunner.run`) within the server's
        limits: `sql_limit(limit)` rows, `sql_timeout` seconds, `sql_max_bytes` bytes.

        Raises:
            SqlRefused: a statement that is not allowed. SqlError: the query failed.
            StoreError: the store cannot be queried (`StoreOutdated`: a store of format 1).
        """
        limits = self.config.limits
        with self.stores.sql_runner() as runner:
            return runner.run(
                query,
                limit=self.sql_limit(limit),
                timeout=limits.sql_timeout,
                max_bytes=limits.sql_max_bytes,
            )

    def retriever(self, method: str, encoder: str) -> tuple[Retriever, threading.Lock | None]:
        """A cached retriever (with a lock to hold while it ranks, for encoder state).

        Raises:
            BadValue: an unknown retriever or a bad setting.
            EncoderUnavailable: the encoder's extra is missing.
        """
        key = (method, "" if method in LEXICAL else encoder)
        with self._lock:
            entry = self._retrievers.get(key)
        if entry is None:
            embeddings = EncoderSettings.from_settings(self.settings, self.llm_config)
            settings = RetrieverSettings(encoder=encoder, embeddings=embeddings)
            entry = (make_retriever(method, settings), threading.Lock())
            with self._lock:
                entry = self._retrievers.setdefault(key, entry)
        return entry[0], None if method in LEXICAL else entry[1]

    def warm(self) -> None:
        """Load the grep index and the registered methods (the first ask would otherwise
        import every method package while holding the import lock)."""
        self.stores.warm()
        list_methods()

    # -- asks --------------------------------------------------------------------------
    def check_ask(self, spec: AskSpec) -> None:
        """Refuse a bad ask before it starts (so the client gets a 4xx, not a stream).

        Raises:
            UnknownMethod, OptionError, SourceError: what `ask` would raise.
            ServerOnlyOption, CostlyOption: an option a request may not set (so high).
        """
        method = get_method(spec.method)
        refuse_server_options(method, spec.options)
        files = self.settings.files
        asked = resolve_options(
            method, config=spec.config, options=spec.options, config_paths=files
        )
        refuse_costly_options(method, spec, asked, resolve_options(method, config_paths=files))
        with self.stores.reader() as store:
            open_source(store, input=method.input, table_ids=spec.table_ids).close()
        if spec.conversation_id is not None:
            self.conversations.get(spec.conversation_id)

    def start_ask(self, spec: AskSpec) -> AskJob:
        """Check `spec`, then run it in the ask pool (see `AskManager.start`), in the
        conversation it names or a new one (`tablequest.methods.conversation`).

        Raises:
            UnknownConversation: `spec.conversation_id` is not a conversation of this store.
        """
        self.check_ask(spec)
        conversation = (
            self.conversations.get(spec.conversation_id)
            if spec.conversation_id is not None
            else self.conversations.new()
        )
        path = new_trace_path(self.trace_dir)

        def run(job: AskJob, trace: StreamingTrace) -> Result:
            try:
                trace.event(
                    "decision", stage="request", question=spec.question, method=spec.method,
                    table_ids=list(spec.table_ids), store=store_key(self.stores.path),
                    conversation=conversation.id,
                )  # fmt: skip
                result = self._ask(spec, trace, conversation)
            except AskCancelled as exc:  # stopped before the method's own error handling ran
                result = failed_result(trace, exc)
                result.method = spec.method
            with contextlib.suppress(AskCancelled):  # past its deadline: the result stands
                trace.event(
                    "decision", stage="result", status=result.status, answer=result.answer,
                    reason=result.reason,
                )  # fmt: skip
            return result

        return self.asks.start(spec.question, spec.method, path, run)

    def scrubber(self, *extra: str | Path) -> Scrubber:
        """Cuts the server's folders off paths in what a response sends (`Scrubber`): the
        corpus roots and uploads of the current generation, the store's folder, the traces,
        and `extra` folders (``run_pandas``: the Python install and the sandbox's)."""
        with self.stores.reader() as store:
            roots = list(store.snapshot.roots)
        return Scrubber([*roots, self.stores.path.parent, *extra], self.trace_dir)

    def table_name(self, table_id: str) -> str | None:
        """The short name of a stored table (its file and sheet), None when unknown."""
        with self.stores.reader() as store:
            info = store.snapshot.info.get(table_id)
        return short_name(info.name) if info is not None else None

    def _ask(self, spec: AskSpec, trace: StreamingTrace, conversation: Conversation) -> Result:
        with self.stores.reader() as store:
            return ask(
                spec.question,
                store,
                method=spec.method,
                options=spec.options,
                config=spec.config,
                llm=self.llm,
                llm_config=self.llm_config,
                task=spec.task,
                steps=spec.steps,
                table_ids=spec.table_ids,
                trace=trace,
                settings=self.settings,
                conversation=conversation,
            )

    # -- traces ------------------------------------------------------------------------
    def trace_files(self) -> dict[str, Path]:
        """Trace id (file stem) → file, for the JSONL files in the trace folder that ran
        against this server's store (`store_of`): the folder may hold the traces of every
        store the user asked, with their prompts and cells."""
        if not self.trace_dir.is_dir():
            return {}
        mine = store_key(self.stores.path)
        return {
            p.stem: p
            for p in self.trace_dir.iterdir()
            if p.suffix == ".jsonl" and p.is_file() and TRACE_ID.match(p.stem)
            and store_of(p) == mine
        }  # fmt: skip

    def trace_path(self, trace_id: str) -> Path | None:
        """The file of a listed trace id (ids are looked up, never joined to a path)."""
        if not TRACE_ID.match(trace_id):
            return None
        return self.trace_files().get(trace_id)

    def close(self) -> None:
        self.asks.close()
        self.stores.close()
        if self.llm is not None:
            self.llm.close()
