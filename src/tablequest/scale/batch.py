"""Batch runs on Ray: questions as tasks, LLM endpoints load-balanced, records resumable.

`tablequest batch QUESTIONS.jsonl --out RUN.jsonl` answers a user's own question list; each
line is ``{"id", "question"}`` with optional ``"source"`` (store, manifest, table file or
folder; default ``--source``), ``"table_id"`` (one id or a list) and ``"method"`` (default
``--method``). ``eval run --ray`` runs a benchmark's questions the same way
(`tablequest.scale.evalrun`).

- Scheduling (`EndpointScheduler`): every question runs as one Ray task bound to one LLM
  endpoint for all its calls; an endpoint never has more than its ``max_concurrency``
  questions in flight, and a new question goes to the endpoint with the lowest
  in-flight/capacity ratio (ties: the first listed).
- Cache: the LLM cache file is opened by one actor (`CacheActor`) and every worker's
  `CachedLLM` reads and writes through it, so workers on any node share it and SQLite sees
  one writer. Several endpoints are taken as replicas of one model (``--model``): their
  calls are keyed by the pool of URLs rather than each URL, so an answer cached from one
  replica serves the others (choice ours; one endpoint keeps its URL in the key, as
  ``ask`` and ``eval run`` do, and shares their cache).
- Records: the driver appends one record per finished question to the run file
  (`eval.runner.RecordLog`: one write + fsync each). Killed and restarted, the driver skips
  the ids already recorded: nothing is lost, nothing is recorded twice. A task whose worker
  dies is run again by Ray (``max_retries``); the record is only written once it finished.
- Sources: a worker opens each store or sharded corpus once and keeps it; a sharded
  corpus ranks on shared shard actors named after the run (`RayShards`), started by the
  driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tablequest.errors import UsageError
from tablequest.llm import CacheFile, cache_path

__all__ = [
    "BatchError",
    "BatchQuestion",
    "CacheActor",
    "Endpoint",
    "EndpointScheduler",
    "read_questions",
]

T = TypeVar("T")


class BatchError(UsageError):
    """A question file or batch setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class BatchQuestion:
    """One line of a question file."""

    id: str
    question: str
    source: str | None = None
    table_ids: tuple[str, ...] = ()
    method: str | None = None


def _question(data: Any, where: str) -> BatchQuestion:
    if not isinstance(data, dict):
        raise BatchError(f"{where}: expected a JSON object")
    unknown = set(data) - {"id", "question", "source", "table_id", "method"}
    if unknown:
        raise BatchError(f"{where}: unknown key(s) {sorted(unknown)}")
    qid, text = data.get("id"), data.get("question")
    if not isinstance(qid, str | int) or isinstance(qid, bool) or str(qid) == "":
        raise BatchError(f"{where}: 'id' must be a non-empty string or number")
    if not isinstance(text, str) or not text.strip():
        raise BatchError(f"{where}: 'question' must be a non-empty string")
    table = data.get("table_id")
    tables = (table,) if isinstance(table, str) else tuple(table or ())
    if not all(isinstance(t, str) for t in tables):
        raise BatchError(f"{where}: 'table_id' must be a string or a list of strings")
    for key in ("source", "method"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise BatchError(f"{where}: {key!r} must be a string")
    return BatchQuestion(str(qid), text, data.get("source"), tables, data.get("method"))


def read_questions(path: Path) -> list[BatchQuestion]:
    """The questions of a JSONL file (blank lines skipped).

    Raises:
        BatchError: an unreadable file, a bad line (named ``path:line``) or a repeated id.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"cannot read {str(path)!r}: {exc}") from exc
    out: list[BatchQuestion] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise BatchError(f"{where}: not JSON ({exc})") from exc
        q = _question(data, where)
        if q.id in seen:
            raise BatchError(f"{where}: id {q.id!r} appears twice")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise BatchError(f"{str(path)!r} holds no question")
    return out


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible server and how many questions it may serve at once."""

    url: str
    max_concurrency: int = 4

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise BatchError(f"concurrency of {self.url} must be >= 1")


@dataclass
class EndpointScheduler:
    """Runs items on endpoints without exceeding any endpoint's concurrency.

    `submit(item, endpoint_index)` starts an item and returns a handle; `wait(handles)`
    blocks until at least one finished and returns the finished ones; `result(handle)` gives
    its outcome (an exception it raises goes to `on_error`).
    """

    endpoints: Sequence[Endpoint]
    submit: Callable[[Any, int], Any]
    wait: Callable[[list[Any]], list[Any]]
    result: Callable[[Any], Any]
    in_flight: list[int] = field(default_factory=list)
    peak: list[int] = field(default_factory=list)

    def _pick(self) -> int | None:
        free = [
            (self.in_flight[i] / e.max_concurrency, i)
            for i, e in enumerate(self.endpoints)
            if self.in_flight[i] < e.max_concurrency
        ]
        return min(free)[1] if free else None

    def run(
        self,
        items: Sequence[T],
        on_done: Callable[[T, int, Any], None],
        on_error: Callable[[T, int, BaseException], None],
    ) -> None:
        """Run every item; `on_done(item, endpoint, outcome)` as each finishes."""
        self.in_flight = [0] * len(self.endpoints)
        self.peak = [0] * len(self.endpoints)
        pending = list(reversed(items))
        running: dict[Any, tuple[T, int]] = {}
        while pending or running:
            while pending and (slot := self._pick()) is not None:
                item = pending.pop()
                running[self.submit(item, slot)] = (item, slot)
                self.in_flight[slot] += 1
                self.peak[slot] = max(self.peak[slot], self.in_flight[slot])
            for handle in self.wait(list(running)):
                item, slot = running.pop(handle)
                self.in_flight[slot] -= 1
                try:
                    outcome = self.result(handle)
                except Exception as exc:  # the item failed for good: recorded, never a crash
                    on_error(item, slot, exc)
                else:
                    on_done(item, slot, outcome)


class CacheActor:
    """The body of the cache actor: the one process that opens the LLM cache file."""

    def __init__(self, cache_dir: str | None) -> None:
        self.file = CacheFile(cache_path(cache_dir))

    def get(self, key: str) -> list[dict[str, Any]] | None:
        return self.file.get(key)

    def put(self, key: str, backend: dict[str, str], value: list[dict[str, Any]]) -> None:
        self.file.put(key, backend, value)

    def delete(self, key: str) -> None:
        self.file.delete(key)

    def path(self) -> str:
        return str(self.file.path)


class ActorCache:
    """A `CacheStore` that forwards to a `CacheActor` (used inside Ray workers)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def get(self, key: str) -> list[dict[str, Any]] | None:
        import ray

        value: list[dict[str, Any]] | None = ray.get(self.actor.get.remote(key))
        return value

    def put(self, key: str, backend: dict[str, str], value: list[dict[str, Any]]) -> None:
        import ray

        ray.get(self.actor.put.remote(key, backend, value))

    def delete(self, key: str) -> None:
        import ray

        ray.get(self.actor.delete.remote(key))

    def close(self) -> None:
        """The actor belongs to the driver."""
