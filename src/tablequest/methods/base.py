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

The Result (`tablequest.methods.result`) carries the answer, a status, the cells that support
it, the tables the method consulted, usage and the trace path; `Result.to_json()` is the
``ask --json`` payload for every method.

The method contract (every registered method, built-in or plugin):

- **One constructor.** The registry builds a method as ``factory(options, context)``
  (`MethodSpec.build`); a method class takes the same two arguments,
  ``Cls(options=None, context=None)`` (None: the options' defaults, ``MethodContext()``), so a
  class is its own factory. Any further constructor argument is keyword-only and optional
  (test doubles: an encoder, a sandbox, a store).
- **One interface** (`Method`): ``answer(question, source, *, task, budget, trace) -> Result``
  and ``close()``; a question starts with `start_query` and ends with `Query.finish`
  (`tablequest.methods.query`).
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

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from tablequest.errors import BadValue
from tablequest.llm import LLM, Deadline, StepBudget, UsageMeter
from tablequest.methods.result import Result
from tablequest.table import Table
from tablequest.trace import Trace

LIST_IDS = (
    "`table_ids` in the API and MCP; `tablequest tables --store STORE`, GET /v1/tables and "
    "MCP `list_tables` list the ids"
)
"""How a caller of any surface names tables (the library's messages reach all of them)."""

if TYPE_CHECKING:
    from tablequest.corpus import Corpus, EncoderSettings, Store
    from tablequest.llm import LLMConfig
    from tablequest.sandbox import Sandbox
    from tablequest.settings import Settings

__all__ = [
    "HasRetriever",
    "Input",
    "Method",
    "MethodContext",
    "Previewing",
    "Priming",
    "TableSet",
    "Task",
]

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
                f"pass --table-id ID ({LIST_IDS})"
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
