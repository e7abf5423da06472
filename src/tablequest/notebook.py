"""The short Python API: `open`, `ask` and `search` over a folder, a table file or a store.

    import tablequest as tq
    corpus = tq.open("data/")                      # a folder: ingested into a cached store
    r = tq.ask("How long is the river Varna?", "data/", llm="http://localhost:8000/v1")
    r                                              # in Jupyter: an answer card with evidence
    chat = tq.chat("data/", llm="http://localhost:8000/v1")
    chat.ask("Sales in Q3?"); chat.ask("and for Q4?")  # a follow-up, rewritten with the history

What each source becomes (the rest of the library's sources are `methods.run.open_source`'s):

- a folder or a table file: ingested into a store of its own under the user cache dir
  (``<cache dir>/stores/<name>-<hash of the absolute path>.duckdb``; `default_cache_dir`, so
  ``$TABLEQUEST_CACHE_DIR`` moves it). Re-opening re-ingests only what changed: `ingest`
  skips a file whose content hash is stored under the same path, and the tables of files
  that disappeared from the folder are dropped first. Nothing is written into the folder.
- a store file (``.duckdb``) or a sharded corpus's manifest: opened read-only.
- an opened corpus (a `Store`, or a sharded corpus from `open_corpus`): used as given.

Choices (ours):

- The cached store stays open for writing while its `OpenedCorpus` is open: DuckDB lets one
  process hold a file for writing (any number of connections inside it), so re-running a
  notebook cell that opens the same folder works while the old `OpenedCorpus` is still referenced;
  another process opening the same folder waits for the lock (`StoreLocked` after the lock
  timeout) — `close()` the corpus, or use ``with tq.open(...) as corpus``.
- `ask` with a folder uses the cached store too (``cache=False``: ingested into memory as
  before); a table file goes straight to `methods.run.ask`, which reads it without ingest.
- ``llm=`` takes an `LLM`, a URL of an OpenAI-compatible server (the model is ``model=``, or
  the first one the server lists at ``GET /models``; key, timeouts and retries as
  `resolve_config` finds them), or None: no model, as before (the method's LLM-free
  preview; the Result says "no LLM configured").
- `chat` opens the source as `open` does and keeps one conversation of its store
  (`tablequest.methods.conversation`: kept beside the store, a folder's beside its cached
  store); ``conversation="latest"`` or an id continues one.
- `search` keeps the library's older form ``search(store, question, ...)`` working: a
  corpus (not a string) as first argument means that form.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, overload

from tablequest.configfile import ConfigFileError
from tablequest.corpus import (
    Corpus,
    Hit,
    IngestReport,
    RetrieverSettings,
    Store,
    ingest_corpus,
    is_corpus_file,
    open_corpus,
)
from tablequest.corpus import search as corpus_search
from tablequest.errors import BadValue
from tablequest.llm import (
    LLM,
    ConfigError,
    LLMConfig,
    ModelServer,
    ModelServerError,
    ModelUnreachable,
    build_llm,
    default_cache_dir,
)
from tablequest.methods import Conversation, Conversations, Result, SourceError, Turn, get_method
from tablequest.methods import ask as run_ask
from tablequest.settings import Settings
from tablequest.table import ReadBudget, Table

__all__ = [
    "Chat",
    "Hits",
    "OpenedCorpus",
    "StoredTables",
    "ask",
    "chat",
    "open",
    "resolve_llm",
    "search",
    "store_path_for",
]

Source = str | Path | Corpus


def store_path_for(path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The cached store of a folder or table file, keyed by its absolute path."""
    resolved = Path(path).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", resolved.name)[:40] or "root"
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / "stores" / f"{slug}-{digest}.duckdb"


SOURCE_CHARS = 80
"""A source shown in a notebook's Markdown table keeps its last characters (the file name)."""


def _source_cell(name: str) -> str:
    """`name` as one Markdown table cell: one line, its end kept at `SOURCE_CHARS`."""
    flat = " ".join(name.split("\n")).replace("\r", " ")
    if len(flat) > SOURCE_CHARS:
        flat = "…" + flat[-(SOURCE_CHARS - 1) :]
    return flat.replace("\\", "\\\\").replace("|", "\\|")


