"""A question's wall-clock deadline bounds all its calls; past it the result says failed."""

from __future__ import annotations

import json

from tablequest.corpus import Store
from tablequest.llm import Scripted
from tablequest.llm.config import resolve_config
from tablequest.llm.deadline import Deadline
from tablequest.methods.auto.router import AutoOptions, AutoRouter
from tablequest.methods.base import MethodContext
from tablequest.methods.seek import TableSeek
from tablequest.table import Source, Table
from tablequest.trace import Trace

MEDALS = Table.from_rows(
    [["Nation", "Gold"], ["Norway", "16"], ["Germany", "12"]], source=Source(format="csv")
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store() -> Store:
    st = Store()
    st.add_table(MEDALS, key="/t/medals.csv")
    return st


def slow_llm(clock: Clock, seconds: float) -> Scripted:
    def reply(messages: list[dict[str, str]], params: dict[str, object]) -> str:
        clock.now += seconds  # each call takes `seconds` of the question's time
        prompt = messages[-1]["content"]
        if "grep patterns" in prompt and "Candidate tables" not in prompt:
            return json.dumps({"patterns": ["Gold", "Norway"]})
        if "Candidate tables" in prompt:
            return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
        return json.dumps({"status": "answered", "answer": "Norway", "evidence": []})

    return Scripted(reply)  # type: ignore[arg-type]


def test_calls_after_the_deadline_are_refused_and_the_question_fails() -> None:
    clock = Clock()
    llm = slow_llm(clock, 40.0)
    seek = TableSeek(context=MethodContext(llm=llm))
    seek.context.deadline = Deadline(60.0, clock=clock)
    trace = Trace.in_memory()
    result = seek.answer("Which nation won 16 golds?", store(), trace=trace)
    assert len(llm.calls) == 2  # the third call (QA) came after 80 s of a 60 s deadline
    assert result.status == "failed" and result.answer is None
    assert result.reason is not None and "deadline of 60 s" in result.reason
    assert "--deadline" in result.reason
    refused = [e for e in trace.events if e["kind"] == "llm_call" and e.get("error")]
    assert refused and all(e["error"] == "DeadlineExceeded" for e in refused)
    assert any(e["kind"] == "error" and e.get("stage") == "deadline" for e in trace.events)


def test_an_answer_within_the_deadline_stands() -> None:
    clock = Clock()
    seek = TableSeek(context=MethodContext(llm=slow_llm(clock, 1.0)))
    seek.context.deadline = Deadline(60.0, clock=clock)
    result = seek.answer("Which nation won 16 golds?", store())
    assert result.status == "answered" and result.answer == "Norway"


def test_the_router_shares_one_deadline_with_the_methods_it_runs() -> None:
    clock = Clock()
    llm = slow_llm(clock, 35.0)
    context = MethodContext(llm=llm, deadline=Deadline(60.0, clock=clock))
    result = AutoRouter(AutoOptions(), context).answer("Which nation won 16 golds?", store())
    # select (patterns, refine) spends 70 s of 60: the routed method's QA call is refused
    assert len(llm.calls) == 2
    assert result.status == "failed" and "deadline" in (result.reason or "")


def test_deadline_comes_from_the_config_and_zero_means_none() -> None:
    config = resolve_config(deadline=12, env={}, cwd="/nonexistent")
    assert MethodContext(llm_config=config).question_deadline().seconds == 12
    none = resolve_config(deadline=0, env={}, cwd="/nonexistent")
    assert MethodContext(llm_config=none).question_deadline().seconds is None
    assert MethodContext().question_deadline().seconds is None
