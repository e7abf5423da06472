"""Ingest: walk paths, read every table, store each file atomically.

Files are read and serialized in worker processes (spawned, so no DuckDB state is forked)
when there are many; the parent process only writes. A file whose content hash is already
stored under the same path is a no-op. A file that fails to read is reported with its
reason and leaves the store as it was (its previously stored tables, if any, are kept).
What a reader repaired in a file it read (`read_tables_report`: NULs removed, broken quoting
read as text, a nested table kept as cell text, a table with no data rows) is reported, one
warning each, once that file's tables are committed (`files_warned`); a no-op re-ingest does
not read the file, so it does not repeat them.

Transactions (measured choice): every file is atomic — all of its tables or none, and a
changed file's old tables are replaced in the same transaction. Files are committed in
groups (up to `BATCH_FILES` files or `BATCH_SECONDS` seconds) with one Arrow bulk insert,
because DuckDB spends 3.5–6 ms on each small commit of table-sized rows (0.15 ms per file
in bulk); when a group fails, each of its files is retried in its own transaction. A crash
mid-group leaves the store consistent: the group is simply ingested again next time.

Walking (ours): directories are followed through symlinks, each real directory once (no
loops); names starting with "." are skipped; files are visited in sorted order.

Reading (in-process or in worker processes, and how those stop): `corpus.reading`.

Reading budget (table/budget.py; docs/reliability.md "Reading budgets"): every file is read
within the budget's per-file limits (cells, decoded bytes, seconds, columns); a file over
them is reported failed with the limit and its setting, and the ingest goes on. The ingest
as a whole keeps a running total: a file whose cells would take the ingest past
`ingest_cells` is skipped the same way (smaller files after it are still stored), and once
`ingest_seconds` have passed the files not yet read are reported skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tablequest.corpus.storage.reading import outcomes, read_file
from tablequest.corpus.storage.store import Store, StoreError, StoreWriteError
from tablequest.corpus.storage.storefile import is_store_failure
from tablequest.corpus.storage.streaming import StreamSpec, put_stream
from tablequest.table import OverBudget, ReadBudget

__all__ = ["FileFailure", "FileWarning", "IngestAborted", "IngestReport", "StopSignals"]
__all__ += ["ingest", "read_file", "walk"]

BATCH_FILES = 256
BATCH_SECONDS = 2.0
_INDEX_MODULES = ("bm25s",)  # what building the BM25 index imports (corpus/lexical/rank.py)


@dataclass
class FileFailure:
    path: str
    reason: str


@dataclass
class FileWarning:
    """A repair a reader made in a stored file (one sentence)."""

    path: str
    warning: str


@dataclass
class IngestReport:
    """What `ingest` did; `to_json()` is the `tablequest ingest --json` payload."""

    files_seen: int = 0
    tables_stored: int = 0
    tables_unchanged: int = 0
    files_failed: list[FileFailure] = field(default_factory=list)
    files_warned: list[FileWarning] = field(default_factory=list)
    stopped: bool = False
    files_left: int = 0
    files_pruned: list[str] = field(default_factory=list)
    """Stored files gone from disk whose tables were removed (`ingest --prune`)."""

    def to_json(self) -> dict[str, Any]:
        """The report; `stopped` and `files_left` appear only for a run that was stopped,
        `files_pruned` only for one that pruned."""
        out: dict[str, Any] = {
            "files_seen": self.files_seen,
            "tables_stored": self.tables_stored,
            "tables_unchanged": self.tables_unchanged,
            "files_failed": [{"path": f.path, "reason": f.reason} for f in self.files_failed],
            "files_warned": [{"path": w.path, "warning": w.warning} for w in self.files_warned],
        }
        if self.stopped:
            out.update(stopped=True, files_left=self.files_left)
        if self.files_pruned:
            out["files_pruned"] = list(self.files_pruned)
        return out

    @property
    def ok(self) -> bool:
        """True when at least one table was stored or found unchanged."""
        return self.tables_stored + self.tables_unchanged > 0


class IngestAborted(StoreError):
    """The store could not be written (disk full, I/O error): the ingest stopped there.

    `report` is what was done before the failure; every table it counts as stored is
    committed and intact, and running the same ingest again finishes the rest.
    """

    def __init__(self, message: str, report: IngestReport, code: str = "store_write") -> None:
        super().__init__(message)
        self.report = report
        self.code = code


class StopSignals:
    """While active (main thread only), SIGINT and SIGTERM set `event` instead of raising.

    `ingest(..., stop=signals.event)` then ends at the next file; `received` is the signal
    number (exit status 128 + it, by convention). A second signal exits at once with that
    status: the open transaction is rolled back by DuckDB, committed files stay.
    """

    def __init__(self, signums: Sequence[int] = (signal.SIGINT, signal.SIGTERM)) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self._signums = tuple(signums)
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in self._signums:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    @property
    def name(self) -> str | None:
        """The name of the signal received ("SIGINT", "SIGTERM"), if any."""
        return None if self.received is None else signal.Signals(self.received).name

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            os.write(2, b"tablequest: interrupted again, exiting now\n")
            os._exit(128 + signum)
        self.received = signum
        self.event.set()


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


def _same_hash(path: str, digest: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest() == digest
    except OSError:
        return False  # the worker reports why it cannot be read


def ingest(
    store: Store,
    paths: Iterable[str | Path],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    index: bool = True,
    stop: threading.Event | None = None,
    budget: ReadBudget | None = None,
) -> IngestReport:
    """Ingest every table under `paths` into `store`; never raises for a bad file.

    `budget` bounds each file's reading and the whole ingest (default:
    `ReadBudget.from_env()`, which raises ValueError naming a malformed variable).

    With `index` (default), the grep and BM25 indexes the corpus lacks are built and
    persisted at the end, so commands that open the store read-only never build them. When `stop`
    is set, the files read so far are committed and the report says `stopped`.

    Raises:
        IngestAborted: the store itself failed (disk full, I/O error); `report` holds what
            was committed before.
    """
    report = IngestReport()
    stopping = stop.is_set if stop is not None else (lambda: False)
    known = store.known_files()
    spent = _Spent(budget if budget is not None else ReadBudget.from_env())
    todo, shown = _plan(paths, known, report, stopping)
    pending: list[_Read] = []
    started = time.monotonic()
    done = 0
    preload = _preload(_INDEX_MODULES) if index and todo else None
    reading = outcomes(todo, workers, lambda: stopping() or spent.late(), spent.budget)
    with contextlib.closing(reading) as read:
        for key, display, outcome in zip([k for k, _ in todo], shown, read, strict=False):
            done += 1
            status, payload = outcome
            if status == "stream":
                _flush(store, report, pending, known)
                status, payload = _stream(store, report, key, display, payload, known, spent)
            over = spent.admit(display, payload[0]) if status == "stored" else None
            if status == "streamed":
                pass
            elif status == "unchanged":
                report.tables_unchanged += known[key][1]
            elif status == "failed" or over is not None:
                report.files_failed.append(FileFailure(display, str(over or payload)))
            else:
                pending.append((key, display, *payload))
            if len(pending) >= BATCH_FILES or (
                pending and time.monotonic() - started > BATCH_SECONDS
            ):
                _flush(store, report, pending, known)
                started = time.monotonic()
            if progress is not None:
                progress(done, len(todo))
            if stopping() or spent.late():
                break
        if spent.late() and not stopping():
            reason = spent.late_reason()
            report.files_failed += [FileFailure(d, reason) for d in shown[done:]]
        _flush(store, report, pending, known)
    if preload is not None:
        preload.join()
    if stopping():
        report.stopped, report.files_left = True, len(todo) - done
    elif index:
        _index(store, report)
    return report


def _preload(modules: Sequence[str]) -> threading.Thread:
    """Import `modules` in a thread while the files are read: reading (DuckDB's load, the
    workers) mostly runs without the interpreter lock, so the index builder's imports overlap
    with it instead of following it (bm25s and SciPy: ~0.4 s of a big CSV's ingest). Joined
    before the indexes are built; an import that fails here fails again where it is used."""

    def run() -> None:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=run, name="tq-preload")
    thread.start()
    return thread


def _stream(
    store: Store,
    report: IngestReport,
    key: str,
    display: str,
    spec: StreamSpec,
    known: dict[str, tuple[str, int]],
    spent: _Spent,
) -> tuple[str, Any]:
    """Load a streamed file (`streaming.py`): ("streamed", None) when stored, else the
    outcome of reading it the usual way (DuckDB refused it, or a budget says no)."""
    import duckdb

    over = spent.admit_cells(display, spec.cells)
    if over is not None:
        return ("failed", over)
    try:
        ids = put_stream(store, spec, replace=key in known, budget=spent.budget)
    except OverBudget as exc:  # the load ran past a reading limit: nothing was written
        spent.cells -= spec.cells
        return ("failed", exc.reason)
    except duckdb.Error as exc:
        if is_store_failure(exc):
            raise IngestAborted(
                f"cannot write {display!r} to store {store.name!r}: {exc}. Ingest stopped; "
                "what was committed before is intact. Free space and run the same ingest again",
                report,
            ) from exc
        spent.cells -= spec.cells
        return read_file(key, None, spent.budget, stream=False)
    report.tables_stored += len(ids)
    return ("streamed", None)


class _Spent:
    """The ingest's running total against the `ingest_*` limits of its budget."""

    def __init__(self, budget: ReadBudget) -> None:
        self.budget = budget
        self.cells = 0
        self.started = time.monotonic()

    def admit(self, display: str, rows: list[tuple[Any, ...]]) -> str | None:
        """Count a read file's cells; the reason it is skipped when past `ingest_cells`."""
        return self.admit_cells(display, sum(int(r[8]) * int(r[9]) for r in rows))

    def admit_cells(self, display: str, cells: int) -> str | None:
        """Count `cells`; the reason the file is skipped when past `ingest_cells`."""
        cap = self.budget.ingest_cells
        if cap is not None and self.cells + cells > cap:
            needed = f"{self.cells + cells:,} cells in this ingest"
            return OverBudget(display, "ingest_cells", needed, f"{cap:,}").reason
        self.cells += cells
        return None

    def late(self) -> bool:
        """True once the ingest has run past `ingest_seconds`."""
        limit = self.budget.ingest_seconds
        return limit is not None and time.monotonic() - self.started > limit

    def late_reason(self) -> str:
        limit = f"{self.budget.ingest_seconds:g} s"
        return "not read: " + OverBudget("", "ingest_seconds", "the ingest's time", limit).reason


def _plan(
    paths: Iterable[str | Path],
    known: dict[str, tuple[str, int]],
    report: IngestReport,
    stopping: Callable[[], bool],
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Walk `paths`: (files to read with their stored hash, their names as given)."""
    todo: list[tuple[str, str | None]] = []
    shown: list[str] = []
    for path, problem in walk(paths):
        if stopping():
            break
        report.files_seen += 1
        key = str(path.resolve())
        if problem is not None:
            report.files_failed.append(FileFailure(str(path), problem))
        elif key in known and _same_hash(key, known[key][0]):
            report.tables_unchanged += known[key][1]  # no worker needed for a no-op
        else:
            todo.append((key, known.get(key, (None, 0))[0]))
            shown.append(str(path))
    return todo, shown


def _index(store: Store, report: IngestReport) -> None:
    """Build and save the indexes the corpus lacks (none after a no-op re-ingest)."""
    from tablequest.corpus.lexical.rank import ensure_indexes

    try:
        ensure_indexes(store, strict=True)
    except StoreWriteError as exc:
        raise IngestAborted(
            f"{report.tables_stored} tables stored, but their indexes could not be saved: "
            f"{exc}. Free space and run the same ingest again",
            report,
            exc.code,
        ) from exc


# A file read and waiting to be committed: (key, path as shown, table rows, warnings)
_Read = tuple[str, str, list[tuple[Any, ...]], list[str]]


def _flush(
    store: Store, report: IngestReport, pending: list[_Read], known: dict[str, tuple[str, int]]
) -> None:
    try:
        failed = set(store.put_files([(key, rows, key in known) for key, _, rows, _ in pending]))
    except StoreWriteError as exc:
        if exc.committed:
            for read in pending:
                _stored(report, read)
        left = len(pending) if not exc.committed else 0
        pending.clear()
        n = report.tables_stored
        kept = f"the {n} tables committed before are intact" if n else "the store is as it was"
        raise IngestAborted(
            f"{exc}. Ingest stopped: {kept}"
            + (f"; the last {left} files read were not stored" if left else "")
            + ". Free space (or fix the disk) and run the same ingest again",
            report,
            exc.code,
        ) from exc
    for read in pending:
        if read[0] in failed:
            report.files_failed.append(FileFailure(read[1], "store write failed"))
        else:
            _stored(report, read)
    pending.clear()


def _stored(report: IngestReport, read: _Read) -> None:
    _, display, rows, warnings = read
    report.tables_stored += len(rows)
    report.files_warned.extend(FileWarning(display, w) for w in warnings)
