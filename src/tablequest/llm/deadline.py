"""A wall-clock deadline per question, and the channel that carries it to HTTP attempts.

Issue 12: a server that answered after 70 s (client timeout 60 s) kept one question running
for 900 s, because every call had its own timeout and its own retries. A `Deadline` bounds
them together: `Instrumented(..., deadline=d)` refuses calls once it has passed, and while a
call runs it puts the deadline (and itself, as an `AttemptObserver`) in a *call scope* that
the backend below reads — `OpenAICompatible` cuts each attempt's timeout, each backoff and
each retry to the time left and raises `DeadlineExceeded` when there is none.

Choices (ours):
- The scope is a `contextvars.ContextVar`: wrappers between `Instrumented` and the backend
  (`CachedLLM`, method-specific ones) need not know about it, and threads running separate
  questions (the eval runner) each see their own. A question that fans calls out to its own
  threads must enter `call_scope` in each of them (or wrap each thread's calls in
  `Instrumented` with the same deadline).
- Scopes nest: the inner deadline is the earlier of the two, and every enclosing observer
  hears about every HTTP request and retry, so nested meters agree.
- The deadline is measured with `time.monotonic`; None means no deadline (the default for
  library use; the CLI default is `DEFAULT_DEADLINE`).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from tablequest.llm.base import DeadlineExceeded, ModelUnreachable

DEFAULT_DEADLINE = 600.0  # seconds per question (CLI and config default)
DEADLINE_HINT = "raise it with --deadline SECONDS, TABLEQUEST_DEADLINE or deadline under [llm]"


class Deadline:
    """A point in time by which one question must be done.

    Args:
        seconds: Time allowed from now; None for no deadline.
        clock: Monotonic clock (tests may pass a fake one).
    """

    def __init__(
        self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError(f"a deadline needs seconds > 0 (or None for none), got {seconds}")
        self.seconds = seconds
        self._clock = clock
        self._expires = None if seconds is None else clock() + seconds
        self.stopped: DeadlineExceeded | None = None
        """The first error this deadline raised (what stopped the question), if any."""
        self.unreachable: ModelUnreachable | None = None
        """The `ModelUnreachable` that ended the question, if any: the question's later calls
        are refused without a request (the deadline is what every wrapper of one question
        shares, a router's sub-methods included)."""

    def __repr__(self) -> str:
        return f"Deadline({self.seconds!r}, remaining={self.remaining()!r})"

    def remaining(self) -> float | None:
        """Seconds left (never below 0), or None when there is no deadline."""
        if self._expires is None:
            return None
        return max(0.0, self._expires - self._clock())

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def exceeded(self, doing: str, **where: Any) -> DeadlineExceeded:
        """The error to raise when the deadline stops `doing` (e.g. "before the call")."""
        error = DeadlineExceeded(
            f"the question's deadline of {self.seconds:g} s passed {doing}; {DEADLINE_HINT}",
            **where,
        )
        self.stopped = self.stopped or error
        return error

    def check(self, doing: str = "before the call", **where: Any) -> None:
        """Raise DeadlineExceeded if the deadline has passed."""
        if self.expired:
            raise self.exceeded(doing, **where)

    def bound(self, seconds: float) -> float:
        """`seconds` cut to the time left (a timeout or a sleep that must end in time)."""
        left = self.remaining()
        return seconds if left is None else min(seconds, left)


class AttemptObserver(Protocol):
    """Told about each HTTP request and each retry a backend makes during a call."""

    def on_request(self) -> None:
        """One HTTP request was sent (attempts and retries alike)."""

    def on_retry(self, info: dict[str, Any]) -> None:
        """The request is about to be sent again; `info` says why (see `OpenAICompatible`)."""

    def on_fallback(self, info: dict[str, Any]) -> None:
        """The backend stopped using a feature the server mishandled (streaming, say)."""


@dataclass(frozen=True)
class CallScope:
    """What the backend below a wrapper should respect and report to during one call."""

    deadline: Deadline | None = None
    observers: tuple[AttemptObserver, ...] = field(default_factory=tuple)

    def request_sent(self) -> None:
        for observer in self.observers:
            observer.on_request()

    def retrying(self, info: dict[str, Any]) -> None:
        for observer in self.observers:
            observer.on_retry(info)

    def fell_back(self, info: dict[str, Any]) -> None:
        for observer in self.observers:
            observer.on_fallback(info)


_NO_SCOPE = CallScope()
_SCOPE: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "tablequest_llm_call_scope", default=None
)


def current_scope() -> CallScope:
    """The scope of the call running in this context (an empty one outside any call)."""
    return _SCOPE.get() or _NO_SCOPE


def _earlier(a: Deadline | None, b: Deadline | None) -> Deadline | None:
    if a is None or b is None:
        return a or b
    left_a, left_b = a.remaining(), b.remaining()
    assert left_a is not None and left_b is not None
    return a if left_a <= left_b else b


@contextmanager
def call_scope(
    *, deadline: Deadline | None = None, observer: AttemptObserver | None = None
) -> Iterator[CallScope]:
    """Enter a scope for the calls made inside the block (nested scopes combine)."""
    outer = current_scope()
    scope = CallScope(
        _earlier(outer.deadline, deadline),
        outer.observers + ((observer,) if observer is not None else ()),
    )
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
