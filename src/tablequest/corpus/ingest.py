"""Ingest: walk paths, read every table, store each file atomically.

Files are read and serialized in worker processes (spawned, so no DuckDB state is forked)
when there are many; the parent process only writes. A file whose content hash is already
stored under the same path is a no-op. A file that fails to read is reported with its
reason and leaves the store as it was (its previously stored tables, if any, are kept).

Transactions (measured choice): every file is atomic — all of its tables or none, and a
changed file's old tables are replaced in the same transaction. Files are committed in
groups (up to `BATCH_FILES` files or `BATCH_SECONDS` seconds) with one Arrow bulk insert,
because DuckDB spends 3.5–6 ms on each small commit of table-sized rows (0.15 ms per file
in bulk); when a group fails, each of its files is retried in its own transaction. A crash
mid-group leaves the store consistent: the group is simply ingested again next time.

Walking (ours): directories are followed through symlinks, each real directory once (no
loops); names starting with "." are skipped; files are visited in sorted order.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tablequest.corpus.store import Store, table_row
from tablequest.table.errors import UnreadableTable
from tablequest.table.readers import read_tables

BATCH_FILES = 256
BATCH_SECONDS = 2.0
PARALLEL_THRESHOLD = 64  # fewer files than this are read in-process (no pool start-up)
MAX_FILE_BYTES = 2 * 1024**3


@dataclass
class FileFailure:
    path: str
    reason: str


@dataclass
class IngestReport:
    """What `ingest` did; `to_json()` is the `tablequest ingest --json` payload."""

    files_seen: int = 0
    tables_stored: int = 0
    tables_unchanged: int = 0
    files_failed: list[FileFailure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen,
            "tables_stored": self.tables_stored,
            "tables_unchanged": self.tables_unchanged,
            "files_failed": [{"path": f.path, "reason": f.reason} for f in self.files_failed],
        }

    @property
    def ok(self) -> bool:
        """True when at least one table was stored or found unchanged."""
        return self.tables_stored + self.tables_unchanged > 0


def walk(paths: Iterable[str | Path]) -> Iterator[tuple[Path, str | None]]:
    """Yield (file, None) for every file under paths, or (path, reason) when unusable."""
    seen_dirs: set[tuple[int, int]] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_file():
            yield path, None
        elif path.is_dir():
            yield from _walk_dir(path, seen_dirs)
        elif path.exists():
            yield path, "not a regular file or directory"
        else:
            yield path, "no such file or directory"


def _walk_dir(root: Path, seen: set[tuple[int, int]]) -> Iterator[tuple[Path, str | None]]:
    try:
        st = root.stat()
    except OSError as exc:
        yield root, f"cannot open directory: {exc.strerror or exc}"
        return
    if (st.st_dev, st.st_ino) in seen:
        return
    seen.add((st.st_dev, st.st_ino))
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        yield root, f"cannot list directory: {exc.strerror or exc}"
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        p = Path(entry.path)
        try:
            if entry.is_dir():
                yield from _walk_dir(p, seen)
            elif entry.is_file():
                yield p, None
        except OSError as exc:
            yield p, f"cannot stat: {exc.strerror or exc}"


# A worker's answer for one file: ("unchanged", n) | ("stored", rows) | ("failed", reason)
Outcome = tuple[str, Any]


def read_file(path: str, known_hash: str | None) -> Outcome:
    """Read one file into table rows (runs in worker processes)."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            return ("failed", f"file is {size / 1024**3:.1f} GB, over the 2 GB limit")
        data = Path(path).read_bytes()
    except OSError as exc:
        return ("failed", f"cannot read file: {exc.strerror or exc}")
    digest = hashlib.sha256(data).hexdigest()
    if digest == known_hash:
        return ("unchanged", None)
    try:
        tables = read_tables(path, data=data)
    except UnreadableTable as exc:
        return ("failed", exc.reason)
    except Exception as exc:  # a reader bug must not stop the ingest; name it
        return ("failed", f"unexpected {type(exc).__name__}: {exc}")
    if not tables:
        return ("failed", "no table found")
    try:
        rows = [table_row(t, path=path, file_hash=digest, idx=i) for i, t in enumerate(tables)]
    except Exception as exc:
        return ("failed", f"cannot serialize table: {type(exc).__name__}: {exc}")
    return ("stored", rows)


def _same_hash(path: str, digest: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest() == digest
    except OSError:
        return False  # the worker reports why it cannot be read


def _read_many(args: Sequence[tuple[str, str | None]]) -> list[Outcome]:
    return [read_file(p, h) for p, h in args]


def ingest(
    store: Store,
    paths: Iterable[str | Path],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    index: bool = True,
) -> IngestReport:
    """Ingest every table under `paths` into `store`; never raises for a bad file.

    With `index` (default), the grep index of the new corpus is built and persisted at the
    end, so commands that open the store read-only never build it per query.
    """
    report = IngestReport()
    known = store.known_files()
    todo: list[tuple[str, str | None]] = []
    shown: list[str] = []
    for path, problem in walk(paths):
        report.files_seen += 1
        key = str(path.resolve())
        if problem is not None:
            report.files_failed.append(FileFailure(str(path), problem))
        elif key in known and _same_hash(key, known[key][0]):
            report.tables_unchanged += known[key][1]  # no worker needed for a no-op
        else:
            todo.append((key, known.get(key, (None, 0))[0]))
            shown.append(str(path))
    total = len(todo)
    pending: list[tuple[str, str, list[tuple[Any, ...]]]] = []
    started = time.monotonic()
    for done, (key, display, outcome) in enumerate(
        zip([k for k, _ in todo], shown, _outcomes(todo, workers), strict=True), start=1
    ):
        status, payload = outcome
        if status == "unchanged":
            report.tables_unchanged += known[key][1]
        elif status == "failed":
            report.files_failed.append(FileFailure(display, str(payload)))
        else:
            pending.append((key, display, payload))
        if len(pending) >= BATCH_FILES or (pending and time.monotonic() - started > BATCH_SECONDS):
            _flush(store, report, pending, known)
            started = time.monotonic()
        if progress is not None:
            progress(done, total)
    _flush(store, report, pending, known)
    if index and report.tables_stored:
        from tablequest.corpus.rank import grep_index

        grep_index(store)
    return report


def _outcomes(todo: list[tuple[str, str | None]], workers: int | None) -> Iterator[Outcome]:
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    main = sys.modules.get("__main__")
    spawnable = getattr(main, "__file__", None) is not None or getattr(main, "__spec__", None)
    if len(todo) < PARALLEL_THRESHOLD or n_workers <= 1 or not spawnable:
        for key, h in todo:
            yield read_file(key, h)
        return
    chunk = 16
    batches = [todo[i : i + chunk] for i in range(0, len(todo), chunk)]
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=n_workers, mp_context=get_context("spawn")) as pool:
            for results in pool.map(_read_many, batches):
                done += 1
                yield from results
    except (BrokenProcessPool, OSError):
        # workers cannot start here (e.g. __main__ is stdin); read the rest in-process
        for batch in batches[done:]:
            yield from _read_many(batch)


def _flush(
    store: Store,
    report: IngestReport,
    pending: list[tuple[str, str, list[tuple[Any, ...]]]],
    known: dict[str, tuple[str, int]],
) -> None:
    failed = set(store.put_files([(key, rows, key in known) for key, _, rows in pending]))
    for key, display, rows in pending:
        if key in failed:
            report.files_failed.append(FileFailure(display, "store write failed"))
        else:
            report.tables_stored += len(rows)
    pending.clear()
