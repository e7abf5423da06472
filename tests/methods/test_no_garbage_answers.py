"""No garbage as answers (issue 36, must 4): a model reply without an answer in the method's
own format is never "answered". With a model that only greets, every method fails with the
reason "the model's reply had no answer in the expected format" and keeps the reply's start in
the trace; short answers without the format stay accepted where a method accepts them."""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.corpus import Store
from tablequest.llm import Scripted
from tablequest.llm.parse import NO_ANSWER_IN_FORMAT
from tablequest.methods.registry import get_method
from tablequest.methods.run import ask
from tablequest.sandbox import SandboxUnavailable
from tablequest.table import Source, Table
from tablequest.trace import Trace

GREETING = "Hello! I am a helpful assistant. How can I help you today?"
LONG_PROSE = "Looking at the medal table, the nations are listed with their medals. " * 6
QUESTION = "Which nation won the most gold medals?"
MEDALS = Table.from_rows(
    [["Nation", "Gold", "Silver"], ["Norway", "16", "8"], ["Germany", "12", "10"]],
    title="medals", source=Source(format="csv"),
)  # fmt: skip
METHODS = ["direct", "seek", "bm25", "rag", "scope", "research", "auto"]


class NoSandbox:
    """A sandbox that is never needed here: it counts the sessions asked for and refuses them."""

    def __init__(self) -> None:
        self.asked = 0

    def session(self, frames: Any) -> Any:
        self.asked += 1
        raise SandboxUnavailable("these tests start no sandbox")

    def close(self) -> None:
        pass


@pytest.fixture()
def store() -> Store:
    st = Store()
    st.add_table(MEDALS, key="/tables/medals.csv")
    return st


def run(store: Store, method: str, reply: str) -> tuple[Any, Trace, NoSandbox]:
    trace, sandbox = Trace.in_memory(), NoSandbox()
    tid = store.ids_for_path("/tables/medals.csv")[0]
    one_table = get_method(method).input in ("table", "tables")
    options = {"encoder": "bm25"} if method == "rag" else None
    result = ask(QUESTION, store, method=method, llm=Scripted(lambda m, p: reply), trace=trace,
                 table_ids=[tid] if one_table else (), options=options,
                 sandbox=sandbox)  # type: ignore[arg-type]  # fmt: skip
    return result, trace, sandbox


def replies(trace: Trace) -> list[str]:
    """The replies kept by the trace events that give the reason."""
    return [e["reply"] for e in trace.events if e["kind"] in ("fallback", "error")
            and e.get("reason") == NO_ANSWER_IN_FORMAT]  # fmt: skip


@pytest.mark.parametrize("method", METHODS)
def test_a_greeting_model_fails_with_the_reason_and_the_reply_in_the_trace(
    store: Store, method: str
) -> None:
    result, trace, sandbox = run(store, method, GREETING)
    assert (result.status, result.answer) == ("failed", None)
    assert result.reason == NO_ANSWER_IN_FORMAT
    assert replies(trace)[-1] == GREETING
    assert sandbox.asked == 0


@pytest.mark.parametrize("method", ["direct", "seek", "scope", "research"])
def test_long_prose_without_an_answer_marker_fails(store: Store, method: str) -> None:
    result, trace, _ = run(store, method, LONG_PROSE)
    assert (result.status, result.reason) == ("failed", NO_ANSWER_IN_FORMAT)
    assert replies(trace)[-1] == LONG_PROSE[:200] + "…"


@pytest.mark.parametrize(
    ("method", "reply"),
    [
        ("direct", "Norway"),  # a short plain reply is the answer (seek.qa, by design)
        ("direct", "The gold counts are 16 and 12, so Norway leads.\n" * 8 + "Answer: Norway"),
        ("scope", "Norway"),  # a short tag-less reply, after one repair request
        ("research", "Final Answer: Norway"),  # the non-code fallback's own format
    ],
    ids=["direct-short", "direct-answer-line", "scope-short", "research-final-answer"],
)
def test_answers_in_a_form_the_method_accepts_stay_answers(
    store: Store, method: str, reply: str
) -> None:
    result, _, _ = run(store, method, reply)
    assert (result.status, result.answer) == ("answered", "Norway")
