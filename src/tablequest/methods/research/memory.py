"""The siamese experience memory (DTR §3.4): parameterized feedback and abstracted lessons.

Two channels, as the paper has them:
- **parameterized feedback**: one record per R̂/N update — per executed operation under
  ``update=incremental`` (Alg. 1 lines 19–20), per executed path under ``update=lr`` (Eq. 5):
  (f_exec, f_time, f_type, r) under the path's key, the failing operation and the error
  class — keyed by the table's structure class
  (`MetaGraph.structure_key`, value-agnostic) and the query type. A question's candidate paths
  start from the statistics these records give (R̂ and N folded in time order with the
  configured update rule), so what worked on similar tables before ranks higher now.
- **abstracted experience**: value-agnostic lessons ("filter before aggregating", "re-read the
  header paths to find the sub-column"), each with an optional machine-checkable `Rule` that
  the structural prior uses (`operations.prior`); shown to the model in later prompts.

Storage (ours): two append-only DuckDB tables, ``dtr_feedback`` and ``dtr_lessons``, in the corpus
store when the table came from one (`Store.con`), else in a file (``memory_path``, default
``<user data dir>/dtr_memory.duckdb``). Records are only ever inserted, each batch in one
transaction, and statistics are computed when read, so concurrent runs cannot lose or corrupt
each other's updates: threads of one process share a lock, processes share an advisory file
lock (``<file>.lock``) and open the file only for the duration of one read or write.

Opening a DuckDB file costs tens of milliseconds, so a file memory is shared by the whole
process (`_Hub`): writes are queued and flushed in the background within `FLUSH_DELAY`
seconds (and at exit, `flush`, `summary` and `clear`), reads are served from a per-query-type
copy refreshed after `READ_TTL` seconds, and this process's own writes are applied to that copy
at once. Other processes therefore see a run's experience within about a second and a run sees
theirs within `READ_TTL`; its own is visible to its next question immediately. A store opened
read-only (or any write error) makes the memory read-only; the method records the reason in
its trace.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import platformdirs

from tablequest.errors import RunError
from tablequest.methods.research.operations import Rule
from tablequest.methods.research.planner import PathStats, update

if TYPE_CHECKING:
    from tablequest.corpus import Store

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux/macOS
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ExperienceMemory",
    "FeedbackRecord",
    "Lesson",
    "MemoryUnavailable",
    "default_memory_path",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS dtr_feedback (
    ts DOUBLE NOT NULL, run TEXT NOT NULL, structure TEXT NOT NULL, query_type TEXT NOT NULL,
    path TEXT NOT NULL, f_exec INTEGER NOT NULL, f_time DOUBLE NOT NULL, f_type INTEGER NOT NULL,
    reward DOUBLE NOT NULL, failed_op TEXT, error TEXT
);
CREATE TABLE IF NOT EXISTS dtr_lessons (
    ts DOUBLE NOT NULL, run TEXT NOT NULL, structure TEXT NOT NULL, query_type TEXT NOT NULL,
    rule TEXT, lesson TEXT NOT NULL
);
"""
FILE_NAME = "dtr_memory.duckdb"
READ_TTL = 10.0
FLUSH_DELAY = 0.5
_FEEDBACK_ROWS = (
    "SELECT structure, path, reward, ts, run FROM dtr_feedback WHERE query_type = ? "
    "ORDER BY ts, run"
)
_LESSON_ROWS = "SELECT structure, rule, lesson, ts FROM dtr_lessons WHERE query_type = ?"
Row = tuple[Any, ...]


class MemoryUnavailable(RunError):
    """The memory cannot be read or written; the message names the file and the cause."""


@dataclass(frozen=True)
class FeedbackRecord:
    """The parameterized feedback of one R̂/N update: an executed operation (or path, lr)."""

    path: str
    f_exec: int
    f_time: float
    f_type: int
    reward: float
    failed_op: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Lesson:
    """An abstracted, value-agnostic lesson; `count` = how often it was learned."""

    text: str
    rule: Rule | None = None
    count: int = 1


