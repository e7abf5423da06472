"""The ReAct solver of Fig. 11: prompt, loop, observations, voting (scripted LLM, fake REPL).

The fake session never executes anything: it answers from a table of canned results, so these
tests pin the loop; tests/methods/test_rag_e2e.py runs the real sandbox.
"""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.base import LLMUnavailable
from tablequest.llm.instrument import Instrumented
from tablequest.llm.usage import StepBudget
from tablequest.methods.rag.prompts import rag_solver_prompt, table_solver_prompt
from tablequest.methods.rag.solver import (
    extract_code,
    majority_vote,
    normalize_answer,
    observation,
    solve,
    voted_result,
)
from tablequest.sandbox import ExecResult, SandboxError
from tablequest.trace import Trace


class FakeSession:
    def __init__(self, results: dict[str, ExecResult]) -> None:
        self.results = results
        self.ran: list[tuple[str, float]] = []

    def run(self, code: str, timeout: float = 10.0) -> ExecResult:
        self.ran.append((code, timeout))
        if code == "boom":
            raise SandboxError("this session is closed")
        return self.results.get(code, ExecResult(ok=False, error=f"NameError: {code!r}"))


Q = "What is the average price for leather wallets?"
SCHEMA = ['{"column_name": "item_total", "dtype": "object", "cell_examples": ["$449.00"]}']
CELLS = ['{"column_name": "order_status", "cell_value": "Delivered to buyer"}']


def test_fig11_prompt_text() -> None:
    prompt = rag_solver_prompt(Q, "orders data", SCHEMA, ["leather wallets"], CELLS)
    assert prompt.startswith(
        'You are working with a pandas dataframe regarding "orders data" in Python. The name '
        "of the dataframe is `df`. Your task is to use `python_repl_ast` to answer the "
        f'question: "{Q}"\n\nTool description:\n- `python_repl_ast`: A Python interactive '
        "shell. Use this to execute python commands. Input should be a valid single line "
        "python command.\n\nSince you cannot view the table directly, here are some schemas "
        "and cell values retrieved from the table.\n\nSchema Retrieval Results:\n" + SCHEMA[0]
    )
    assert (
        "\n\nCell Retrieval Queries: leather wallets\nCell Retrieval Results:\n" + CELLS[0]
    ) in prompt
    assert "Action: the single line Python command to execute\n" in prompt
    assert '- Ensure the last line is only "Final Answer: Answer1, Answer2, ..." form' in prompt
    assert prompt.endswith(
        'Now, given a table regarding "orders data", please use `python_repl_ast` with the '
        f'column names and cell values above to answer the question: "{Q}"\n\nBegin!\n'
    )
    bare = rag_solver_prompt(Q, None, SCHEMA, None, [])
    assert "Cell Retrieval" not in bare and "regarding" not in bare
    fact = rag_solver_prompt("x is 3", None, SCHEMA, [], [], "fact_verification")
    assert 'Final Answer: Yes" or "Final Answer: No".' in fact
    base = table_solver_prompt(Q, None, "| a |\n|---|\n| 1 |")
    assert "You are working with the following table:\n| a |" in base
    assert "Input should be a valid one-line python command." in base
    assert "verify the statement" in table_solver_prompt("c", "t", "T", "fact_verification")


def test_loop_runs_actions_keeps_state_and_shows_errors() -> None:
    llm = Scripted([
        "I need the prices.\nAction: df['p'] = df['item_total'].str.strip('$').astype(float)",
        "Thought: check a column\nAction: df['missing']",
        "Filter wallets.\nAction: ```python\ndf[df.d.str.contains('Wallet')].p.mean()\n```",
        "Thought: I know it.\nFinal Answer: 442.79\nThe average is 442.79",
    ])  # fmt: skip
    session = FakeSession({
        "df['p'] = df['item_total'].str.strip('$').astype(float)": ExecResult(ok=True),
        "df['missing']": ExecResult(ok=False, error="KeyError: 'missing'"),
        "df[df.d.str.contains('Wallet')].p.mean()": ExecResult(ok=True, value="np.float64(442.79)"),
    })  # fmt: skip
    trace = Trace.in_memory()
    out = solve(llm, session, "PROMPT\n", trace=trace, timeout=3.0)
    assert (out.answer, out.status, out.n_iter, out.calls) == ("442.79", "answered", 4, 4)
    assert [c for c, _ in session.ran] == out.actions and len(out.actions) == 3
    assert session.ran[0][1] == 3.0
    second = llm.calls[1].prompt
    assert second.endswith("Observation: success!\nThought: ")
    third = llm.calls[2].prompt
    assert "Observation: KeyError: 'missing'\nThought: " in third  # the crash, shown
    assert "Observation: 442.79\n" in llm.calls[3].prompt  # np.float64(...) read as its value
    assert llm.calls[0].params["stop"] == ["Observation:"]
    assert llm.calls[0].messages == [{"role": "user", "content": "PROMPT\nThought: "}]
    assert [e["ok"] for e in trace.events if e["kind"] == "exec"] == [True, False, True]


