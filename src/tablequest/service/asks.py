"""Asks run in worker threads; each trace event is streamed to clients as it happens.

An `AskJob` records the events of one ask (`StreamingTrace` is a `Trace` whose `event` also
appends to the job and wakes the clients waiting on it) and, at the end, the `Result`.
Clients read a job from any event on (`AskJob.follow`), so a page that opens its stream after
the first events still sees all of them, and a reconnecting EventSource resumes where it was.

Turns (ours): asks and searches share one interpreter lock. Fifty asks whose model replies
arrive together all want it at once, and CPython hands it round among every runnable thread,
so a search waited behind the whole burst (search p99 0.5 s during 50 asks). An ask therefore
runs Python only while it holds one of `cpu_turns` turns (default 1), and gives it up while it
waits on a server (model, embeddings, rerank) or the sandbox (`tablequest.waits`): one ask
thread at most competes with the searches. Measured (`benchmarks/serve_load.py`): search p99
during 50 asks 0.5 s → 0.17–0.22 s; the 50 asks took 4.2–4.4 s instead of 3.7 s.

Limits (ours): at most `max_asks` jobs run at once (`AskManager.start` raises `Busy` beyond,
which the API answers with 429 and Retry-After); an ask past its deadline is stopped at its
next trace event (a step in progress, e.g. an LLM call, ends first: its own timeout bounds it)
and ends "failed". Finished jobs stay readable for `keep_seconds`, at most `keep` of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.errors import INTERNAL, RunError, TablequestError, http_status, internal_message
from tablequest.methods import Result
from tablequest.trace import EventKind, Trace
from tablequest.waits import Turns, on_wait

__all__ = [
    "AskCancelled", "AskJob", "AskManager", "Busy", "CpuTurns", "StreamingTrace",
]  # fmt: skip


class AskCancelled(RunError):
    """Raised into a running method at its next trace event when its ask was stopped."""


class Busy(RunError):
    """Too many asks are running; `retry_after` is a hint in seconds (the API's Retry-After)."""

    http_status = 429
    code = "busy"

    def __init__(self, running: int, retry_after: int) -> None:
        super().__init__(f"{running} asks are running, the server's limit; retry later")
        self.retry_after = retry_after


@dataclass
class AskJob:
    """One ask: its events so far, its result when done, and who is waiting for more."""

    id: str
    question: str
    method: str
    deadline: float
    events: list[dict[str, Any]] = field(default_factory=list)
    result: Result | None = None
    error: dict[str, str] | None = None
    """Why there is no result: ``{"code", "message"}`` (``internal`` for a bug)."""
    error_status: int = 500
    """The HTTP status of `error` (`tablequest.errors.http_status`)."""
    finished_at: float | None = None
    cancel_reason: str | None = None
    trace_id: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    def _wake(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, flag in waiters:
            with contextlib.suppress(RuntimeError):  # that client's loop is gone
                loop.call_soon_threadsafe(flag.set)

    def add(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(event)
        self._wake()

    def finish(self, result: Result | None, error: dict[str, str] | None = None) -> None:
        with self._lock:
            self.result, self.error = result, error
            self.finished_at = time.monotonic()
        self._wake()

    def cancel(self, reason: str) -> None:
        """Stop the ask at its next trace event."""
        self.cancel_reason = self.cancel_reason or reason

    async def follow(
        self, start: int = 0, *, heartbeat: float = 15.0
    ) -> AsyncIterator[tuple[int, dict[str, Any]] | None]:
        """(index, event) from `start` on as they come; None as a heartbeat; ends when done."""
        flag = asyncio.Event()
        entry = (asyncio.get_running_loop(), flag)
        with self._lock:
            self._waiters.append(entry)
        try:
            i = start
            while True:
                flag.clear()
                with self._lock:
                    fresh = self.events[i:]
                    done = self.done
                for event in fresh:
                    yield i, event
                    i += 1
                if done and i >= len(self.events):
                    return
                try:
                    await asyncio.wait_for(flag.wait(), timeout=heartbeat)
                except TimeoutError:
                    yield None
        finally:
            with self._lock:
                self._waiters.remove(entry)


class StreamingTrace(Trace):
    """A `Trace` whose events also go to an `AskJob` (and which stops a cancelled ask)."""

    def __init__(self, path: Path | None, job: AskJob) -> None:
        super().__init__(path)
        self.job = job
        self._raised = False

    def event(self, kind: EventKind, /, **payload: Any) -> dict[str, Any]:
        event = super().event(kind, **payload)
        self.job.add(event)
        if self.job.cancel_reason is None and time.monotonic() > self.job.deadline:
            self.job.cancel("the ask ran past the server's time limit")
        if self.job.cancel_reason is not None and not self._raised:
            self._raised = True  # once: the method's error handling may still record events
            raise AskCancelled(self.job.cancel_reason)
        return event


log = logging.getLogger("tablequest.serve")

CpuTurns = Turns
"""At most `n` ask threads hold a turn; a holder gives it up while it waits (`waiting`)."""


Runner = Callable[[AskJob, StreamingTrace], Result]


def _job_error(exc: Exception, trace_id: str | None) -> dict[str, str]:
    """The error of an ask that ended without a result; a bug is logged with its traceback."""
    if isinstance(exc, TablequestError):
        return {"code": exc.code, "message": str(exc)}
    where = f"trace {trace_id}" if trace_id else None
    log.error("internal error in an ask (%s)", where or "no trace", exc_info=exc)
    return {"code": INTERNAL, "message": internal_message(exc, where=where)}


class AskManager:
    """Starts asks on a dedicated thread pool (so they never take the search threads)."""

    def __init__(
        self,
        *,
        max_asks: int,
        timeout: float,
        keep: int = 256,
        keep_seconds: float = 3600.0,
        cpu_turns: int = 1,
    ) -> None:
        self.max_asks = max_asks
        self.turns = CpuTurns(cpu_turns)
        self.timeout = timeout
        self.keep = keep
        self.keep_seconds = keep_seconds
        self._pool = ThreadPoolExecutor(max_workers=max_asks, thread_name_prefix="tq-ask")
        self._jobs: dict[str, AskJob] = {}
        self._running = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        with self._lock:
            return self._running

    def start(self, question: str, method: str, trace_path: Path | None, run: Runner) -> AskJob:
        """Start `run(job, trace)` in a worker thread.

        Raises:
            Busy: `max_asks` asks are running.
        """
        job = AskJob(
            id=uuid.uuid4().hex,
            question=question,
            method=method,
            deadline=time.monotonic() + self.timeout,
            trace_id=trace_path.stem if trace_path else None,
        )
        with self._lock:
            if self._running >= self.max_asks:
                raise Busy(self._running, retry_after=5)
            self._running += 1
            self._prune()
            self._jobs[job.id] = job
        trace = StreamingTrace(trace_path, job)
        self._pool.submit(self._run, job, trace, run)
        return job

    def _run(self, job: AskJob, trace: StreamingTrace, run: Runner) -> None:
        try:
            with self.turns.turn(), on_wait(self.turns.waiting):
                result = run(job, trace)
            job.finish(result)
        except Exception as exc:  # bad arguments were refused before; report, never crash
            job.error_status = http_status(exc)
            job.finish(None, _job_error(exc, job.trace_id))
        finally:
            with self._lock:
                self._running -= 1

    def jobs(self) -> list[AskJob]:
        """The jobs kept (running and recently finished)."""
        with self._lock:
            return list(self._jobs.values())

    def get(self, job_id: str) -> AskJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _prune(self) -> None:
        now = time.monotonic()
        done = [j for j in self._jobs.values() if j.finished_at is not None]
        old = [j for j in done if now - (j.finished_at or now) > self.keep_seconds]
        excess = sorted(done, key=lambda j: j.finished_at or 0)[: max(0, len(done) - self.keep)]
        for job in {j.id: j for j in old + excess}.values():
            self._jobs.pop(job.id, None)

    def close(self) -> None:
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            if not job.done:
                job.cancel("the server is shutting down")
        self._pool.shutdown(wait=False, cancel_futures=True)
