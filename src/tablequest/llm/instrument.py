"""`Instrumented`: meters usage, traces every call, and enforces the question's deadline.

Wrap outermost (outside `CachedLLM`) so cache hits are counted and traced as hits. Per
`chat()` call it records one ``llm_call`` trace event and one call in the `UsageMeter`, with
the number of HTTP requests the backend sent for it (retries included; 0 for a cache hit or
an in-process model). While the call runs, it opens a call scope (`tablequest.llm.deadline`)
holding its `Deadline` and itself as the observer, so the backend's retries become
``llm_retry`` events and its stream fallbacks ``fallback`` events. A failed call is recorded
as an ``llm_call`` event with an ``error`` field and counted in the meter, then re-raised; a
call refused because the deadline has passed is such a failed call (`DeadlineExceeded`).
A `ModelUnreachable` (nothing listens at the URL, a rejected key, an unknown model) ends the
question: every later call through this wrapper, or through any wrapper sharing its
`Deadline`, raises it again at once without a request or a step.
With a `StepBudget`, every call is counted against it first: a call past its cap raises
`BudgetExhausted` without reaching the model (``--steps`` holds for every method).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from tablequest.llm.base import (
    LLM,
    Completion,
    DeadlineExceeded,
    LLMError,
    Message,
    ModelUnreachable,
    normalize_stop,
)
from tablequest.llm.deadline import Deadline, call_scope
from tablequest.llm.usage import StepBudget, UsageMeter
from tablequest.trace import Trace
from tablequest.waits import waiting


class _CallObserver:
    """Counts the HTTP requests of one call and traces its retries and fallbacks."""

    def __init__(self, owner: Instrumented, model: str) -> None:
        self.owner = owner
        self.model = model
        self.requests = 0
        self._lock = threading.Lock()

    def on_request(self) -> None:
        with self._lock:
            self.requests += 1

    def on_retry(self, info: dict[str, Any]) -> None:
        if self.owner.trace is not None:
            self.owner.trace.event("llm_retry", model=self.model, **info)

    def on_fallback(self, info: dict[str, Any]) -> None:
        if self.owner.trace is not None:
            self.owner.trace.event("fallback", model=self.model, **info)


class Instrumented(LLM):
    """Record every call of `inner` in a `UsageMeter` and/or a `Trace`, within a deadline.

    Args:
        inner: The model to call.
        trace: Where ``llm_call`` / ``llm_retry`` / ``fallback`` events go (optional).
        usage: Meter to add each call to (optional).
        budget: Cap on the calls made through this wrapper (optional).
        deadline: The question's `Deadline` (optional): calls after it are refused, and the
            backend's timeouts, retries and backoffs are cut to it.
    """

    def __init__(
        self,
        inner: LLM,
        *,
        trace: Trace | None = None,
        usage: UsageMeter | None = None,
        budget: StepBudget | None = None,
        deadline: Deadline | None = None,
    ):
        self.inner = inner
        self.trace = trace
        self.usage = usage
        self.budget = budget
        self.deadline = deadline
        self.unreachable: ModelUnreachable | None = None
        self.last_error: Exception | None = None
        """The last failed call's error (a failed Result that gives no reason names it)."""

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def context_length(self) -> int | None:
        return self.inner.context_length()

    def close(self) -> None:
        self.inner.close()

    def discard(self, reply: Completion) -> None:
        self.inner.discard(reply)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        n: int = 1,
        logprobs: bool = False,
        stop: str | Sequence[str] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "n": n,
            "logprobs": logprobs,
            "stop": normalize_stop(stop),
            "response_format": response_format,
        }
        info = self.describe()
        model = info.get("model", "?")
        self._refuse_if_unreachable()
        if self.budget is not None:
            self.budget.count_call()
        observer = _CallObserver(self, model)
        started = time.perf_counter()
        try:
            if self.deadline is not None:
                self.deadline.check("before the call", url=info.get("url"), model=model)
            with call_scope(deadline=self.deadline, observer=observer), waiting():
                completions = self.inner.chat(messages, **params)
        except (LLMError, ValueError) as exc:
            if isinstance(exc, DeadlineExceeded) and self.deadline is not None:
                self.deadline.stopped = self.deadline.stopped or exc
            self.last_error = exc
            if isinstance(exc, ModelUnreachable):
                self.unreachable = self.unreachable or exc
                if self.deadline is not None:
                    self.deadline.unreachable = self.deadline.unreachable or exc
            seconds = time.perf_counter() - started
            self._failed(exc, messages, params, info, seconds, observer.requests)
            raise
        seconds = time.perf_counter() - started
        if self.usage is not None:
            self.usage.record(
                model=model, completions=completions, seconds=seconds, requests=observer.requests
            )
        if self.trace is not None:
            self.trace.event(
                "llm_call",
                model=model,
                url=info.get("url", ""),
                messages=list(messages),
                params=params,
                replies=[c.text for c in completions],
                finish_reasons=[c.finish_reason for c in completions],
                prompt_tokens=sum(c.usage.prompt_tokens for c in completions),
                completion_tokens=sum(c.usage.completion_tokens for c in completions),
                latency_s=round(seconds, 3),
                cached=bool(completions) and all(c.cached for c in completions),
                requests=observer.requests,
            )
        return completions

    def _refuse_if_unreachable(self) -> None:
        """After a `ModelUnreachable`, the question's calls fail at once, without a request."""
        first = self.unreachable or (self.deadline.unreachable if self.deadline else None)
        if first is not None:
            raise first.again()

    def _failed(
        self,
        exc: Exception,
        messages: Sequence[Message],
        params: dict[str, Any],
        info: dict[str, str],
        seconds: float,
        requests: int,
    ) -> None:
        model = info.get("model", "?")
        if self.usage is not None:
            self.usage.record(
                model=model, completions=[], seconds=seconds, error=True, requests=requests
            )
        if self.trace is not None:
            # a failed call is still a call (it counts against budgets): one llm_call event
            self.trace.event(
                "llm_call",
                model=model,
                url=info.get("url", ""),
                messages=list(messages),
                params=params,
                replies=[],
                error=type(exc).__name__,
                message=str(exc),
                latency_s=round(seconds, 3),
                cached=False,
                requests=requests,
            )
