"""DTR §3.3 Path Selection: top-k paths by E(π) per iteration, repeats allowed (selection=repeat),
one ballot per distinct path; selection=once runs each path at most once."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.query import start_query
from tablequest.methods.research import DTR, ResearchOptions
from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.explore import select
from tablequest.methods.research.planner import Candidate, PathStats
from tablequest.methods.research.reflect import ballots, converged, vote
from tablequest.methods.research.state import QuestionRun
from tablequest.sandbox import Sandbox
from tablequest.table import Table
from tablequest.trace import Trace

QUESTION = "What were the total 2019 sales of the cities?"
AGG = "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()"
A, B, C = ("SELECT", "FILTER:raw", "AGG"), ("FILTER:raw", "SELECT", "AGG"), ("SELECT", "AGG")


def outcome(path: tuple[str, ...], answer: str, valid: bool = True) -> PathOutcome:
    return PathOutcome(path, answer=answer, valid=valid)


# -- ballots: one per distinct path -----------------------------------------------------------
def test_a_repeated_path_votes_once_with_its_latest_answer() -> None:
    runs = [outcome(A, "7"), outcome(B, "9"), outcome(A, "9")]
    assert [o.answer for o in ballots(runs)] == ["9", "9"]  # A's latest, then B
    assert vote(runs, ordered=False) == ("9", {"9": 2})  # not 3: A counts once
    same = [outcome(A, "5"), outcome(A, "5"), outcome(B, "6")]
    assert vote(same, ordered=False) == ("5", {"5": 1, "6": 1})
    assert not converged([outcome(A, "5"), outcome(A, "5")], 2, ordered=False)
    assert converged([outcome(A, "5"), outcome(B, "5")], 2, ordered=False)


# -- the selection rule on hand-computed E(π) ---------------------------------------------------
def hand_run(sales: Table, selection: str) -> tuple[QuestionRun, ResearchOptions]:
    opts = ResearchOptions.model_validate({"selection": selection, "top_k": 2, "alpha": 1.0})
    comp = DTR(opts).comprehend(sales)
    q = start_query(MethodContext(llm=Scripted([])), budget=StepBudget(20, reserve=0),
                    trace=Trace.in_memory(), default_steps=20)  # fmt: skip
    a = Candidate(A, 0.9, PathStats(0.9, 3), executed=True, runs=1, context=0)
    b = Candidate(B, 0.8, PathStats(0.0, 0))
    c = Candidate(C, 0.5, PathStats(0.0, 0))
    run = QuestionRun(q, "t1", sales, comp, "aggregation", None, [a, b, c], [])
    run.outcomes = [outcome(A, "", valid=False)]  # A failed; lessons changed since:
    run.context = 1
    return run, opts


def test_top_k_by_expectation_repeats_a_path_whose_context_changed(sales: Table) -> None:
    run, opts = hand_run(sales, "repeat")
    # Σ N = 3. E(A) = 0.9 + 1.0·0.9·sqrt(ln 3 / 4) = 0.9 + 0.9·0.524074 = 1.371666
    #          E(B) = 0.8·sqrt(ln 3 / 1) = 0.8·1.048147 = 0.838518;  E(C) = 0.5·1.048147 = 0.524074
    assert math.isclose(0.9 + 0.9 * math.sqrt(math.log(3) / 4), 1.371666, abs_tol=1e-6)
    pick = select(run, opts)
    assert pick is not None and pick.path == A  # the executed path runs again
    (rank,) = [e for e in run.q.trace.events if e.get("stage") == "rank"]
    scores = {e["path"]: e["E"] for e in rank["expectations"]}
    assert scores == {"SELECT>FILTER:raw>AGG": 1.3717, "FILTER:raw>SELECT>AGG": 0.8385,
                      "SELECT>AGG": 0.5241}  # fmt: skip
    (iteration,) = [e for e in run.q.trace.events if e.get("stage") == "iteration"]
    assert iteration["paths"] == ["SELECT>FILTER:raw>AGG", "FILTER:raw>SELECT>AGG"]  # top-2
    assert iteration["repeats"] == ["SELECT>FILTER:raw>AGG"]
    # the rest of the iteration's batch comes next, without ranking a new iteration
    run.candidates[0].context = run.context
    assert select(run, opts) is run.candidates[1] and run.iteration == 1


def test_no_repeat_without_a_new_context_or_in_once_mode(sales: Table) -> None:
    run, opts = hand_run(sales, "once")
    assert select(run, opts) is run.candidates[1]  # B: the best unexecuted path
    run, opts = hand_run(sales, "repeat")
    run.context = 0  # nothing learned since A ran: the same prompts, the same reply
    assert select(run, opts) is run.candidates[1]
    run, opts = hand_run(sales, "repeat")
    run.outcomes = [outcome(A, "4200")]  # A was valid: its ballot cannot grow
    assert select(run, opts) is run.candidates[1]


# -- end to end: a wrong-shaped path is retried with its lesson --------------------------------
def reply_for(script: Any) -> Any:
    steps = {
        "SELECT": script.code("result = df[['Region', 'Sales ($) / 2019', '_aggregate']]"),
        "FILTER": script.code("result = df[~df['_aggregate']]"),
    }
    inner = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps)

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        step = script.step(prompt)
        if step is not None and step[2] == "AGG":
            # a text answer (wrong shape) until the lesson about the shape is shown
            learned = "the last operation must return a single number" in prompt
            return str(script.code(AGG if learned else "result = 'about 4200'"))
        return str(inner(messages, params))

    return reply


@pytest.mark.parametrize("selection", ["repeat", "once"])
def test_a_wrong_shaped_path_runs_again_with_the_lesson(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path, selection: str
) -> None:
    llm = Scripted(reply_for(script))
    options = ResearchOptions.model_validate(
        {"selection": selection, "top_k": 1, "memory": "off", "llm_experience": False}
    )
    trace = Trace.in_memory()
    result = DTR(options, MethodContext(llm=llm, sandbox=sandbox)).answer(
        QUESTION, TableSet([("t1", sales)]), trace=trace, budget=StepBudget(12, reserve=0)
    )
    assert result.answer == "4200"
    selected = [(e["path"], e["repeat"]) for e in trace.events if e.get("stage") == "select"]
    if selection == "once":
        assert selected == [("SELECT>FILTER:raw>AGG", False), ("FILTER:raw>SELECT>AGG", False)]
        return
    assert selected == [("SELECT>FILTER:raw>AGG", False), ("SELECT>FILTER:raw>AGG", True)]
    first = next(e for e in trace.events if e.get("stage") == "feedback")
    assert (first["f_exec"], first["f_type"], first["valid"]) == (1, 0, False)
    # R̂ and N per operation (Alg. 1 lines 17–20): SELECT and FILTER:raw kept rows (f_type 1),
    # AGG answered in the wrong shape (f_type 0); r = 0.8·f_type + 0.2·exp(-f_time/τ)
    ups = [e for e in trace.events if e.get("stage") == "update"][:3]
    assert [(u["op"], u["n"], u["f"][0], u["f"][2]) for u in ups] == [
        ("SELECT", 1, 1, 1), ("FILTER:raw", 2, 1, 1), ("AGG", 3, 1, 0),
    ]  # fmt: skip
    rewards = [0.8 * u["f"][2] + 0.2 * math.exp(-u["f"][1] / 10.0) for u in ups]
    assert [u["reward"] for u in ups] == pytest.approx(rewards, abs=1e-4)
    assert ups[2]["r_hat"] == pytest.approx(sum(rewards) / 3, abs=1e-4)
    # Eq. 1 with Σ N = 3: E = R̂ + P·sqrt(ln 3 / (1 + N)); A's R̂ ≈ 0.73 keeps it first
    ranks = [e for e in trace.events if e.get("stage") == "rank"]
    for entry in ranks[1]["expectations"]:
        r_hat, n = (sum(rewards) / 3, 3) if entry["path"] == "SELECT>FILTER:raw>AGG" else (0.0, 0)
        want = r_hat + entry["prior"] * math.sqrt(math.log(3) / (1 + n))
        assert entry["n"] == n and entry["E"] == pytest.approx(want, abs=2e-4)
    [path] = [p for p in result.details["paths"] if p["runs"]]
    assert (path["runs"], path["n"], path["valid"]) == (2, 6, True)  # 2 runs × 3 operations
    assert result.details["votes"] == {"4200": 1} and result.details["iterations"] == 2