class Hits(list[Hit]):
    """Search hits (a list of `Hit`, best first) that a notebook shows as a table: rank,
    table id, score, where the table came from and its matched rows."""

    def __init__(self, hits: list[Hit], store: Corpus) -> None:
        super().__init__(hits)
        self.names = {h.table_id: StoredTables(store).name(h.table_id) for h in hits}

    def _repr_markdown_(self) -> str:
        if not self:
            return "*no table matches*"
        lines = ["| # | table id | score | source | matched rows |", "|---|---|---|---|---|"]
        for rank, hit in enumerate(self, 1):
            rows = sorted({r for found in hit.matched_rows.values() for r in found})
            shown = ", ".join(map(str, rows[:10])) + (" …" if len(rows) > 10 else "")
            name = _source_cell(self.names.get(hit.table_id, ""))
            lines.append(f"| {rank} | {hit.table_id} | {hit.score:.3g} | {name} | {shown} |")
        return "\n".join(lines)


class StoredTables(Mapping[str, Table]):
    """The corpus's tables by id, read from the store when asked for (not all at once)."""

    def __init__(self, store: Corpus) -> None:
        self._store = store

    def __getitem__(self, table_id: str) -> Table:
        return self._store.get(table_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.table_ids())

    def __len__(self) -> int:
        return len(self._store)

    def name(self, table_id: str) -> str:
        """Where the table came from: its file (and sheet)."""
        src = self._store.source(table_id)
        return str(src.path) if src.sheet is None else f"{src.path}#{src.sheet}"

    def __repr__(self) -> str:
        return f"<{len(self)} tables>"

    def _repr_markdown_(self) -> str:
        lines = ["| table id | source |", "|---|---|"]
        for tid in list(self)[:50]:
            lines.append(f"| {tid} | {_source_cell(self.name(tid))} |")
        more = len(self) - 50
        return "\n".join(lines) + (f"\n\n… {more} more" if more > 0 else "")


class OpenedCorpus:
    """A store opened by `open`: its tables, search and ask.

    Attributes:
        store: The opened corpus (`tablequest.corpus.storage.corpus.Corpus`: a `Store`, the
            cached one for a folder or file, or a sharded corpus).
        path: What was opened, as given.
        report: The ingest that brought the cached store up to date (None for a store).
    """

    def __init__(self, store: Corpus, path: str, report: IngestReport | None, owned: bool) -> None:
        self.store = store
        self.path = path
        self.report = report
        self._owned = owned
        self.tables = StoredTables(store)

    def search(
        self,
        question: str,
        *,
        k: int = 5,
        method: str = "grep",
        settings: RetrieverSettings | None = None,
    ) -> list[Hit]:
        """The `k` tables that best match `question` (retriever `method`), with matched rows.
        A blank question is refused (BadValue), as by the CLI, the API and MCP."""
        found = corpus_search(self.store, _asked(question), k=k, method=method, settings=settings)
        return Hits(found, self.store)

    def ask(
        self, question: str, *, llm: LLM | str | None = None, model: str | None = None, **kw: Any
    ) -> Result:
        """Answer `question` from this corpus (keywords as `tablequest.ask`)."""
        return ask(question, self.store, llm=llm, model=model, **kw)

    def close(self) -> None:
        """Close the store when `open` opened it (a `Store` passed in stays open)."""
        if self._owned:
            self.store.close()

    def __enter__(self) -> OpenedCorpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<OpenedCorpus {self.path!r}: {len(self.tables)} tables>"

    def _repr_markdown_(self) -> str:
        return f"**{self.path}** ({self.store.name}): {len(self.tables)} tables"


def open(  # shadows the builtin in this module on purpose: the API is `tq.open(path)`
    path: Source,
    *,
    cache_dir: str | Path | None = None,
    lock_timeout: float | None = None,
    settings: Settings | None = None,
) -> OpenedCorpus:
    """Open a folder, a table file, a store file or a `Store` as an `OpenedCorpus` (module doc);
    `settings` (default: loaded here, `load_settings`) give the cache folder, the lock wait
    and the reading budget of an ingest.

    Raises:
        SourceError: nothing at `path`, or no table in it could be read.
        StoreError: the cached store cannot be written (disk full, locked by another process).
    """
    if not isinstance(path, str | Path):  # an opened store or sharded corpus
        return OpenedCorpus(path, path.name, None, owned=False)
    where = Path(path).expanduser()
    if not where.exists():
        raise SourceError(f"no store, table file or folder at {str(where)!r}")
    if is_corpus_file(where):
        return OpenedCorpus(open_corpus(where), str(path), None, owned=True)
    settings = settings if settings is not None else load_settings()
    cached = store_path_for(where, cache_dir or settings.store.cache_dir)
    store = Store(cached, lock_timeout=lock_timeout or settings.store.lock_timeout)
    try:
        # the tables of files gone from the folder leave the store and its indexes first
        budget = ReadBudget.from_settings(settings.reading)
        report = ingest_corpus(store, [where], budget=budget, prune=True)
        if not len(store):
            reasons = "; ".join(f"{f.path}: {f.reason}" for f in report.files_failed[:3])
            raise SourceError(f"no table could be read from {str(where)!r} ({reasons})")
    except BaseException:
        store.close()
        raise
    return OpenedCorpus(store, str(path), report, owned=True)


