"""The short Python API: `open`, `ask` and `search` over a folder, a table file or a store.

    import tablequest as tq
    corpus = tq.open("data/")                      # a folder: ingested into a cached store
    r = tq.ask("How long is the river Varna?", "data/", llm="http://localhost:8000/v1")
    r                                              # in Jupyter: an answer card with evidence

What each source becomes (the rest of the library's sources are `methods.run.open_source`'s):

- a folder or a table file: ingested into a store of its own under the user cache dir
  (``<cache dir>/stores/<name>-<hash of the absolute path>.duckdb``; `default_cache_dir`, so
  ``$TABLEQUEST_CACHE_DIR`` moves it). Re-opening re-ingests only what changed: `ingest`
  skips a file whose content hash is stored under the same path, and the tables of files
  that disappeared from the folder are dropped first. Nothing is written into the folder.
- a store file (``.duckdb``) or a sharded corpus's manifest: opened read-only.
- a `Store`: used as given.

Choices (ours):

- The cached store stays open for writing while its `Corpus` is open: DuckDB lets one
  process hold a file for writing (any number of connections inside it), so re-running a
  notebook cell that opens the same folder works while the old `Corpus` is still referenced;
  another process opening the same folder waits for the lock (`StoreLocked` after the lock
  timeout) — `close()` the corpus, or use ``with tq.open(...) as corpus``.
- `ask` with a folder uses the cached store too (``cache=False``: ingested into memory as
  before); a table file goes straight to `methods.run.ask`, which reads it without ingest.
- ``llm=`` takes an `LLM`, a URL of an OpenAI-compatible server (the model is ``model=``, or
  the first one the server lists at ``GET /models``; key, timeouts and retries as
  `resolve_config` finds them), or None: no model, as before (the method's LLM-free
  preview; the Result says "no LLM configured").
- `search` keeps the library's older form ``search(store, question, ...)`` working: a
  `Store` as first argument means that form.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, overload

from tablequest.corpus.retrieval.retrievers import RetrieverSettings
from tablequest.corpus.retrieval.retrievers import search as corpus_search
from tablequest.corpus.storage.ingest import IngestReport, ingest
from tablequest.corpus.storage.shards import ShardedStore, is_manifest
from tablequest.corpus.storage.store import Hit, Store
from tablequest.llm.base import LLM, ModelUnreachable
from tablequest.llm.cache import default_cache_dir
from tablequest.llm.config import build_llm, resolve_config
from tablequest.llm.modelserver import ModelServer, ModelServerError
from tablequest.methods.base import Result
from tablequest.methods.registry import get_method
from tablequest.methods.run import SourceError, is_store_file
from tablequest.methods.run import ask as run_ask
from tablequest.table import Table

__all__ = ["Corpus", "TableView", "ask", "open", "resolve_llm", "search", "store_path_for"]

Source = str | Path | Store


def store_path_for(path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The cached store of a folder or table file, keyed by its absolute path."""
    resolved = Path(path).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", resolved.name)[:40] or "root"
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / "stores" / f"{slug}-{digest}.duckdb"


def _forget_missing(store: Store, root: Path) -> int:
    """Drop the tables of files under `root` that no longer exist; how many files."""
    prefix = str(root) if root.is_file() else str(root).rstrip("/") + "/"
    gone = [
        key
        for key in store.known_files()
        if (key == prefix or key.startswith(prefix)) and not Path(key).is_file()
    ]
    if gone:
        with store.transaction():
            store.con.execute("DELETE FROM tables WHERE list_contains(?, path)", [gone])
    return len(gone)


class TableView(Mapping[str, Table]):
    """The corpus's tables by id, read from the store when asked for (not all at once)."""

    def __init__(self, store: Store) -> None:
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
            lines.append(f"| {tid} | {self.name(tid).replace('|', chr(92) + '|')} |")
        more = len(self) - 50
        return "\n".join(lines) + (f"\n\n… {more} more" if more > 0 else "")


