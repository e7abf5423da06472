"""Corpus builders: one store from all tables of a benchmark, in a chosen serialization.

A corpus format is ``csv``, ``markdown``, ``html``, ``mixed`` or ``transposed[-BASE]``
(BASE one of the four others; bare ``transposed`` is ``transposed-html``, the one text format
that marks the transposed table's header column, as ``<th>``). The format only changes the
table's serialized text (what grep and previews see; `Store` keys it on `source.format`); the
words indexed by BM25 and the dense encoder are the same in every format, so their rankings
do not depend on it (choice of the store, see `tablequest.corpus.storage.store`).

Mixed (TableSeek §Robustness, "Mixed" corpus): each table gets one of csv / markdown / html.
When the benchmark says how a table is rendered in its mixed corpus (TCR-Bench's
`table_format`, kept by the loader as `meta["render_format"]`), that format is used; otherwise
the format comes from a seeded hash of the table key::

    h = int.from_bytes(sha256(f"{seed}:{key}".encode("utf-8")).digest()[:8], "big")
    format = ("csv", "markdown", "html")[h % 3]

Caching: a built corpus is a DuckDB store at
``<cache dir>/corpora/{dataset}-{format}-{fingerprint}.duckdb`` (cache dir:
`tablequest.llm.default_cache_dir()`, i.e. $TABLEQUEST_CACHE_DIR or the platformdirs user
cache). The fingerprint hashes the builder version, dataset name, format, seed and every
table's key, reader format, metadata and file identity (size and mtime; the content hash for
in-memory tables), so changed inputs give a new file and unchanged ones reuse the old. The
store is built under a temporary name in the same directory, checkpointed, closed and then
renamed, so a killed build never leaves a half-written corpus under the final name. The
temporary name carries the builder's PID (``.{name}.{pid}-{random}.tmp.duckdb``); a build
killed with SIGKILL cannot remove it, so every `build_corpus` on a file cache first removes
those of dead builds (`tablequest.eval.stale_builds`).

Table ids are `table_id_for(key, 0)`: the dataset key maps to its id without opening the store.
Dense vectors are shared across the corpora of one cache directory through
``embeddings.duckdb`` (keyed by content hash and encoder), so the four formats of a dataset are
encoded once. When another process holds the corpus file, so that the vectors cannot be
written into it, they are kept in memory for this run (a note says so).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from tablequest.corpus import (
    Corpus,
    Store,
    StoreError,
    StoreLocked,
    ensure_indexes,
    missing_indexes,
    open_corpus,
    table_id_for,
    table_row,
)
from tablequest.errors import UsageError
from tablequest.eval.buildwork import BuildWork
from tablequest.eval.datasets.common import Dataset, DatasetError
from tablequest.eval.stale_builds import clean_stale_builds
from tablequest.table import Format, Source, Table

__all__ = [
    "BASE_FORMATS",
    "CORPUS_FORMATS",
    "BuildWork",
    "Corpus",
    "CorpusError",
    "build_corpus",
    "corpus_fingerprint",
    "corpus_table",
    "default_corpus_dir",
    "mixed_format",
    "parse_format",
]

BUILDER_VERSION = 2  # 2: a cell's line breaks no longer split `plain` lines
BASE_FORMATS: tuple[str, ...] = ("csv", "markdown", "html")
CORPUS_FORMATS: tuple[str, ...] = ("csv", "markdown", "html", "mixed", "transposed")
_BATCH = 256


class CorpusError(UsageError):
    """A corpus cannot be built or opened; the message names the input and the fix."""


def default_corpus_dir() -> Path:
    """``<tablequest cache dir>/corpora``."""
    from tablequest.llm import default_cache_dir

    return default_cache_dir() / "corpora"


def parse_format(spec: str) -> tuple[bool, str]:
    """(transposed?, base format) of a corpus format spec; CorpusError when unknown."""
    text = spec.strip().lower()
    transposed = text.startswith("transposed")
    base = text.removeprefix("transposed").lstrip("-_") if transposed else text
    if transposed and not base:
        base = "html"
    if base not in (*BASE_FORMATS, "mixed"):
        raise CorpusError(
            f"unknown corpus format {spec!r}; use csv, markdown, html, mixed or "
            "transposed[-csv|-markdown|-html|-mixed]"
        )
    return transposed, base


def mixed_format(key: str, seed: int = 0) -> str:
    """The format of table `key` in a mixed corpus (seeded hash, see module doc)."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return BASE_FORMATS[int.from_bytes(digest[:8], "big") % len(BASE_FORMATS)]


def _table_format(key: str, meta: Any, base: str, seed: int) -> str:
    if base != "mixed":
        return base
    render = str(meta.get("render_format", "")).strip().lower() if meta else ""
    return render if render in BASE_FORMATS else mixed_format(key, seed)


