"""`Instrumented`: a wrapper that meters usage and writes one ``llm_call`` trace event per call.

Wrap outermost (outside `CachedLLM`) so cache hits are counted and traced as hits. A failed
call is recorded as an ``llm_call`` event with an ``error`` field and counted in the
meter, then re-raised. With a `StepBudget`, every call is counted against it first and a call
past its cap raises `BudgetExhausted` without reaching the model (``--steps`` holds for every
method, whatever its own accounting).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tablequest.llm.base import LLM, Completion, LLMError, Message, normalize_stop
from tablequest.llm.usage import StepBudget, UsageMeter
from tablequest.trace import Trace


class Instrumented(LLM):
    """Record every call of `inner` in a `UsageMeter` and/or a `Trace`.

    Args:
        inner: The model to call.
        trace: Where ``llm_call`` / ``error`` events go (optional).
        usage: Meter to add each call to (optional).
        budget: Cap on the calls made through this wrapper (optional).
    """

    def __init__(
        self,
        inner: LLM,
        *,
        trace: Trace | None = None,
        usage: UsageMeter | None = None,
        budget: StepBudget | None = None,
    ):
        self.inner = inner
        self.trace = trace
        self.usage = usage
        self.budget = budget

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()

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
        if self.budget is not None:
            self.budget.count_call()
        started = time.perf_counter()
        try:
            completions = self.inner.chat(messages, **params)
        except (LLMError, ValueError) as exc:
            seconds = time.perf_counter() - started
            if self.usage is not None:
                self.usage.record(model=model, completions=[], seconds=seconds, error=True)
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
                )
            raise
        seconds = time.perf_counter() - started
        if self.usage is not None:
            self.usage.record(model=model, completions=completions, seconds=seconds)
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
            )
        return completions
