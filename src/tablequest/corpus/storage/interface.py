"""The `Corpus` protocol and the `ShardBackend` it ranks on (`corpus.storage.corpus` opens).

A leaf of the corpus package: it imports nothing of it at run time, so the storage modules
(`shards`), the ranking (`retrieval.shardrank`) and every caller can name the protocol without
a cycle. What it means, and how to open one: `tablequest.corpus.storage.corpus`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tablequest.corpus.storage.relations import Relation
    from tablequest.corpus.storage.store import Store
    from tablequest.table import Source, Table

__all__ = ["Corpus", "ShardBackend"]


class ShardBackend(Protocol):
    """Runs one named `ShardIndexes` method on every shard (in-process or on Ray actors)."""

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        """`method(*args[i])` on shard i, for every shard; results in shard order."""
        ...

    def close(self) -> None: ...


class Corpus(Protocol):
    """Tables to read and rank: one store or a sharded corpus (module doc).

    Read API: the same answers, in the same (table-id) order, for the same tables however
    they are stored. Ids are opaque; `KeyError` names an unknown one.
    """

    backend: ShardBackend | None
    """Where the per-shard scoring primitives run (None: in this process)."""

    @property
    def path(self) -> Path | None:
        """The store file or the manifest (None: an in-memory store)."""
        ...

    @property
    def manifest(self) -> Path | None:
        """The manifest of a sharded corpus; None for one store."""
        ...

    @property
    def read_only(self) -> bool: ...

    @property
    def name(self) -> str:
        """The file as given, or ":memory:"."""
        ...

    @property
    def notes(self) -> list[str]:
        """What the user should know about it (a migration, an index kept in memory)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Corpus: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- read API ----------------------------------------------------------------------
    def __len__(self) -> int: ...

    def table_ids(self) -> list[str]: ...

    def get(self, table_id: str) -> Table: ...

    def get_rows(self, table_id: str, row_ids: Sequence[int]) -> Table: ...

    def index_table(self, table_id: str) -> Table: ...

    def shape(self, table_id: str) -> tuple[int, int]: ...

    def source(self, table_id: str) -> Source: ...

    def text(self, table_id: str) -> str: ...

    def plain(self, table_id: str) -> str: ...

    def ids_for_path(self, path: str) -> list[str]: ...

    def iter_tables(self) -> Iterator[tuple[str, Table]]: ...

    def column(self, name: str) -> tuple[list[str], list[str]]: ...

    def rows(self, table_ids: Sequence[str]) -> list[tuple[Any, ...]]: ...

    def subset(self, table_ids: Sequence[str]) -> Store: ...

    def relation(self, table_id: str) -> Relation: ...

    def relations(self) -> list[Relation]: ...

    @property
    def format_version(self) -> int: ...

    def known_files(self) -> dict[str, tuple[str, int]]: ...

    def fingerprint(self) -> str: ...

    def cached_index(self, name: str) -> Any | None: ...

    def remember_index(self, name: str, index: Any) -> None: ...

    # -- layout ------------------------------------------------------------------------
    @property
    def shards(self) -> Sequence[Store]:
        """The stores holding the tables, in shard order (one store: itself)."""
        ...

    def locate(self, table_id: str) -> Store:
        """The store of `shards` that holds (or would hold) `table_id`."""
        ...
