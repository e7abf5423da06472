"""A sharded corpus: N DuckDB stores and a JSON manifest, read through the `Store` API.

Layout: the manifest (``corpus.json``, say) names its shard files relative to itself::

    {"format": "tablequest-sharded-corpus", "version": 1, "placement": "sha256-first-table",
     "shards": ["corpus.shards/0000.duckdb", ...], "tables": [412, 398, ...]}

Placement: a table lives in shard ``shard_of(table_id, N)`` (the first 8 bytes of the
sha256 of the id, modulo N: stable across processes, machines and Python versions). The
tables of one file all go to the shard of the file's *first* table, so a file is written in
one transaction of one shard and per-file atomicity holds exactly as in one store (choice
ours: hashing every table id on its own would split a workbook's sheets across shards, and
a crash between two shards' commits would leave half a file). Most files hold one table;
the few later tables of multi-table files are found through a small id → shard map.

`ShardedStore` holds one `Store` per shard (composition: it is not a `Store`) and answers
the `Corpus` protocol (`corpus.storage.corpus`: get, source, text, plain, table_ids,
iter_tables, column, fingerprint, …) with the same results as one store holding the same
tables, in the same (table-id) order. Ranking over shards is in
`tablequest.corpus.retrieval.shardrank` (per shard, merged exactly). The manifest is written
atomically (temporary file, fsync, rename); the shard count is fixed when it is created.
Callers outside `corpus/` open one with `open_corpus(path)` and never name this class.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.corpus.storage.ingest import FileFailure, FileWarning, IngestReport, ingest, walk
from tablequest.corpus.storage.interface import ShardBackend as ShardBackend
from tablequest.corpus.storage.relations import Relation
from tablequest.corpus.storage.store import (
    Store,
    StoreError,
    subset_store,
    table_id_for,
)
from tablequest.table import Source, Table

if TYPE_CHECKING:
    from tablequest.table import ReadBudget

__all__ = [
    "MANIFEST_FORMAT",
    "ShardBackend",
    "ShardedStore",
    "copy_into_shards",
    "home_shard",
    "ingest_sharded",
    "is_manifest",
    "refresh_manifest",
    "shard_of",
    "write_manifest",
]

MANIFEST_FORMAT = "tablequest-sharded-corpus"
PLACEMENT = "sha256-first-table"
MAX_SHARDS = 4096


def shard_of(table_id: str, n_shards: int) -> int:
    """The shard of a table id: sha256 of the id, first 8 bytes big-endian, modulo N."""
    digest = hashlib.sha256(table_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def home_shard(path: str, n_shards: int) -> int:
    """The shard every table of the file at (resolved) `path` is stored in."""
    return shard_of(table_id_for(path, 0), n_shards)


def is_manifest(path: Path) -> bool:
    """True when `path` is a sharded-corpus manifest (its first 4 KB name the format)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and MANIFEST_FORMAT.encode() in head


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Write the manifest atomically: a temporary file, fsync, rename, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read sharded corpus manifest {str(path)!r}: {exc}") from exc
    shards = data.get("shards") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("format") != MANIFEST_FORMAT
        or not isinstance(shards, list)
        or not shards
        or not all(isinstance(s, str) for s in shards)
    ):
        raise StoreError(f"{str(path)!r} is not a tablequest sharded corpus manifest")
    if data.get("placement", PLACEMENT) != PLACEMENT:
        raise StoreError(f"{str(path)!r}: unknown placement {data.get('placement')!r}")
    return data


