"""A hook around blocking waits (model calls, sandbox runs), for hosts that schedule threads.

A host running many questions in threads of one process (`tablequest serve`) wants to know
when a question's thread stops running Python and waits on something outside the process,
so it can let another thread run meanwhile. Code that waits wraps the wait in `waiting()`;
the host installs its hook for a thread with `on_wait(hook)`. Without a hook `waiting()` does
nothing.

`Turns` is the one waiting primitive built on this: at most `n` threads hold a turn, and a
holder gives its turn up while it waits (`Turns.waiting`, a hook for `on_wait`). The server
runs asks with `n` CPU turns (`service.asks.CpuTurns`); an evaluation run holds one turn, its
`Gate`, while a question computes and releases it while the model answers
(`eval.runner.GatedLLM`).

Choices (ours): the hook lives in a `contextvars.ContextVar`, so it is per thread (and per
asyncio task), and helper threads a method starts run without it — they never held what the
hook gives up. A thread that holds no turn gives nothing up (`waiting` is then a no-op), so a
method's own helper threads pass through. This module imports nothing from tablequest: every
layer may use it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

__all__ = ["Turns", "WaitHook", "on_wait", "waiting"]

WaitHook = Callable[[], AbstractContextManager[None]]

_HOOK: contextvars.ContextVar[WaitHook | None] = contextvars.ContextVar(
    "tablequest_wait_hook", default=None
)


@contextlib.contextmanager
def on_wait(hook: WaitHook) -> Iterator[None]:
    """Install `hook` for waits in this thread (or task) within the block."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """Mark the block as a wait outside the process (the installed hook wraps it)."""
    hook = _HOOK.get()
    if hook is None:
        yield
        return
    with hook():
        yield


class Turns:
    """At most `n` threads hold a turn; a holder gives it up while it waits (`waiting`)."""

    def __init__(self, n: int = 1) -> None:
        self._turns = threading.BoundedSemaphore(n)
        self._held = threading.local()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Hold a turn for the block (waiting for one first)."""
        self._turns.acquire()
        self._held.value = True
        try:
            yield
        finally:
            self._held.value = False
            self._turns.release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Give the turn up for the block, and take one again after (a no-op in a thread
        that holds none, e.g. a method's own helper threads)."""
        if not getattr(self._held, "value", False):
            yield
            return
        self._held.value = False
        self._turns.release()
        try:
            yield
        finally:
            self._turns.acquire()
            self._held.value = True
