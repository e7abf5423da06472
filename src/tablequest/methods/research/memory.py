"""The siamese experience memory (DTR §3.4): parameterized feedback and abstracted lessons.

Two channels, as the paper has them:
- **parameterized feedback**: one record per executed path — (f_exec, f_time, f_type, r), the
  failing operation and the error class — keyed by the table's structure class
  (`MetaGraph.structure_key`, value-agnostic) and the query type. A question's candidate paths
  start from the statistics these records give (R̂ and N folded in time order with the
  configured update rule), so what worked on similar tables before ranks higher now.
- **abstracted experience**: value-agnostic lessons ("filter before aggregating", "re-read the
  header paths to find the sub-column"), each with an optional machine-checkable `Rule` that
  the structural prior uses (`operations.prior`); shown to the model in later prompts.

Storage (ours): two append-only DuckDB tables, ``dtr_feedback`` and ``dtr_lessons``, in the corpus
store when the table came from one (`Store.con`), else in a file (``memory_path``, default
``<user data dir>/dtr_memory.duckdb``). Records are only ever inserted, in one transaction per
question, and statistics are computed when read, so concurrent runs cannot lose or corrupt each
other's updates: threads of one process share a lock, processes share an advisory file lock
(``<file>.lock``) and each opens the file only for the duration of one read or write. A store
opened read-only (or any write error) makes the memory read-only for that run; the method
records the reason in its trace.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import platformdirs

from tablequest.methods.research.operations import Rule
from tablequest.methods.research.planner import PathStats, update

if TYPE_CHECKING:
    from tablequest.corpus.store import Store

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
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class MemoryUnavailable(Exception):
    """The memory cannot be read or written; the message names the file and the cause."""


@dataclass(frozen=True)
class FeedbackRecord:
    """One executed path's parameterized feedback."""

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


def _lock_for(key: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


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
        key = f"store:{id(store)}" if store is not None else f"file:{self.path}"
        self._lock = _lock_for(key)
        self._ready = False

    @property
    def where(self) -> str:
        if self.store is not None:
            return f"store {self.store.path or ':memory:'}"
        return str(self.path)

    # -- connections ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A cursor/connection under the locks; None when a read finds no memory file."""
        with self._lock:
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
                    raise MemoryUnavailable(
                        f"cannot open memory {str(self.path)!r}: {exc}"
                    ) from exc
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

    def _ensure(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self._ready:
            con.execute(SCHEMA)
            self._ready = True

    def _select(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._select_many([(sql, params)])[0]

    def _select_many(
        self, queries: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Several reads in one connection (an empty result for a missing table or file)."""
        out: list[list[tuple[Any, ...]]] = []
        try:
            with self._connect(write=False) as con:
                for sql, params in queries:
                    if con is None:
                        out.append([])
                        continue
                    try:
                        out.append(con.execute(sql, list(params)).fetchall())
                    except duckdb.CatalogException:
                        out.append([])  # no memory table yet
        except duckdb.Error as exc:
            raise MemoryUnavailable(f"cannot read memory in {self.where}: {exc}") from exc
        return out

    # -- reading -------------------------------------------------------------------------
    _STATS = (
        "SELECT path, reward FROM dtr_feedback WHERE structure = ? AND query_type = ? "
        "ORDER BY ts, run"
    )
    _LESSONS = (
        "SELECT lesson, rule, count(*) AS n, max(structure = ?) AS same, max(ts) AS last "
        "FROM dtr_lessons WHERE query_type = ? GROUP BY lesson, rule "
        "ORDER BY same DESC, n DESC, last DESC LIMIT ?"
    )

    def stats(
        self, structure: str, query_type: str, *, rule: str = "incremental", eta: float = 0.5
    ) -> dict[str, PathStats]:
        """R̂ and N per path signature for this key, folded in time order with `rule`."""
        return self.recall(structure, query_type, rule=rule, eta=eta, limit=0)[0]

    def lessons(self, structure: str, query_type: str, *, limit: int = 5) -> list[Lesson]:
        """Lessons for this query type, this structure's first, most frequent first."""
        if limit <= 0:
            return []
        return _lessons(self._select(self._LESSONS, [structure, query_type, limit]))

    def recall(
        self,
        structure: str,
        query_type: str,
        *,
        rule: str = "incremental",
        eta: float = 0.5,
        limit: int = 5,
    ) -> tuple[dict[str, PathStats], list[Lesson]]:
        """`stats` and `lessons` of one key, read in one connection."""
        queries: list[tuple[str, Sequence[Any]]] = [(self._STATS, [structure, query_type])]
        if limit > 0:
            queries.append((self._LESSONS, [structure, query_type, limit]))
        results = self._select_many(queries)
        stats: dict[str, PathStats] = {}
        for path, value in results[0]:
            update(stats.setdefault(str(path), PathStats()), float(value), rule=rule, eta=eta)
        return stats, _lessons(results[1]) if limit > 0 else []

    def summary(self, *, limit: int = 50) -> dict[str, list[dict[str, Any]]]:
        """Per key and path: executions and mean reward; lessons with counts (``memory show``)."""
        paths = self._select(
            "SELECT structure, query_type, path, count(*), avg(reward), max(ts) FROM dtr_feedback "
            "GROUP BY structure, query_type, path ORDER BY max(ts) DESC LIMIT ?",
            [limit],
        )
        lessons = self._select(
            "SELECT query_type, lesson, count(*), max(ts) FROM dtr_lessons "
            "GROUP BY query_type, lesson ORDER BY count(*) DESC, max(ts) DESC LIMIT ?",
            [limit],
        )
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
        """Append one question's records in one transaction.

        Raises:
            MemoryUnavailable: the memory is read-only or the write failed (nothing was written).
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
        try:
            with self._connect(write=True) as con:
                assert con is not None
                self._ensure(con)
                con.execute("BEGIN TRANSACTION")
                try:
                    if fb_rows:
                        con.executemany(
                            "INSERT INTO dtr_feedback VALUES (?,?,?,?,?,?,?,?,?,?,?)", fb_rows
                        )
                    if lesson_rows:
                        con.executemany("INSERT INTO dtr_lessons VALUES (?,?,?,?,?,?)", lesson_rows)
                    con.execute("COMMIT")
                except duckdb.Error:
                    con.execute("ROLLBACK")
                    raise
        except duckdb.Error as exc:
            self.writable = False
            raise MemoryUnavailable(f"cannot write memory in {self.where}: {exc}") from exc

    def clear(self) -> tuple[int, int]:
        """Delete every record; (feedback rows, lesson rows) deleted."""
        counts = []
        with self._connect(write=True) as con:
            assert con is not None
            self._ensure(con)
            for table in ("dtr_feedback", "dtr_lessons"):
                row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
                counts.append(int(row[0]) if row else 0)
                con.execute(f"DELETE FROM {table}")
        return counts[0], counts[1]


def _lessons(rows: list[tuple[Any, ...]]) -> list[Lesson]:
    return [
        Lesson(str(text), Rule.decode(str(rule)) if rule else None, int(n))
        for text, rule, n, _, _ in rows
    ]
