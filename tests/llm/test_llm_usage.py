"""UsageMeter, StepBudget (reserve semantics) and the Instrumented wrapper."""

from __future__ import annotations

import threading

import pytest

from tablequest.llm import (
    BudgetExhausted,
    CachedLLM,
    Completion,
    Instrumented,
    LLMTimeout,
    Scripted,
    StepBudget,
    Usage,
    UsageMeter,
)
from tablequest.trace import Trace

MSG = [{"role": "user", "content": "question"}]


def comp(p: int, c: int, cached: bool = False) -> Completion:
    return Completion("x", usage=Usage(p, c), cached=cached)


def test_meter_totals_cost_and_scopes() -> None:
    meter = UsageMeter({"m": (1.0, 2.0)})
    q1 = meter.scope("q1")
    q1.record(model="m", completions=[comp(1000, 500)], seconds=1.5, requests=3)
    q1.record(model="m", completions=[comp(1000, 500, cached=True)], seconds=0.0)
    meter.scope("q2").record(model="other", completions=[comp(10, 5)], seconds=0.5, error=False)
    meter.scope("q2").record(model="m", completions=[], seconds=0.25, error=True, requests=2)
    assert meter.scope("q1") is q1
    total = meter.totals
    assert total.calls == 4 and total.prompt_tokens == 2010 and total.completion_tokens == 1005
    assert total.cache_hits == 1 and total.errors == 1
    assert total.seconds == pytest.approx(2.25)
    assert total.cost == pytest.approx(2.0)  # only the uncached priced call
    queries = meter.queries
    assert queries["q1"].calls == 2 and queries["q1"].cost == pytest.approx(2.0)
    assert queries["q2"].cost is None
    assert queries["q1"].requests == 3 and queries["q2"].requests == 2
    assert meter.to_dict() == {
        "calls": 4,
        "requests": 5,
        "prompt_tokens": 2010,
        "completion_tokens": 1005,
        "seconds": 2.25,
        "cache_hits": 1,
        "errors": 1,
        "cost": 2.0,
    }


def test_meter_is_thread_safe() -> None:
    meter = UsageMeter()
    threads = [
        threading.Thread(
            target=lambda: [
                meter.scope("q").record(model="m", completions=[comp(1, 1)], seconds=0.001)
                for _ in range(200)
            ]
        )
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.totals.calls == 1600 and meter.queries["q"].prompt_tokens == 1600


def test_budget_reserves_last_step_for_qa() -> None:
    budget = StepBudget(3, reserve=1)
    assert budget.can_spend("pattern") and budget.remaining == 3
    assert budget.spend("pattern") == 2
    assert budget.spend("select") == 1
    assert not budget.can_spend("regenerate") and budget.remaining_for("regenerate") == 0
    with pytest.raises(BudgetExhausted, match="'regenerate' call: 2/3 used, the last 1 reserved"):
        budget.spend("regenerate")
    assert budget.can_spend("qa") and not budget.exhausted
    assert budget.spend("qa") == 0
    assert budget.exhausted and not budget.can_spend("qa")
    with pytest.raises(BudgetExhausted) as info:
        budget.spend("qa")
    assert info.value.kind == "qa" and info.value.used == 3 and "reserved" not in str(info.value)
    assert dict(budget.spent) == {"pattern": 1, "select": 1, "qa": 1}


def test_budget_without_reserve_and_qa_first() -> None:
    budget = StepBudget(2, reserve=0)
    budget.spend()
    budget.spend()
    assert budget.exhausted
    qa_heavy = StepBudget(2, reserve=1)
    qa_heavy.spend("qa")
    assert not qa_heavy.can_spend("other")  # the one left is still reserved
    assert qa_heavy.can_spend("qa")


@pytest.mark.parametrize(("steps", "reserve"), [(0, 0), (2, 3), (2, -1)])
def test_budget_validation(steps: int, reserve: int) -> None:
    with pytest.raises(ValueError):
        StepBudget(steps, reserve)


def test_instrumented_records_usage_and_trace(tmp_path: object) -> None:
    trace = Trace.in_memory()
    meter = UsageMeter()
    llm = Instrumented(Scripted(["hello there"], model="fake"), trace=trace, usage=meter)
    [c] = llm.chat(MSG, max_tokens=20, stop="END")
    assert c.text == "hello there"
    [event] = trace.events
    assert event["kind"] == "llm_call" and event["model"] == "fake"
    assert event["messages"] == MSG and event["replies"] == ["hello there"]
    assert event["params"]["max_tokens"] == 20 and event["params"]["stop"] == ["END"]
    assert event["prompt_tokens"] == c.usage.prompt_tokens and event["cached"] is False
    assert event["finish_reasons"] == ["stop"] and event["latency_s"] >= 0
    assert meter.totals.calls == 1 and meter.totals.completion_tokens == 3
    assert llm.describe()["backend"] == "scripted"


def test_instrumented_records_errors_and_reraises() -> None:
    trace = Trace.in_memory()
    meter = UsageMeter()
    llm = Instrumented(Scripted([LLMTimeout("too slow", url="u")]), trace=trace, usage=meter)
    with pytest.raises(LLMTimeout):
        llm.chat(MSG)
    [event] = trace.events
    assert event["kind"] == "llm_call" and event["error"] == "LLMTimeout"
    assert event["message"] == "too slow" and event["replies"] == []
    assert meter.totals.errors == 1 and meter.totals.calls == 1


def test_instrumented_outside_cache_sees_hits(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    trace = Trace.in_memory()
    meter = UsageMeter({"scripted": (1.0, 1.0)})
    llm = Instrumented(CachedLLM(Scripted(["a"]), tmp_path), trace=trace, usage=meter)
    llm.chat(MSG)
    llm.chat(MSG)
    assert [e["cached"] for e in trace.events] == [False, True]
    assert meter.totals.cache_hits == 1
    first_cost = meter.totals.cost
    assert first_cost is not None and first_cost > 0
    llm.close()