def test_no_action_no_answer_and_sandbox_errors() -> None:
    llm = Scripted(["I am not sure what to do.", "Action: boom", "Action: `df.shape` first"])
    session = FakeSession({"df.shape": ExecResult(ok=True, value="(3, 2)")})
    out = solve(llm, session, "P\n", trace=Trace.in_memory(), max_steps=3)
    assert (out.answer, out.status, out.n_iter) == (None, "no_answer", 3)
    assert "Observation: Error: no Action provided.\n" in llm.calls[1].prompt
    assert "Observation: SandboxError: this session is closed\n" in llm.calls[2].prompt
    assert out.transcript.endswith("Observation: (3, 2)\n")


GREETING = "Hello! I am a helpful assistant. How can I help you today?"
NO_FORMAT = "the model's reply had no answer in the expected format"


def no_evidence(*args: Any) -> Any:
    raise AssertionError("a question without an answer looks up no evidence")


def test_replies_without_action_or_final_answer_end_unformatted() -> None:
    """Issue 36: a sample whose last reply is not in the ReAct format names that reason and
    the reply's start; every sample so → "failed"."""
    trace = Trace.in_memory()
    out = solve(Scripted([GREETING] * 2), FakeSession({}), "P\n", trace=trace, max_steps=2)
    assert (out.answer, out.status, out.reason) == (None, "unformatted", NO_FORMAT)
    (event,) = [e for e in trace.events if e["kind"] == "fallback"]
    assert (event["stage"], event["reason"], event["reply"]) == ("solver", NO_FORMAT, GREETING)
    voted = voted_result([out, out], evidence=no_evidence, max_depth=2, trace=trace)
    assert (voted.status, voted.reason) == ("failed", NO_FORMAT)
    acting = solve(Scripted(["Action: df.shape"] * 2), FakeSession({}), "P\n",
                   trace=Trace.in_memory(), max_steps=2)  # fmt: skip
    assert acting.status == "no_answer"
    mixed = voted_result([out, acting], evidence=no_evidence, max_depth=2, trace=trace)
    assert mixed.status == "insufficient"


def test_budget_spent_on_unformatted_replies_names_the_format() -> None:
    budget = StepBudget(2)
    llm = Instrumented(Scripted([GREETING] * 5), budget=budget)
    out = solve(llm, FakeSession({}), "P\n", trace=Trace.in_memory(), max_steps=5)
    assert (out.status, out.reason, out.n_iter) == ("unformatted", NO_FORMAT, 2)


def test_llm_error_and_context_budget_stop_cleanly() -> None:
    llm = Scripted([LLMUnavailable("connection refused")])
    out = solve(llm, FakeSession({}), "P\n", trace=Trace.in_memory())
    assert (out.status, out.n_iter) == ("llm_error", 1)
    assert "connection refused" in (out.reason or "")
    big = solve(Scripted([]), FakeSession({}), "x" * 500, trace=Trace.in_memory(),
                context_tokens=100)  # fmt: skip
    assert (big.status, big.n_iter, big.calls) == ("context", 0, 0)
    assert "exceeds the context budget of 100" in (big.reason or "")


def test_observation_formatting() -> None:
    assert observation(ExecResult(ok=True)) == "success!"
    assert observation(ExecResult(ok=True, stdout="hi\n", value="'abc'")) == "\nhi\nabc"
    assert observation(ExecResult(ok=True, value="a  b\n0  1")) == "\na  b\n0  1"
    assert observation(ExecResult(ok=False, error="ZeroDivisionError: division by zero")) == (
        "ZeroDivisionError: division by zero"
    )
    cut = observation(ExecResult(ok=True, value="y" * 50), limit=10)
    assert cut.startswith("yyyyyyyyyy... [observation cut: 40 more characters]")
    assert observation(ExecResult(ok=True, value="np.int64(6)")) == "6"


@pytest.mark.parametrize(
    ("action", "code"),
    [
        ("df.head()", "df.head()"),
        ("`df.head()` to look", "df.head()"),
        ("```python\ndf.shape\n```", "df.shape"),
        ("df.query('`a b` > 1')", "df.query('`a b` > 1')"),
    ],
)
def test_extract_code(action: str, code: str) -> None:
    assert extract_code(action) == code


def test_voting() -> None:
    assert normalize_answer("$1,299.00") == "1299"
    assert normalize_answer("Paris and London") == normalize_answer("london, paris")
    assert normalize_answer("2.50") == "2.5" and normalize_answer("nan") == "nan"
    answer, votes = majority_vote(["442.79", None, "$442.79", "12", "Twelve", "12.0"])
    assert answer == "442.79" and votes == {"442.79": 2, "12": 2, "twelve": 1}  # tie: first
    assert majority_vote([None, None]) == (None, {})
    assert majority_vote(["b", "a", "a"])[0] == "a"


@pytest.mark.parametrize("final", ["insufficient", "f_row([*])", "I cannot answer this."])
def test_a_refusal_or_tool_syntax_as_final_answer_is_no_answer(final: str) -> None:
    llm = Scripted([f"Thought: done.\nFinal Answer: {final}"])
    out = solve(llm, FakeSession({}), "P\n", trace=Trace.in_memory())
    assert (out.answer, out.status, out.n_iter) == (None, "no_answer", 1)
    assert "refusal or tool syntax" in (out.reason or "")