class Corpus:
    """A store opened by `open`: its tables, search and ask.

    Attributes:
        store: The `Store` (the cached one for a folder or file).
        path: What was opened, as given.
        report: The ingest that brought the cached store up to date (None for a store).
    """

    def __init__(self, store: Store, path: str, report: IngestReport | None, owned: bool) -> None:
        self.store = store
        self.path = path
        self.report = report
        self._owned = owned
        self.tables = TableView(store)

    def search(
        self,
        question: str,
        *,
        k: int = 5,
        method: str = "grep",
        settings: RetrieverSettings | None = None,
    ) -> list[Hit]:
        """The `k` tables that best match `question` (retriever `method`), with matched rows.
        A blank question is refused (ValueError), as by the CLI, the API and MCP."""
        return corpus_search(self.store, _asked(question), k=k, method=method, settings=settings)

    def ask(
        self, question: str, *, llm: LLM | str | None = None, model: str | None = None, **kw: Any
    ) -> Result:
        """Answer `question` from this corpus (keywords as `tablequest.ask`)."""
        return ask(question, self.store, llm=llm, model=model, **kw)

    def close(self) -> None:
        """Close the store when `open` opened it (a `Store` passed in stays open)."""
        if self._owned:
            self.store.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Corpus {self.path!r}: {len(self.tables)} tables>"

    def _repr_markdown_(self) -> str:
        return f"**{self.path}** ({self.store.name}): {len(self.tables)} tables"


def open(  # shadows the builtin in this module on purpose: the API is `tq.open(path)`
    path: Source, *, cache_dir: str | Path | None = None, lock_timeout: float | None = None
) -> Corpus:
    """Open a folder, a table file, a store file or a `Store` as a `Corpus` (module doc).

    Raises:
        SourceError: nothing at `path`, or no table in it could be read.
        StoreError: the cached store cannot be written (disk full, locked by another process).
    """
    if isinstance(path, Store):
        return Corpus(path, path.name, None, owned=False)
    where = Path(path).expanduser()
    if not where.exists():
        raise SourceError(f"no store, table file or folder at {str(where)!r}")
    if where.is_file() and is_manifest(where):
        return Corpus(ShardedStore(where, read_only=True), str(path), None, owned=True)
    if where.is_file() and is_store_file(where):
        return Corpus(Store(where, read_only=True), str(path), None, owned=True)
    store = Store(store_path_for(where, cache_dir), lock_timeout=lock_timeout)
    try:
        _forget_missing(store, where.resolve())
        report = ingest(store, [where])
        if not len(store):
            reasons = "; ".join(f"{f.path}: {f.reason}" for f in report.files_failed[:3])
            raise SourceError(f"no table could be read from {str(where)!r} ({reasons})")
    except BaseException:
        store.close()
        raise
    return Corpus(store, str(path), report, owned=True)


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
) -> LLM | None:
    """The model `llm` names: an `LLM` as is, a server URL (wrapped like the CLI's: reply
    cache unless `cache` is False), or None (no model).

    Raises:
        ModelUnreachable: a URL without `model` whose server cannot list its models.
        ConfigError: a bad configuration (``tablequest.toml``, environment).
    """
    if llm is None or isinstance(llm, LLM):
        return llm
    config = resolve_config(url=llm, model=model, api_key=api_key, cache=cache)
    name = config.model or _first_model(llm, config.api_key, config.timeout)
    return build_llm(resolve_config(url=llm, model=name, api_key=api_key, cache=cache))


def ask(
    question: str,
    source: str | Path | Store | Table | Any,
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
    `tablequest.methods.run.ask`'s (options, config, steps, table_ids, trace_dir, ...).

    Raises:
        UnknownMethod, OptionError, SourceError, ValueError: as `tablequest.methods.run.ask`.
        ModelUnreachable: a URL whose server lists no model (and no `model` given).
    """
    model_llm = resolve_llm(llm, model=model, cache=cache)
    if (
        cache
        and isinstance(source, str | Path)
        and Path(source).expanduser().is_dir()
        and get_method(method).input != "none"
    ):
        with open(source) as corpus:
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
    question: Store,
    source: str,
    *,
    k: int = 5,
    method: str = "grep",
    settings: RetrieverSettings | None = None,
    rows: bool = True,
) -> list[Hit]: ...


def search(
    question: str | Store,
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
    if isinstance(question, Store):  # the older form: search(store, question)
        return corpus_search(
            question, str(source), k=k, method=method, settings=settings, rows=rows
        )
    question = _asked(question)
    if isinstance(source, Store):
        return corpus_search(source, question, k=k, method=method, settings=settings, rows=rows)
    with open(source) as corpus:
        return corpus_search(
            corpus.store, question, k=k, method=method, settings=settings, rows=rows
        )


def _asked(question: str) -> str:
    """`question`, unless it is blank: refused as every surface refuses it."""
    if not question.strip():
        raise ValueError("the question is empty")
    return question