class Chat:
    """A conversation with a corpus (`chat`): each `ask` is a follow-up of the ones before,
    rewritten with their history into a standalone question and preferring the previous
    answer's tables (`tablequest.methods.conversation`).

    Attributes:
        corpus: The opened corpus (`OpenedCorpus`).
        conversation: The `Conversation` (its `id`, its `turns`).
    """

    def __init__(
        self,
        corpus: OpenedCorpus,
        conversation: Conversation,
        *,
        llm: LLM | None,
        method: str,
        settings: Settings,
        kwargs: dict[str, Any],
    ) -> None:
        self.corpus = corpus
        self.conversation = conversation
        self._llm = llm
        self._method = method
        self._settings = settings
        self._kwargs = kwargs

    @property
    def id(self) -> str:
        return self.conversation.id

    @property
    def history(self) -> list[Turn]:
        """The turns so far: each question as asked and as answered, and its answer."""
        return list(self.conversation.turns)

    def ask(self, question: str, **kw: Any) -> Result:
        """Answer `question` as the next turn (keywords as `tablequest.ask`'s)."""
        kwargs = {"method": self._method, **self._kwargs, **kw}
        return run_ask(
            _asked(question), self.corpus.store, llm=self._llm, settings=self._settings,
            conversation=self.conversation, **kwargs,
        )  # fmt: skip

    def close(self) -> None:
        self.corpus.close()

    def __enter__(self) -> Chat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Chat {self.id} over {self.corpus.path!r}: {len(self.conversation.turns)} turns>"

    def _repr_markdown_(self) -> str:
        lines = [f"**conversation {self.id}** over {self.corpus.path}"]
        for n, turn in enumerate(self.conversation.turns, 1):
            asked = turn.question + (f" *(asked as: {turn.standalone})*" if turn.rewritten else "")
            lines.append(f"{n}. {asked} → {turn.answer if turn.answer else turn.status}")
        return "\n".join(lines)


def chat(
    source: Source,
    *,
    llm: LLM | str | None = None,
    model: str | None = None,
    method: str = "auto",
    conversation: str | None = None,
    cache: bool = True,
    settings: Settings | None = None,
    **kwargs: Any,
) -> Chat:
    """A conversation with `source` (what `open` takes): ``chat.ask(question)`` keeps the
    history. `conversation` continues a kept one (its id, or ``"latest"``); `llm` and
    `model` as `ask`; other keywords are `tablequest.methods.run.ask`'s, for every turn.

    Raises:
        UnknownConversation: `conversation` is not one of the store's.
        SourceError, ModelUnreachable: as `open` and `ask`.
    """
    settings = settings if settings is not None else load_settings()
    model_llm = resolve_llm(llm, model=model, cache=cache, settings=settings)
    corpus = open(source, settings=settings)
    try:
        kept = Conversations.for_source(corpus.store)
        conv = kept.get(conversation) if conversation is not None else kept.new()
    except BaseException:
        corpus.close()
        raise
    kwargs.setdefault("cache", cache)
    return Chat(corpus, conv, llm=model_llm, method=method, settings=settings, kwargs=kwargs)


def _first_model(url: str, api_key: str | None, timeout: float) -> str:
    with ModelServer(url, api_key=api_key, timeout=timeout) as server:
        server.check()  # ModelRequestsDisallowed as it is
        base = server.base_url
        try:
            return server.first_model()
        except ModelServerError as exc:
            if exc.kind == "malformed":
                raise ModelUnreachable(
                    f"{base}/models lists no model: pass model=NAME", url=base
                ) from None
            raise ModelUnreachable(
                f"cannot list the models of {base}: {exc.cause}", url=base
            ) from None