def corpus_table(table: Table, *, key: str, fmt: str, transposed: bool = False) -> Table:
    """The table as stored in a corpus: optionally transposed, serialized as `fmt`."""
    if transposed:
        table = table.transpose()
    fmt_name: Format = fmt
    return dataclasses.replace(table, source=Source(path=key, format=fmt_name))


def corpus_fingerprint(dataset: Dataset, fmt: str, *, seed: int = 0) -> str:
    """Hex digest identifying the inputs of `build_corpus(dataset, fmt, seed=seed)`."""
    digest = hashlib.sha256()
    head = {"v": BUILDER_VERSION, "dataset": dataset.name, "format": fmt, "seed": seed}
    digest.update(json.dumps(head, sort_keys=True).encode())
    for key, ref in dataset.table_refs.items():
        if ref.table is not None:
            ident: list[Any] = ["inline", ref.table.content_hash]
        else:
            try:
                stat = ref.path.stat()
            except OSError as exc:
                raise CorpusError(f"{dataset.name}: table file {str(ref.path)!r}: {exc}") from exc
            ident = [str(ref.path), stat.st_size, stat.st_mtime_ns]
        row = [key, ref.format, sorted((str(k), str(v)) for k, v in ref.meta.items()), ident]
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass
class BuiltCorpus:
    """A built corpus: its store (opened; a sharded corpus after `scale.evalrun.shard_corpus`,
    `path` then its manifest), file, format and the key → table id mapping."""

    dataset: str
    format: str
    path: Path | None
    store: Corpus
    keys: list[str]
    formats: dict[str, str]
    read_only: bool = False
    _rev: dict[str, str] | None = field(default=None, init=False, repr=False)

    def table_id(self, key: str) -> str:
        """Store id of the dataset table `key` (KeyError naming it when not in the corpus)."""
        if key not in self.formats:
            raise KeyError(f"table {key!r} is not in the {self.dataset} {self.format} corpus")
        return table_id_for(key, 0)

    def table_ids(self, keys: Sequence[str]) -> list[str]:
        """Store ids of several keys (KeyError for the first unknown one)."""
        return [self.table_id(k) for k in keys]

    def key_of(self, table_id: str) -> str | None:
        """The dataset key of a store id (None for an unknown id)."""
        return self._reverse().get(table_id)

    def _reverse(self) -> dict[str, str]:
        if self._rev is None:
            self._rev = {table_id_for(k, 0): k for k in self.keys}
        return self._rev

    def reopen(self, *, read_only: bool) -> None:
        """Close and reopen the store file in the other mode (no-op for in-memory corpora)."""
        if self.path is None:
            return
        self.store.close()
        try:
            self.store = open_corpus(self.path, read_only=read_only)
        except StoreError as exc:
            raise CorpusError(str(exc)) from exc
        self.read_only = read_only

    def close(self) -> None:
        self.store.close()


def _open(path: Path, *, read_only: bool) -> Store:
    try:
        return Store(path, read_only=read_only)
    except StoreError as exc:
        raise CorpusError(str(exc)) from exc


def _fill(
    store: Store,
    dataset: Dataset,
    transposed: bool,
    base: str,
    seed: int,
    progress: Callable[[int, int], None] | None,
    work: BuildWork | None = None,
) -> dict[str, str]:
    if work is None:
        formats = _store_tables(store, dataset, transposed, base, seed, progress, None)
        ensure_indexes(store)  # grep and BM25, built now and persisted with the corpus
        return formats
    work.begin()
    try:
        formats = _store_tables(store, dataset, transposed, base, seed, progress, work)
        work.finish(store)  # the indexes, then the vectors encoded meanwhile
    except BaseException:
        work.cancel()  # a failed or stopped build does not wait for the queued encodings
        raise
    return formats


def _store_tables(
    store: Store,
    dataset: Dataset,
    transposed: bool,
    base: str,
    seed: int,
    progress: Callable[[int, int], None] | None,
    work: BuildWork | None,
) -> dict[str, str]:
    """Store every table of `dataset` (each batch handed to `work` as it is read)."""
    formats: dict[str, str] = {}
    batch: list[tuple[str, Sequence[tuple[Any, ...]], bool]] = []
    read: list[tuple[str, str, Table]] = []  # (content hash, plain text, table) for `work`
    total = len(dataset.table_refs)
    for done, (key, ref) in enumerate(dataset.table_refs.items(), start=1):
        fmt = _table_format(key, ref.meta, base, seed)
        try:
            table = corpus_table(ref.load(), key=key, fmt=fmt, transposed=transposed)
        except DatasetError as exc:
            raise CorpusError(f"{dataset.name}: cannot read table {key!r}: {exc}") from exc
        formats[key] = fmt
        row = table_row(table, path=key, file_hash=table.content_hash, idx=0)
        batch.append((key, [row], False))
        read.append((table.content_hash, row[12], table))  # row[12]: the plain text
        if len(batch) >= _BATCH or done == total:
            if work is not None:
                work.stored(read)  # encoded on the encoding thread while more are read
            read = []
            failed = store.put_files(batch)
            if failed:
                raise CorpusError(f"{dataset.name}: could not store tables {failed[:5]}")
            batch = []
            if progress is not None:
                progress(done, total)
    store.con.execute(
        "CREATE TABLE IF NOT EXISTS corpus_meta (key TEXT NOT NULL, value TEXT NOT NULL)"
    )
    store.con.executemany(
        "INSERT INTO corpus_meta VALUES (?, ?)", [[k, v] for k, v in formats.items()]
    )
    return formats


