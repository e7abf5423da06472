"""Usage accounting (`UsageMeter`) and the per-query step budget (`StepBudget`).

TableSeek's budget S_max counts every LLM call of a query and always keeps one step for QA
(TableSeek paper, Alg. 1): `StepBudget(max_steps, reserve=1)` lets any call spend a step except the
last `reserve` ones, which only a QA call (kind "qa") may use.

Choices where the papers are silent: a meter counts one call per `chat()` (n > 1 is one call),
and separately the HTTP requests the backend sent for it (`requests`: retries and emulated
n count, cache hits and in-process models send none); failed calls count as calls (with
their seconds) and as errors; tokens of cache hits are counted
(they describe the work) but cost only counts calls that reached a server; cost is None when no
model used has a price.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tablequest.llm.base import Completion, LLMError

Prices = Mapping[str, tuple[float, float]]
"""model -> (USD per 1k prompt tokens, USD per 1k completion tokens)."""

QA = "qa"


@dataclass(slots=True)
class UsageTotals:
    """Aggregated usage of a run or of one query."""

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cache_hits: int = 0
    errors: int = 0
    cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        if self.cost is not None:
            out["cost"] = round(self.cost, 6)
        return out


class UsageMeter:
    """Thread-safe usage aggregation; `scope(query_id)` gives a per-query child meter.

    Args:
        prices: Optional price table (see `Prices`).
    """

    def __init__(self, prices: Prices | None = None, *, _parent: UsageMeter | None = None):
        self.prices: dict[str, tuple[float, float]] = dict(prices or {})
        self._parent = _parent
        self._totals = UsageTotals()
        self._queries: dict[str, UsageMeter] = {}
        self._lock = threading.Lock()

    def record(
        self,
        *,
        model: str,
        completions: Sequence[Completion],
        seconds: float,
        error: bool = False,
        requests: int = 0,
    ) -> None:
        """Add one `chat()` call: its completions, wall seconds, whether it failed, and the
        HTTP requests sent for it."""
        prompt = sum(c.usage.prompt_tokens for c in completions)
        completion = sum(c.usage.completion_tokens for c in completions)
        hit = bool(completions) and all(c.cached for c in completions)
        cost = None
        if completions and not hit and model in self.prices:
            price_in, price_out = self.prices[model]
            cost = prompt / 1000 * price_in + completion / 1000 * price_out
        self._add(prompt, completion, seconds, hit, error, cost, requests)

    def _add(
        self,
        prompt: int,
        completion: int,
        seconds: float,
        hit: bool,
        error: bool,
        cost: float | None,
        requests: int,
    ) -> None:
        with self._lock:
            t = self._totals
            t.calls += 1
            t.requests += requests
            t.prompt_tokens += prompt
            t.completion_tokens += completion
            t.seconds += seconds
            t.cache_hits += int(hit)
            t.errors += int(error)
            if cost is not None:
                t.cost = (t.cost or 0.0) + cost
        if self._parent is not None:
            self._parent._add(prompt, completion, seconds, hit, error, cost, requests)

    def scope(self, query_id: str) -> UsageMeter:
        """The child meter of `query_id` (created on first use); it rolls up into this one."""
        with self._lock:
            child = self._queries.get(query_id)
            if child is None:
                child = UsageMeter(self.prices, _parent=self)
                self._queries[query_id] = child
            return child

    @property
    def totals(self) -> UsageTotals:
        """A snapshot of the totals."""
        with self._lock:
            return UsageTotals(**asdict(self._totals))

    @property
    def queries(self) -> dict[str, UsageTotals]:
        """Snapshots of the per-query totals."""
        with self._lock:
            children = dict(self._queries)
        return {qid: meter.totals for qid, meter in children.items()}

    def to_dict(self) -> dict[str, Any]:
        """Totals as JSON-ready dict (``calls, prompt_tokens, ..., cost``)."""
        return self.totals.to_dict()


class BudgetExhausted(LLMError):
    """A step was requested from a budget that has none left for that kind of call.

    An `LLMError`: to a method, a call the budget refuses is a call that could not be made.
    """

    def __init__(self, kind: str, used: int, max_steps: int, reserve: int):
        reserved = f", the last {reserve} reserved for QA" if kind != QA and reserve else ""
        super().__init__(f"no step left for a {kind!r} call: {used}/{max_steps} used{reserved}")
        self.kind = kind
        self.used = used
        self.max_steps = max_steps
        self.reserve = reserve


class StepBudget:
    """Counts LLM calls of one query against `max_steps`, keeping `reserve` steps for QA.

    Methods plan with `can_spend` / `spend` (kinds, the QA reserve); `Instrumented` enforces
    the cap on the calls actually made (`count_call`), so a method that forgets to spend
    still cannot exceed `max_steps` (``--steps``). A method that needs a QA reserve sets
    `reserve` on the budget it is given.

    Args:
        max_steps: Total calls allowed (S_max).
        reserve: Last steps only a "qa" call may use.
    """

    def __init__(self, max_steps: int, reserve: int = 1):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if not 0 <= reserve <= max_steps:
            raise ValueError(f"reserve must be in [0, max_steps={max_steps}], got {reserve}")
        self.max_steps = max_steps
        self.reserve = reserve
        self.spent: Counter[str] = Counter()
        self.calls = 0
        self._lock = threading.Lock()

    def count_call(self) -> None:
        """Count one call made to a model; refuse it past `max_steps` (the hard cap).

        Raises:
            BudgetExhausted: `max_steps` calls were already made.
        """
        with self._lock:
            if self.calls >= self.max_steps:
                raise BudgetExhausted("any", self.calls, self.max_steps, 0)
            self.calls += 1

    @property
    def used(self) -> int:
        return sum(self.spent.values())

    @property
    def remaining(self) -> int:
        """Steps left for a QA call (non-QA calls have `reserve` fewer)."""
        return self.max_steps - self.used

    @property
    def exhausted(self) -> bool:
        """True when not even a QA call may run."""
        return self.remaining <= 0

    def remaining_for(self, kind: str) -> int:
        """Steps a call of `kind` may still take."""
        left = self.remaining if kind == QA else self.remaining - self.reserve
        return max(0, left)

    def can_spend(self, kind: str = "other") -> bool:
        """Whether one call of `kind` fits ("qa" may use the reserved steps)."""
        return self.remaining_for(kind) > 0

    def spend(self, kind: str = "other") -> int:
        """Take one step for a call of `kind`; return the steps left.

        Raises:
            BudgetExhausted: when `can_spend(kind)` is False.
        """
        with self._lock:
            if not self.can_spend(kind):
                raise BudgetExhausted(kind, self.used, self.max_steps, self.reserve)
            self.spent[kind] += 1
            return self.remaining