def resolve_llm(
    llm: LLM | str | None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    cache: bool | None = None,
    settings: Settings | None = None,
) -> LLM | None:
    """The model `llm` names: an `LLM` as is, a server URL (wrapped like the CLI's: reply
    cache unless `cache` is False), or None: the configured model (``[llm]`` settings: the
    environment, tablequest.toml), as the CLI without ``--llm-url``; None when there is none.
    The arguments are flags over `settings` (default: loaded here).

    Raises:
        ModelUnreachable: a URL without `model` whose server cannot list its models.
        ConfigError: a bad configuration (``tablequest.toml``, environment).
    """
    if isinstance(llm, LLM):
        return llm
    base = settings if settings is not None else load_settings()
    flags = {"llm.url": llm, "llm.model": model, "llm.api_key": api_key, "llm.cache": cache}
    if llm is None:  # the configured model, if any
        return build_llm(
            LLMConfig.from_settings(base.with_flags(flags)), cache_dir=base.store.cache_dir
        )
    config = LLMConfig.from_settings(base.with_flags(flags))
    if not config.model:
        name = _first_model(llm, config.api_key, config.timeout)
        config = dataclasses.replace(config, model=name)
    return build_llm(config, cache_dir=base.store.cache_dir)


def load_settings() -> Settings:
    """The Python API's one load (`Settings.load`: environment over tablequest.toml).

    Raises:
        ConfigError: a config file is unreadable or holds a wrong value.
    """
    try:
        return Settings.load()
    except ConfigFileError as exc:  # SettingsError too
        raise ConfigError(str(exc)) from exc


def ask(
    question: str,
    source: str | Path | Corpus | Table | Any,
    *,
    llm: LLM | str | None = None,
    model: str | None = None,
    method: str = "auto",
    cache: bool = True,
    **kwargs: Any,
) -> Result:
    """Answer `question` from `source` (a folder, table file, store file, `Store`, `Table`
    or `TableSet`) with the registered method `method`.

    `llm` is an `LLM`, the URL of an OpenAI-compatible server (``model`` or the server's
    first model) or None (the configured model, if any). A folder is ingested into its cached
    store first (``cache=False``: into memory). Every other keyword is
    `tablequest.methods.run.ask`'s (options, config, steps, table_ids, trace_dir, ...);
    ``settings`` (a `Settings`; default: loaded once here) are passed down to all of it.

    Raises:
        UnknownMethod, OptionError, SourceError, BadValue: as `tablequest.methods.run.ask`.
        ModelUnreachable: a URL whose server lists no model (and no `model` given).
    """
    settings = kwargs.pop("settings", None) or load_settings()  # the call's one load
    kwargs["settings"] = settings
    model_llm = resolve_llm(llm, model=model, cache=cache, settings=settings)
    if (
        cache
        and isinstance(source, str | Path)
        and Path(source).expanduser().is_dir()
        and get_method(method).input != "none"
    ):
        with open(source, settings=settings) as corpus:
            return run_ask(
                question, corpus.store, method=method, llm=model_llm, cache=cache, **kwargs
            )
    return run_ask(question, source, method=method, llm=model_llm, cache=cache, **kwargs)


@overload
def search(
    question: str,
    source: Source,
    *,
    k: int = 5,
    method: str = "grep",
    settings: RetrieverSettings | None = None,
    rows: bool = True,
) -> list[Hit]: ...


@overload
def search(
    question: Corpus,
    source: str,
    *,
    k: int = 5,
    method: str = "grep",
    settings: RetrieverSettings | None = None,
    rows: bool = True,
) -> list[Hit]: ...


def search(
    question: str | Corpus,
    source: Source,
    *,
    k: int = 5,
    method: str = "grep",
    settings: RetrieverSettings | None = None,
    rows: bool = True,
) -> list[Hit]:
    """The `k` tables of `source` that best match `question`, with their matched rows.

    `source` is what `open` takes; ``search(store, question, ...)`` (the older form) works
    too. `method` is a registered retriever (grep, bm25, dense, hybrid, rerank).
    """
    if not isinstance(question, str):  # the older form: search(store, question)
        return corpus_search(
            question, str(source), k=k, method=method, settings=settings, rows=rows
        )
    question = _asked(question)
    if not isinstance(source, str | Path):
        found = corpus_search(source, question, k=k, method=method, settings=settings, rows=rows)
        return Hits(found, source)
    with open(source) as corpus:
        found = corpus_search(
            corpus.store, question, k=k, method=method, settings=settings, rows=rows
        )
        return Hits(found, corpus.store)  # names read before the store closes


def _asked(question: str) -> str:
    """`question`, unless it is blank: refused as every surface refuses it."""
    if not question.strip():
        raise BadValue("the question is empty")
    return question
