"""The corpus interface: one `Corpus` protocol, a local and a sharded implementation.

The protocol itself (and `ShardBackend`) is defined in the leaf `corpus.storage.interface`
and re-exported here, with what opens and writes a corpus of either kind.

A corpus is what `search`, `ask`, `eval`, the server and the CLI read tables from. Two
implementations answer the same protocol:

- `Store` (`corpus.storage.store`): one DuckDB file (or memory);
- `ShardedStore` (`corpus.storage.shards`): N shard `Store`s behind a JSON manifest, composed
  (it holds its shards; it is not a `Store`).

`open_corpus(path)` opens either (a manifest → sharded, anything else → one store), so no
caller outside `corpus/` names an implementation or asks what kind a file is. Where the two
behave differently the protocol says it as data or a method, never as a type to test:

- `shards`: the local stores that hold the tables (a store: itself) — what SQL, migration,
  the catalog and vector preparation walk; `locate(table_id)`: the one holding a table;
- `manifest`: the sharded corpus's manifest, None for one store file (Ray starts one actor
  per shard only for a sharded corpus);
- `ingest_corpus(corpus, paths)`: each file into its home shard, or into the store;
- `missing_indexes(corpus)`: the persisted indexes its ranking would have to build.

(The last two are functions here, not methods: `Store` is storage and imports nothing of the
corpus above it — ingest, the indexes — tests/methods/test_registry.py.)

Scoring: a table's score depends only on the table and on corpus-wide numbers, so every
retriever ranks a corpus by the per-shard primitives of `corpus.retrieval.shardrank`
(`ShardIndexes`: grep top-k, BM25 statistics and scores with corpus-wide statistics, cosine
scores, the phrase and cell features of ``phrase-hybrid``; `shard_map` runs any function of
one shard's indexes) on every store of `shards`, through `backend` (None: in this process;
`tablequest.scale.actors.attach` puts Ray actors there), and merges the per-shard top-k
lists in the one-store order. One store is the one-shard case (it also keeps its persisted
bm25s indexes, which give the same scores).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.corpus.storage.interface import Corpus as Corpus
from tablequest.corpus.storage.interface import ShardBackend as ShardBackend

if TYPE_CHECKING:
    from tablequest.corpus.storage.ingest import IngestReport
    from tablequest.table import ReadBudget

__all__ = [
    "Corpus",
    "ShardBackend",
    "ingest_corpus",
    "is_corpus_file",
    "missing_indexes",
    "open_corpus",
    "prune_missing",
    "remove_tables",
]


def open_corpus(
    path: str | Path,
    *,
    read_only: bool = True,
    shards: int | None = None,
    lock_timeout: float | None = None,
) -> Corpus:
    """The corpus at `path`: a sharded corpus when it is a manifest (or `shards` is given
    for a new one), else one store (created when missing and not `read_only`).

    Raises:
        StoreError: it cannot be opened (`NotAStore`, `StoreLocked`, a bad manifest), or
            `shards` names a path that holds something other than a manifest.
    """
    from tablequest.corpus.storage.shards import ShardedStore, is_manifest
    from tablequest.corpus.storage.store import Store, StoreError

    where = Path(str(path)).expanduser()
    kw: dict[str, Any] = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
    if is_manifest(where):
        return ShardedStore(where, shards=shards, read_only=read_only, **kw)
    if shards is not None:
        if where.exists():
            raise StoreError(
                f"{str(where)!r} is not a sharded corpus: pass a new manifest path to --store"
            )
        return ShardedStore(where, shards=shards, read_only=read_only, **kw)
    return Store(where, read_only=read_only, **kw)


def is_corpus_file(path: Path) -> bool:
    """True when `path` is an existing store file or a sharded corpus's manifest."""
    from tablequest.corpus.storage.shards import is_manifest
    from tablequest.corpus.storage.storefile import what_is

    try:
        return path.is_file() and (what_is(path) is None or is_manifest(path))
    except OSError:
        return False


