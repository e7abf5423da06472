"""A scripted TabScope model: replies chosen by stage (classify, rows, cols, refine, answer)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tablequest.llm import Scripted
from tablequest.llm.base import LLM, Completion, Message
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.result import Result
from tablequest.methods.scope import ScopeOptions, TabScope
from tablequest.table import Table
from tablequest.trace import Trace

LEAGUE = Table.from_rows(
    [
        ["Year", "Division", "League"],
        ["2001", "2", "USL A-League"],
        ["2004", "2", "USL A-League"],
        ["2005", "2", "USL First Division"],
    ],
    title="Rochester Rhinos seasons",
)
MEDALS = Table.from_rows(
    [
        ["Nation", "Medals", "Medals"],
        ["", "Gold", "Silver"],
        ["Norway", "16", "8"],
        ["Germany", "12", "10"],
        ["Canada", "11", "8"],
    ],
    n_header_rows=2,
)
QUESTION = "What was the last year the team was in the USL A-League?"

DEFAULTS: dict[str, Any] = {
    "classify": json.dumps({"question_type": "lookup"}),
    "rows": "f_row([row_0, row_1])",
    "cols": "f_col([Year, League])",
    "refine": json.dumps({"action": "keep", "final_rows": [0, 1], "final_columns": ["Year"]}),
    "answer": "<think>2004 is the last A-League year.</think><answer>2004</answer>",
}


def stage_of(messages: Sequence[Message]) -> str:
    """The stage a conversation belongs to, with ``_repair`` for repair requests."""
    first = messages[0]["content"]
    if first.startswith("Classify"):
        stage = "classify"
    elif "f_row()" in first:
        stage = "rows"
    elif "f_col()" in first:
        stage = "cols"
    elif first.startswith("You are refining"):
        stage = "refine"
    else:
        stage = "answer"
    return stage + ("_repair" if len(messages) > 1 else "")


Item = str | Completion | Exception | list[str | Completion] | Callable[..., Any]


class Bot:
    """Reply function for `Scripted`: per-stage queues (the last item repeats)."""

    def __init__(self, **stages: Item | list[Item]) -> None:
        self.queues: dict[str, list[Item]] = {}
        for name, value in stages.items():
            self.queues[name] = list(value) if isinstance(value, tuple) else [value]
        self.seen: list[str] = []

    def queue(self, *items: Item, stage: str) -> None:
        self.queues[stage] = list(items)

    def __call__(self, messages: list[Message], params: dict[str, Any]) -> Any:
        stage = stage_of(messages)
        self.seen.append(stage)
        queue = self.queues.get(stage) or self.queues.get(stage.removesuffix("_repair"))
        item: Item = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else None  # type: ignore[assignment]
        if item is None:
            item = DEFAULTS[stage.removesuffix("_repair")]
        if callable(item) and not isinstance(item, Exception):
            return item(messages, params)
        if isinstance(item, list):
            return item
        return item


def seq(*items: Item) -> tuple[Item, ...]:
    """A queue of replies for one stage (consumed in order; the last repeats)."""
    return items


def ask(
    bot: Bot | LLM,
    *,
    table: Table = LEAGUE,
    question: str = QUESTION,
    steps: int | None = None,
    budget: StepBudget | None = None,
    **options: Any,
) -> tuple[Result, Trace, LLM]:
    """Run TabScope once; returns (result, trace, the model)."""
    llm = bot if isinstance(bot, LLM) else Scripted(bot)
    opts = ScopeOptions(**{"tokenizer": "local", **options})
    method = TabScope(opts, MethodContext(llm=llm))
    trace = Trace.in_memory()
    if budget is None and steps is not None:
        budget = StepBudget(steps, reserve=0)
    result = method.answer(question, TableSet([("t1", table)]), budget=budget, trace=trace)
    method.close()
    return result, trace, llm


def llm_events(trace: Trace) -> list[dict[str, Any]]:
    return [e for e in trace.events if e["kind"] == "llm_call"]


def fallback_stages(result: Result) -> list[str]:
    return [f["stage"] for f in result.details.get("fallbacks", [])]