def _read_formats(store: Store) -> dict[str, str]:
    rows = store.con.execute("SELECT key, value FROM corpus_meta").fetchall()
    return {str(k): str(v) for k, v in rows}


def build_corpus(
    dataset: Dataset,
    fmt: str = "csv",
    *,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    in_memory: bool = False,
    read_only: bool = True,
    progress: Callable[[int, int], None] | None = None,
    work: BuildWork | None = None,
) -> BuiltCorpus:
    """Build (or reuse from the cache) the corpus of all tables of `dataset` in `fmt`.

    Args:
        dataset: A loaded benchmark (`tablequest.eval.datasets.load`).
        fmt: csv | markdown | html | mixed | transposed[-BASE].
        seed: Seed of the mixed-format hash.
        cache_dir: Where corpus files live (default: `default_corpus_dir()`).
        in_memory: Build an in-memory store instead (nothing cached).
        read_only: Open the cached file read-only (several processes may share it).
        progress: Called with (tables stored, total) while building.
        work: What a build does beside the tables and their grep and BM25 indexes
            (`BuildWork`: vectors encoded meanwhile, more indexes); nothing on a cached corpus.

    Raises:
        CorpusError: unknown format, unreadable table, or an unusable cache file.
    """
    transposed, base = parse_format(fmt)
    name = f"transposed-{base}" if transposed else base
    if not dataset.table_refs:
        raise CorpusError(f"{dataset.name}: the dataset has no tables")
    if in_memory:
        store = Store()
        formats = _fill(store, dataset, transposed, base, seed, progress, work)
        return BuiltCorpus(dataset.name, name, None, store, list(formats), formats)
    directory = Path(cache_dir) if cache_dir is not None else default_corpus_dir()
    fingerprint = corpus_fingerprint(dataset, name, seed=seed)[:16]
    path = directory / f"{dataset.name}-{name}-{fingerprint}.duckdb"
    clean_stale_builds(directory, before=time.time())
    built = not path.is_file()
    if built:
        _build_file(path, dataset, transposed, base, seed, progress, work)
    store = _open(path, read_only=read_only)
    if built and work is not None and work.encoder is not None:
        _share(store, directory, work)
    try:
        formats = _read_formats(store)
    except duckdb.Error as exc:
        store.close()
        raise CorpusError(
            f"corpus file {str(path)!r} is not a tablequest corpus ({exc}); delete it to rebuild"
        ) from exc
    corpus = BuiltCorpus(dataset.name, name, path, store, list(formats), formats, read_only)
    if missing_indexes(store) and (work is None or work.base_indexes):
        _add_indexes(corpus)  # a corpus cached by an older version (or built without them)
    return corpus


def _share(store: Store, directory: Path, work: BuildWork) -> None:
    """Add the vectors a build encoded to the shared cache of its directory."""
    from tablequest.corpus import embedding_model
    from tablequest.eval.shared_vectors import share_vectors

    share_vectors(store, directory, [embedding_model(work.encoder.name, v) for v in work.views])


def _add_indexes(corpus: BuiltCorpus) -> None:
    """Persist the indexes a cached corpus lacks; when another process holds the file they
    are built in memory on first use instead (with a note)."""
    if not corpus.read_only:
        _ensure_indexes(corpus.store)
        return
    try:
        corpus.reopen(read_only=False)
    except CorpusError as exc:
        if not isinstance(exc.__cause__, StoreLocked):
            raise
    else:
        _ensure_indexes(corpus.store)
    corpus.reopen(read_only=True)


def _ensure_indexes(store: Corpus) -> None:
    for shard in store.shards:
        ensure_indexes(shard)


def _build_file(
    path: Path,
    dataset: Dataset,
    transposed: bool,
    base: str,
    seed: int,
    progress: Callable[[int, int], None] | None,
    work: BuildWork | None = None,
) -> None:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp.duckdb")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with Store(tmp) as store:
            _fill(store, dataset, transposed, base, seed, progress, work)
            store.con.execute("CHECKPOINT")
        os.replace(tmp, path)
    except (OSError, StoreError, duckdb.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CorpusError(
            f"cannot build the {dataset.name} corpus in {str(path.parent)!r}: {reason} "
            "(choose another --cache-dir)"
        ) from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            with contextlib.suppress(OSError):
                leftover.unlink()
