"""A hook around blocking waits (model calls, sandbox runs), for hosts that schedule threads.

A host running many questions in threads of one process (`tablequest serve`) wants to know
when a question's thread stops running Python and waits on something outside the process,
so it can let another thread run meanwhile. Code that waits wraps the wait in `waiting()`;
the host installs its hook for a thread with `on_wait(hook)`. Without a hook `waiting()` does
nothing.

Choices (ours): the hook lives in a `contextvars.ContextVar`, so it is per thread (and per
asyncio task), and helper threads a method starts run without it — they never held what the
hook gives up. This module imports nothing from tablequest: every layer may use it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

__all__ = ["WaitHook", "on_wait", "waiting"]

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
