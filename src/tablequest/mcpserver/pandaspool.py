"""Where `run_pandas` work runs: a bounded pool of its own, with a per-session limit.

Issue 40: ``run_pandas`` was a synchronous tool, so the SDK ran each call on anyio's shared
worker threads (40), the same threads every other synchronous tool (``list_tables``,
``get_table``) needs. About 41 calls that each waited on a sandbox held them all, and other
sessions' reads waited 42–46 s. Now the tool is asynchronous and hands its work to
`PandasPool`: at most `workers` calls run at once, on threads nothing else uses; the others
wait in the pool's queue holding no thread (their wait counts against their own timeout,
`tablequest.mcpserver.sandboxed`). One session may have at most `per_session` calls running
or waiting; beyond, a call is refused at once (`TooManyRuns`) rather than queued behind its
own session's flood.

A call whose client goes away before its turn is dropped from the queue; one already running
finishes (its sandbox run is bounded by its timeout) and only then frees its session's slot.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from tablequest.errors import UsageError

__all__ = ["PandasPool", "TooManyRuns"]

T = TypeVar("T")


class TooManyRuns(UsageError):
    """A session has its limit of `run_pandas` calls running or waiting."""

    http_status = 429
    code = "busy"


class PandasPool:
    """At most `workers` calls at once on threads of their own; at most `per_session` calls
    of one session running or waiting (see the module doc)."""

    def __init__(self, workers: int, per_session: int) -> None:
        self.workers = workers
        self.per_session = per_session
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tq-pandas")
        self._lock = threading.Lock()
        self._calls: dict[object, int] = {}

    def calls(self, session: object) -> int:
        """The calls of `session` running or waiting now."""
        with self._lock:
            return self._calls.get(session, 0)

    def _enter(self, session: object) -> None:
        with self._lock:
            held = self._calls.get(session, 0)
            if held >= self.per_session:
                raise TooManyRuns(
                    f"this session already has {held} run_pandas calls running or waiting, "
                    f"the server's limit per session ([serve] pandas_per_session = "
                    f"{self.per_session}); wait for one to finish"
                )
            self._calls[session] = held + 1

    def _leave(self, session: object) -> None:
        with self._lock:
            left = self._calls.get(session, 1) - 1
            if left > 0:
                self._calls[session] = left
            else:
                self._calls.pop(session, None)

    async def run(self, session: object, work: Callable[[], T]) -> T:
        """`work()` on one of the pool's threads, counted against `session`.

        Raises:
            TooManyRuns: `session` has `per_session` calls running or waiting.
        """
        self._enter(session)
        try:
            future: Future[T] = self._pool.submit(work)
        except BaseException:
            self._leave(session)
            raise
        # the slot is given back when the work ends (or is dropped unstarted), not when the
        # caller stops waiting: a session cannot outrun the limit by leaving
        future.add_done_callback(lambda _done: self._leave(session))
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()  # still queued (the client went away): it never runs

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