def default_memory_path() -> Path:
    """``<user data dir>/dtr_memory.duckdb`` (XDG_DATA_HOME on Linux)."""
    return platformdirs.user_data_path("tablequest") / FILE_NAME


class _Backend:
    """Connections to where the tables live (a store's connection or a file), locked."""

    def __init__(self, store: Store | None, path: Path | None) -> None:
        self.store = store
        self.path = path
        self.lock = threading.RLock()
        self.ready = False

    @property
    def where(self) -> str:
        if self.store is not None:
            return f"store {self.store.path or ':memory:'}"
        return str(self.path)

    @contextlib.contextmanager
    def connect(self, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A cursor/connection under the locks; None when a read finds no memory file."""
        with self.lock:
            if self.store is not None:
                cursor = self.store.con.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
                return
            assert self.path is not None
            if not write and not self.path.exists():
                yield None
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock():
                try:
                    con = duckdb.connect(str(self.path))
                except duckdb.Error as exc:
                    raise MemoryUnavailable(f"cannot open memory {self.where!r}: {exc}") from exc
                try:
                    yield con
                finally:
                    con.close()

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        assert self.path is not None
        if fcntl is None:
            yield
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        with lock_path.open("a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def select(
        self, queries: Sequence[tuple[str, Sequence[Any]]], con: Any = None
    ) -> list[list[Row]]:
        """Several reads (an empty result for a missing table or file)."""
        if con is None:
            try:
                with self.connect(write=False) as opened:
                    return self.select(queries, opened or False)
            except duckdb.Error as exc:
                raise MemoryUnavailable(f"cannot read memory in {self.where}: {exc}") from exc
        out: list[list[Row]] = []
        for sql, params in queries:
            try:
                out.append(con.execute(sql, list(params)).fetchall() if con else [])
            except duckdb.CatalogException:
                out.append([])  # no memory table yet
        return out

    def insert(self, con: Any, feedback: Sequence[Row], lessons: Sequence[Row]) -> None:
        """Append rows in one transaction."""
        if not self.ready:
            con.execute(SCHEMA)
            self.ready = True
        con.execute("BEGIN TRANSACTION")
        try:
            if feedback:
                con.executemany("INSERT INTO dtr_feedback VALUES (?,?,?,?,?,?,?,?,?,?,?)", feedback)
            if lessons:
                con.executemany("INSERT INTO dtr_lessons VALUES (?,?,?,?,?,?)", lessons)
            con.execute("COMMIT")
        except duckdb.Error:
            con.execute("ROLLBACK")
            raise


@dataclass
class _Copy:
    """The rows of one query type as last read, plus this process's writes since."""

    loaded: float
    feedback: list[Row]
    lessons: list[Row]


@dataclass
class _Hub:
    """Process-wide state of one memory file: queued writes and read copies (module doc)."""

    backend: _Backend
    pending: tuple[list[Row], list[Row]] = field(default_factory=lambda: ([], []))
    copies: dict[str, _Copy] = field(default_factory=dict)
    timer: threading.Timer | None = None
    error: str | None = None

    def add(self, feedback: list[Row], lessons: list[Row]) -> None:
        with self.backend.lock:
            if self.error:
                raise MemoryUnavailable(self.error)
            self.pending[0].extend(feedback)
            self.pending[1].extend(lessons)
            for row in feedback:
                if row[3] in self.copies:
                    self.copies[row[3]].feedback.append(_fb_view(row))
            for row in lessons:
                if row[3] in self.copies:
                    self.copies[row[3]].lessons.append((row[2], row[4], row[5], row[0]))
            if self.timer is None:
                self.timer = threading.Timer(FLUSH_DELAY, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self, con: Any = None) -> None:
        """Write the queued rows (in `con`, or a connection opened for it)."""
        with self.backend.lock:
            self.timer = None
            feedback, lessons = self.pending
            if not feedback and not lessons:
                return
            self.pending = ([], [])
            try:
                if con is not None:
                    self.backend.insert(con, feedback, lessons)
                else:
                    with self.backend.connect(write=True) as opened:
                        self.backend.insert(opened, feedback, lessons)
            except (duckdb.Error, MemoryUnavailable) as exc:
                self.error = f"cannot write memory in {self.backend.where}: {exc}"

    def read(self, query_type: str) -> _Copy:
        """The rows of `query_type`: the copy when fresh, else flush and read in one go."""
        with self.backend.lock:
            copy = self.copies.get(query_type)
            if copy is not None and time.monotonic() - copy.loaded < READ_TTL:
                return copy
            queries = [(_FEEDBACK_ROWS, [query_type]), (_LESSON_ROWS, [query_type])]
            try:
                if any(self.pending):
                    with self.backend.connect(write=True) as con:
                        self.flush(con)
                        rows = self.backend.select(queries, con)
                else:
                    rows = self.backend.select(queries)
            except duckdb.Error as exc:
                raise MemoryUnavailable(
                    f"cannot read memory in {self.backend.where}: {exc}"
                ) from exc
            copy = _Copy(time.monotonic(), list(rows[0]), list(rows[1]))
            self.copies[query_type] = copy
            return copy


_HUBS: dict[str, _Hub] = {}
_HUBS_LOCK = threading.Lock()


def _hub(path: Path) -> _Hub:
    key = str(path.expanduser().resolve())
    with _HUBS_LOCK:
        hub = _HUBS.get(key)
        if hub is None:
            hub = _HUBS[key] = _Hub(_Backend(None, Path(key)))
        return hub


@atexit.register
def _flush_all() -> None:
    with _HUBS_LOCK:
        hubs = list(_HUBS.values())
    for hub in hubs:
        hub.flush()


def _fb_view(row: Row) -> Row:
    """(structure, path, reward, ts, run) of a dtr_feedback row."""
    return (row[2], row[4], row[8], row[0], row[1])


class ExperienceMemory:
    """Read and append the memory (see the module docstring).

    Args:
        store: The corpus store to keep the tables in (its connection), or None.
        path: The DuckDB file to use when there is no store (default `default_memory_path()`).
        writable: False to never write (``-o memory read``).
    """

    def __init__(
        self, *, store: Store | None = None, path: Path | None = None, writable: bool = True
    ) -> None:
        self.store = store
        self.path = None if store is not None else (path or default_memory_path())
        self.writable = writable
        self._hub = _hub(self.path) if self.path is not None else None
        self._backend = self._hub.backend if self._hub else _Backend(store, None)

    @property
    def where(self) -> str:
        return self._backend.where

    # -- reading -------------------------------------------------------------------------
    def _rows(self, query_type: str) -> tuple[list[Row], list[Row]]:
        if self._hub is not None:
            copy = self._hub.read(query_type)
            return copy.feedback, copy.lessons
        rows = self._backend.select([(_FEEDBACK_ROWS, [query_type]), (_LESSON_ROWS, [query_type])])
        return rows[0], rows[1]

    def recall(
        self,
        structure: str,
        query_type: str,
        *,
        rule: str = "incremental",
        eta: float = 0.5,
        limit: int = 5,
    ) -> tuple[dict[str, PathStats], list[Lesson]]:
        """R̂ and N per path signature for this key (folded in time order with `rule`), and
        the lessons for this query type, this structure's first, most frequent first."""
        feedback, lessons = self._rows(query_type)
        stats: dict[str, PathStats] = {}
        for row in sorted(feedback, key=lambda r: (r[3], r[4])):
            if row[0] == structure:
                update(
                    stats.setdefault(str(row[1]), PathStats()), float(row[2]), rule=rule, eta=eta
                )
        return stats, _top_lessons(lessons, structure, limit)

    def stats(
        self, structure: str, query_type: str, *, rule: str = "incremental", eta: float = 0.5
    ) -> dict[str, PathStats]:
        """The statistics part of `recall`."""
        return self.recall(structure, query_type, rule=rule, eta=eta, limit=0)[0]

    def lessons(self, structure: str, query_type: str, *, limit: int = 5) -> list[Lesson]:
        """The lessons part of `recall`."""
        return self.recall(structure, query_type, limit=limit)[1]

    def flush(self) -> None:
        """Write queued records now (file memories queue them, see the module docstring)."""
        if self._hub is not None:
            self._hub.flush()
            if self._hub.error:
                raise MemoryUnavailable(self._hub.error)

    def summary(self, *, limit: int = 50) -> dict[str, list[dict[str, Any]]]:
        """Per key and path: N (updates) and mean reward; lessons with counts (``memory show``)."""
        self.flush()
        paths, lessons = self._backend.select([
            ("SELECT structure, query_type, path, count(*), avg(reward), max(ts) "
             "FROM dtr_feedback GROUP BY structure, query_type, path "
             "ORDER BY max(ts) DESC LIMIT ?", [limit]),
            ("SELECT query_type, lesson, count(*), max(ts) FROM dtr_lessons "
             "GROUP BY query_type, lesson ORDER BY count(*) DESC, max(ts) DESC LIMIT ?", [limit]),
        ])  # fmt: skip
        return {
            "paths": [
                {"structure": s, "query_type": q, "path": p, "n": int(n), "mean_reward": float(r)}
                for s, q, p, n, r, _ in paths
            ],
            "lessons": [
                {"query_type": q, "lesson": text, "count": int(n)} for q, text, n, _ in lessons
            ],
        }

    # -- writing -------------------------------------------------------------------------
    def record(
        self,
        structure: str,
        query_type: str,
        feedback: Sequence[FeedbackRecord],
        lessons: Sequence[Lesson] = (),
    ) -> None:
        """Append one question's records (one transaction; queued for a file memory).

        Raises:
            MemoryUnavailable: the memory is read-only or cannot be written.
        """
        if not self.writable:
            raise MemoryUnavailable(f"memory in {self.where} is read-only")
        if not feedback and not lessons:
            return
        run, now = uuid.uuid4().hex, time.time()
        fb_rows = [
            (now + i * 1e-6, run, structure, query_type, f.path, f.f_exec, f.f_time, f.f_type,
             f.reward, f.failed_op, f.error)
            for i, f in enumerate(feedback)
        ]  # fmt: skip
        lesson_rows = [
            (now, run, structure, query_type, lesson.rule.encode() if lesson.rule else None,
             lesson.text)
            for lesson in lessons
        ]  # fmt: skip
        if self._hub is not None:
            self._hub.add(fb_rows, lesson_rows)
            return
        try:
            with self._backend.connect(write=True) as con:
                self._backend.insert(con, fb_rows, lesson_rows)
        except duckdb.Error as exc:
            self.writable = False
            raise MemoryUnavailable(f"cannot write memory in {self.where}: {exc}") from exc

    def clear(self) -> tuple[int, int]:
        """Delete every record; (feedback rows, lesson rows) deleted."""
        if self._hub is not None:
            self._hub.flush()
            self._hub.copies.clear()
        counts = []
        with self._backend.connect(write=True) as con:
            assert con is not None
            con.execute(SCHEMA)
            for table in ("dtr_feedback", "dtr_lessons"):
                row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
                counts.append(int(row[0]) if row else 0)
                con.execute(f"DELETE FROM {table}")
        return counts[0], counts[1]


def _top_lessons(rows: Sequence[Row], structure: str, limit: int) -> list[Lesson]:
    """Group (structure, rule, lesson, ts) rows by lesson: same structure first, by count."""
    if limit <= 0:
        return []
    groups: dict[tuple[str, str | None], list[Any]] = {}
    for row_structure, rule, text, ts in rows:
        entry = groups.setdefault((str(text), rule), [0, False, 0.0])
        entry[0] += 1
        entry[1] = entry[1] or row_structure == structure
        entry[2] = max(entry[2], float(ts))
    ranked = sorted(groups.items(), key=lambda kv: (not kv[1][1], -kv[1][0], -kv[1][2]))
    return [
        Lesson(text, Rule.decode(rule) if rule else None, int(n))
        for (text, rule), (n, _, _) in ranked[:limit]
    ]
