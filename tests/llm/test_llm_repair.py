"""ask_with_repair: one repair request, then None for the caller's fallback."""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.llm import (
    DEFAULT_REPAIR_PROMPT,
    LLMUnavailable,
    Scripted,
    StepBudget,
    ask_with_repair,
    extract_json,
    parse_f_row,
)
from tablequest.trace import Trace

MSG = [{"role": "user", "content": "Give JSON with {braces} in the prompt"}]


def parse_dict(text: str) -> Any:
    return extract_json(text, dict)


def test_first_try_succeeds() -> None:
    llm = Scripted(['{"a": 1}'])
    assert ask_with_repair(llm, MSG, parse_dict) == ({"a": 1}, 1)


def test_repair_request_includes_error_and_bad_reply() -> None:
    llm = Scripted(["I cannot do JSON", '{"a": 2}'])
    value, attempts = ask_with_repair(
        llm, MSG, parse_dict, repair_prompt="Bad: {error}. Reply {json} only.", max_tokens=64
    )
    assert (value, attempts) == ({"a": 2}, 2)
    second = llm.calls[1]
    assert second.messages[:1] == MSG
    assert second.messages[1] == {"role": "assistant", "content": "I cannot do JSON"}
    assert second.messages[2]["content"].startswith("Bad: no JSON object or array")
    assert second.messages[2]["content"].endswith("Reply {json} only.")
    assert second.params["max_tokens"] == 64


def test_two_failures_return_none_and_trace_fallback() -> None:
    trace = Trace.in_memory()
    llm = Scripted(["nope", "f_row(apple)"])
    value, attempts = ask_with_repair(llm, MSG, parse_f_row, trace=trace)
    assert (value, attempts) == (None, 2)
    *errors, event = trace.events
    assert [e["kind"] for e in errors] == ["error", "error"] and errors[1][
        "reply"
    ] == "f_row(apple)"
    assert event["kind"] == "fallback" and event["parse_error"] == "bad_call"
    assert event["attempts"] == 2
    assert "{error}" in DEFAULT_REPAIR_PROMPT


def test_budget_is_spent_and_respected() -> None:
    budget = StepBudget(3, reserve=1)
    llm = Scripted(["bad", "bad again", "unused"])
    assert ask_with_repair(llm, MSG, parse_dict, budget=budget, kind="select") == (None, 2)
    assert budget.spent["select"] == 2 and not budget.can_spend("select")
    trace = Trace.in_memory()
    assert ask_with_repair(llm, MSG, parse_dict, budget=budget, trace=trace) == (None, 0)
    assert trace.events[0]["reason"] == "step budget exhausted"
    assert trace.events[0]["parse_error"] is None


def test_budget_runs_out_before_repair() -> None:
    budget = StepBudget(1, reserve=0)
    llm = Scripted(["bad"])
    assert ask_with_repair(llm, MSG, parse_dict, budget=budget) == (None, 1)


def test_llm_errors_propagate() -> None:
    llm = Scripted([LLMUnavailable("down")])
    with pytest.raises(LLMUnavailable):
        ask_with_repair(llm, MSG, parse_dict)