class ShardedStore:
    """N shard stores behind the `Corpus` protocol (see module doc); it holds its shards.

    Args:
        manifest: The manifest file.
        shards: Create the corpus with this many shards when the manifest does not exist;
            when it does, must be None or its shard count.
        read_only: Open every shard for reading only.
        lock_timeout: Passed to each shard's `Store`.

    Raises:
        StoreError: no manifest (read-only, or `shards` not given), an unreadable one, a
            shard count that differs from the manifest's, or a shard that cannot be opened.
    """

    def __init__(
        self,
        manifest: str | Path,
        *,
        shards: int | None = None,
        read_only: bool = False,
        lock_timeout: float | None = None,
    ) -> None:
        self.manifest = Path(str(manifest)).expanduser()
        self.path = self.manifest
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self._notes: list[str] = []
        self._indexes: dict[str, tuple[str, Any]] = {}
        self._fingerprint: str | None = None
        self.backend: ShardBackend | None = None
        self.meta = self._manifest(shards)
        self.shard_paths = [self.manifest.parent / s for s in self.meta["shards"]]
        self.stores: list[Store] = []
        kw = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
        try:
            for shard in self.shard_paths:
                self.stores.append(Store(shard, read_only=read_only, **kw))
        except StoreError:
            self.close()
            raise

    def _manifest(self, shards: int | None) -> dict[str, Any]:
        if self.manifest.exists():
            data = _read_manifest(self.manifest)
            if shards is not None and shards != len(data["shards"]):
                raise StoreError(
                    f"{str(self.manifest)!r} has {len(data['shards'])} shards, not {shards}; "
                    "a corpus keeps its shard count: ingest into a new manifest to re-shard"
                )
            return data
        if self.read_only or shards is None:
            raise StoreError(
                f"no sharded corpus at {str(self.manifest)!r}: run "
                "`tablequest ingest PATHS --store MANIFEST --shards N` first"
            )
        if not 1 <= shards <= MAX_SHARDS:
            raise StoreError(f"--shards must be in 1..{MAX_SHARDS}, got {shards}")
        folder = f"{self.manifest.stem}.shards"
        data = {
            "format": MANIFEST_FORMAT,
            "version": 1,
            "placement": PLACEMENT,
            "shards": [f"{folder}/{i:04d}.duckdb" for i in range(shards)],
            "tables": [0] * shards,
        }
        write_manifest(self.manifest, data)
        return data

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def n_shards(self) -> int:
        return len(self.shard_paths)

    @property
    def name(self) -> str:
        return str(self.manifest)

    @property
    def notes(self) -> list[str]:
        """Its own notes, then each shard's."""
        return list(dict.fromkeys([*self._notes, *(n for s in self.stores for n in s.notes)]))

    def note(self, message: str) -> None:
        if message not in self._notes:
            self._notes.append(message)

    def close(self) -> None:
        """Close the ranking backend (if any) and every shard."""
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        for store in self.stores:
            store.close()

    def __enter__(self) -> ShardedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def con(self) -> Any:
        """No connection: each shard has its own (`shards`, `locate`)."""
        raise StoreError(
            f"{str(self.manifest)!r} is a sharded corpus: it has no single DuckDB connection "
            "(use .shards[i] or .locate(table_id) for one shard)"
        )

    def update_manifest(self) -> None:
        """Record each shard's table count in the manifest (informational)."""
        self.meta["tables"] = [len(s) for s in self.stores]
        write_manifest(self.manifest, self.meta)

    # -- layout --------------------------------------------------------------------------
    @property
    def shards(self) -> list[Store]:
        return self.stores

    def locate(self, table_id: str) -> Store:
        """The shard holding `table_id` (its hash's shard unless it is a later table of a
        multi-table file)."""
        return self.stores[self._offhome().get(table_id, shard_of(table_id, self.n_shards))]

    def _offhome(self) -> dict[str, int]:
        cached = self.cached_index("offhome")
        if isinstance(cached, dict):
            return cached
        found: dict[str, int] = {}
        for i, store in enumerate(self.stores):
            for (tid,) in store.con.execute("SELECT table_id FROM tables WHERE idx > 0").fetchall():
                found[tid] = i
        self.remember_index("offhome", found)
        return found

    # -- writing (each file to its home shard) -----------------------------------------
    def known_files(self) -> dict[str, tuple[str, int]]:
        out: dict[str, tuple[str, int]] = {}
        for store in self.stores:
            out.update(store.known_files())
        return out

    def put_file(self, path: str, rows: Sequence[tuple[Any, ...]], *, replace: bool) -> None:
        self._fingerprint = None
        self.stores[home_shard(path, self.n_shards)].put_file(path, rows, replace=replace)

    def put_files(self, batch: Sequence[tuple[str, Sequence[tuple[Any, ...]], bool]]) -> list[str]:
        self._fingerprint = None
        groups: dict[int, list[tuple[str, Sequence[tuple[Any, ...]], bool]]] = {}
        for item in batch:
            groups.setdefault(home_shard(item[0], self.n_shards), []).append(item)
        failed: list[str] = []
        for shard, items in sorted(groups.items()):
            failed += self.stores[shard].put_files(items)
        return failed

    def add_table(self, table: Table, *, key: str, idx: int = 0) -> str:
        self._fingerprint = None
        return self.stores[home_shard(key, self.n_shards)].add_table(table, key=key, idx=idx)

    def missing_indexes(self) -> list[str]:
        """The grep index, when a shard has none saved: sharded ranking loads each shard's
        grep index and builds BM25 postings and vectors in memory (`retrieval.shardrank`)."""
        from tablequest.corpus.lexical.rank import GREP, missing_indexes

        return [GREP] if any(GREP in missing_indexes(s) for s in self.stores) else []

    # -- reading -----------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(len(s) for s in self.stores)

    def table_ids(self) -> list[str]:
        return list(heapq.merge(*(s.table_ids() for s in self.stores)))

    def get(self, table_id: str) -> Table:
        return self.locate(table_id).get(table_id)

    def get_rows(self, table_id: str, row_ids: Sequence[int]) -> Table:
        return self.locate(table_id).get_rows(table_id, row_ids)

    def index_table(self, table_id: str) -> Table:
        return self.locate(table_id).index_table(table_id)

    def shape(self, table_id: str) -> tuple[int, int]:
        return self.locate(table_id).shape(table_id)

    def relation(self, table_id: str) -> Relation:
        return self.locate(table_id).relation(table_id)

    def relations(self) -> list[Relation]:
        """Every shard's relations (names are unique within a shard, not across shards)."""
        return [r for s in self.stores for r in s.relations()]

    @property
    def format_version(self) -> int:
        return min((s.format_version for s in self.stores), default=2)

    def rows(self, table_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        return [row for tid in table_ids for row in self.locate(tid).rows([tid])]

    def subset(self, table_ids: Sequence[str]) -> Store:
        """A new in-memory store of only `table_ids` (as `Store.subset`)."""
        return subset_store(self, table_ids)

    def source(self, table_id: str) -> Source:
        return self.locate(table_id).source(table_id)

    def text(self, table_id: str) -> str:
        return self.locate(table_id).text(table_id)

    def plain(self, table_id: str) -> str:
        return self.locate(table_id).plain(table_id)

    def ids_for_path(self, path: str) -> list[str]:
        return self.stores[home_shard(path, self.n_shards)].ids_for_path(path)

    def iter_tables(self) -> Iterator[tuple[str, Table]]:
        return heapq.merge(*(s.iter_tables() for s in self.stores), key=lambda item: item[0])

    def column(self, name: str) -> tuple[list[str], list[str]]:
        parts = [s.column(name) for s in self.stores]
        merged = heapq.merge(*(zip(ids, vals, strict=True) for ids, vals in parts))
        ids: list[str] = []
        values: list[str] = []
        for tid, value in merged:
            ids.append(tid)
            values.append(value)
        return ids, values

    def fingerprint(self) -> str:
        """The shards' fingerprints joined (cached while the corpus is open read-only)."""
        if self._fingerprint is not None:
            return self._fingerprint
        value = "|".join(s.fingerprint() for s in self.stores)
        if self.read_only:
            self._fingerprint = value
        return value

    # -- whole-corpus state kept in memory (each shard persists its own indexes) -------
    def cached_index(self, name: str) -> Any | None:
        """An in-process value kept for the current corpus (as `Store.cached_index`)."""
        entry = self._indexes.get(name)
        return entry[1] if entry and entry[0] == self.fingerprint() else None

    def remember_index(self, name: str, index: Any) -> None:
        self._indexes[name] = (self.fingerprint(), index)


def ingest_sharded(
    store: ShardedStore,
    paths: Iterable[str | Path],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    stop: threading.Event | None = None,
    budget: ReadBudget | None = None,
) -> IngestReport:
    """`ingest` into a sharded corpus: files grouped by home shard, each shard ingested in
    turn with the one-store `ingest` (per-file atomicity, grouped commits, grep index);
    `stop` ends it at the next file, as for `ingest`; `budget` bounds each shard's ingest."""
    report, groups = plan_ingest(paths, store.n_shards)
    total = sum(len(files) for files in groups.values())
    done = 0
    for shard, files in sorted(groups.items()):
        base = done

        def step(n: int, _total: int, base: int = base) -> None:
            if progress is not None:
                progress(base + n, total)

        if stop is not None and stop.is_set():
            report.stopped = True
            report.files_left += len(files)
            continue
        part = ingest(
            store.stores[shard], files, progress=step, workers=workers, stop=stop, budget=budget
        )
        merge_reports(report, part)
        done += len(files)
    store._fingerprint = None
    store.update_manifest()
    return report


def plan_ingest(
    paths: Iterable[str | Path], n_shards: int
) -> tuple[IngestReport, dict[int, list[Path]]]:
    """Walk `paths`: a report holding the unusable paths, and the files of each shard."""
    report = IngestReport()
    groups: dict[int, list[Path]] = {}
    for path, problem in walk(paths):
        if problem is not None:
            report.files_seen += 1
            report.files_failed.append(FileFailure(str(path), problem))
            continue
        groups.setdefault(home_shard(str(path.resolve()), n_shards), []).append(path)
    return report, groups


def merge_reports(into: IngestReport, part: IngestReport | dict[str, Any]) -> None:
    """Add one shard's report (or its `to_json()`) to the whole ingest's."""
    data = part.to_json() if isinstance(part, IngestReport) else part
    into.files_seen += int(data["files_seen"])
    into.tables_stored += int(data["tables_stored"])
    into.tables_unchanged += int(data["tables_unchanged"])
    into.files_failed += [FileFailure(f["path"], f["reason"]) for f in data["files_failed"]]
    into.files_warned += [
        FileWarning(w["path"], w["warning"]) for w in data.get("files_warned", [])
    ]
    if data.get("stopped"):
        into.stopped = True
        into.files_left += int(data.get("files_left", 0))


def refresh_manifest(manifest: Path) -> None:
    """Record each shard's table count in the manifest (after shards were written apart)."""
    with ShardedStore(manifest) as corpus:
        corpus.update_manifest()


def copy_into_shards(store: Store, manifest: Path, n: int) -> None:
    """Write every table of `store` into a new sharded corpus `manifest` of `n` shards, each
    table copied whole to its file's home shard (`tablecopy.copy_tables`: its relation under
    the same `sql_name`, a streamed table's text), each shard with its grep index; built
    under a temporary name and moved into place."""
    from tablequest.corpus.lexical.rank import grep_index
    from tablequest.corpus.storage.tablecopy import copy_tables

    tmp = manifest.with_name(f".{manifest.name}.building")
    with ShardedStore(tmp, shards=n) as target:
        cursor = store.con.cursor()
        cursor.execute("SELECT table_id, path FROM tables ORDER BY table_id")
        while batch := cursor.fetchmany(2048):
            groups: dict[int, list[str]] = {}
            for table_id, path in batch:
                groups.setdefault(home_shard(str(path), n), []).append(str(table_id))
            for home, ids in sorted(groups.items()):
                copy_tables(store, target.stores[home], ids)
        cursor.close()
        for shard in target.stores:
            grep_index(shard)
        target.update_manifest()
        meta = dict(target.meta)
    # the manifest names its shard folder after itself: move both into place
    folder = tmp.with_name(f"{tmp.stem}.shards")
    final_folder = manifest.with_name(f"{manifest.stem}.shards")
    folder.rename(final_folder)
    meta["shards"] = [f"{final_folder.name}/{Path(s).name}" for s in meta["shards"]]
    write_manifest(manifest, meta)
    tmp.unlink()