def ingest_corpus(
    corpus: Corpus,
    paths: Iterable[str | Path],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    stop: threading.Event | None = None,
    budget: ReadBudget | None = None,
    prune: bool = False,
) -> IngestReport:
    """Every table under `paths` into `corpus`: `corpus.storage.ingest.ingest` into one
    store (its grep and BM25 indexes too), `ingest_sharded` into a sharded corpus (each file
    into its home shard, each shard with its grep index). With `prune`, the tables of stored
    files under `paths` that no longer exist are removed first (`prune_missing`; the report's
    `files_pruned`)."""
    from tablequest.corpus.storage.ingest import ingest
    from tablequest.corpus.storage.shards import ShardedStore, ingest_sharded

    paths = list(paths)
    pruned = prune_missing(corpus, paths) if prune else []
    kw: dict[str, Any] = {"progress": progress, "workers": workers, "stop": stop}
    if isinstance(corpus, ShardedStore):
        report = ingest_sharded(corpus, paths, budget=budget, **kw)
    else:
        report = ingest(corpus.shards[0], paths, budget=budget, **kw)
    report.files_pruned = pruned
    return report


def missing_indexes(corpus: Corpus) -> list[str]:
    """The persisted indexes its ranking would build on first use: grep and BM25 of one
    store; a shard's missing grep index for a sharded corpus (which keeps BM25 postings and
    vectors in memory, `retrieval.shardrank`)."""
    from tablequest.corpus.lexical.rank import missing_indexes as store_missing
    from tablequest.corpus.storage.shards import ShardedStore

    if isinstance(corpus, ShardedStore):
        return corpus.missing_indexes()
    return store_missing(corpus.shards[0])


def remove_tables(corpus: Corpus, table_ids: Iterable[str]) -> list[str]:
    """Remove `table_ids` from `corpus`: every part of their store, and the indexes ingest
    builds rebuilt without them (`corpus.storage.removal`). Returns the ids removed.

    Raises:
        UnknownTables: an id the corpus does not hold (named; nothing is removed).
        StoreWriteError: the file or disk failed (that shard's removal rolled back).
    """
    from tablequest.corpus.storage.removal import UnknownTables, drop_tables

    ids = list(dict.fromkeys(table_ids))
    held = set(corpus.table_ids())
    unknown = [t for t in ids if t not in held]
    if unknown:
        raise UnknownTables(
            f"no table {', '.join(map(repr, unknown))} in the store "
            "(`tablequest tables` lists them); nothing removed"
        )
    by_shard: dict[int, list[str]] = {}
    for tid in ids:
        by_shard.setdefault(id(corpus.locate(tid)), []).append(tid)
    for shard in corpus.shards:
        if id(shard) in by_shard:
            drop_tables(shard, by_shard[id(shard)])
    _reindex(corpus, [s for s in corpus.shards if id(s) in by_shard])
    return ids


def prune_missing(corpus: Corpus, roots: Iterable[str | Path]) -> list[str]:
    """Remove the tables of the stored files under `roots` that no longer exist
    (`ingest --prune`, `tablequest.open`); returns those files."""
    from tablequest.corpus.storage.removal import files_gone, ids_of_files

    resolved = [Path(str(r)).expanduser().resolve() for r in roots]
    gone: list[str] = []
    ids: list[str] = []
    for shard in corpus.shards:
        files = files_gone(shard, resolved)
        gone += files
        ids += ids_of_files(shard, files)
    if ids:
        remove_tables(corpus, ids)
    return sorted(gone)


def _reindex(corpus: Corpus, touched: list[Any]) -> None:
    """Rebuild what ingest builds: grep and BM25 of one store; the grep index of each
    touched shard and the manifest's counts of a sharded corpus."""
    from tablequest.corpus.lexical.rank import ensure_indexes, grep_index
    from tablequest.corpus.storage.shards import ShardedStore

    if not isinstance(corpus, ShardedStore):
        ensure_indexes(corpus.shards[0], strict=True)
        return
    corpus._fingerprint = None
    corpus._indexes.clear()  # the off-home table map
    for shard in touched:
        if len(shard):
            grep_index(shard, strict=True)
    corpus.update_manifest()
