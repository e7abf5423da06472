"""Per-question state of TabScope: the table as the model sees it, budgeted calls, fit checks.

The table is shown to the model linearized with its original row ids (``[HEADER] a | b`` then
``[ROW 7] x | y``; `tablequest.table.serialize`), the title going to the prompts' caption slot;
a sub-table keeps the original ids and header paths (`Table.sub_table`).

Fit check (Deliver 8, ours): a prompt is sent only if its tokens plus at least `MIN_NEW_TOKENS`
new tokens fit the model's context; the table part is counted by the token counter, the rest of
the prompt estimated (ceil(chars / 4), 8 tokens of framing), and the total raised by 10% when
the counter is not the server's own tokenizer. When the requested max_tokens does not fit but
`MIN_NEW_TOKENS` do, max_tokens is lowered (recorded); otherwise the prompt is not sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tablequest.llm import BudgetExhausted, Completion, LLMError, Message
from tablequest.methods.base import Task
from tablequest.methods.query import Query
from tablequest.methods.scope.options import ScopeOptions
from tablequest.methods.scope.tokens import TokenCounter, safe_count
from tablequest.table import Table, render

__all__ = ["MIN_NEW_TOKENS", "Fit", "ScopeRun", "caption", "linearize"]

MIN_NEW_TOKENS = 64
LOCAL_MARGIN = 1.10


def linearize(table: Table) -> str:
    """``[HEADER] …`` and ``[ROW id] …`` lines (the title goes to the caption slot)."""
    rendered = render(table, "linearized")
    head = [h for h in rendered.head if not h.startswith("[TITLE]")]
    return "\n".join([*head, *rendered.rows])


def caption(table: Table) -> str:
    """The table's title, or "" (the prompts' optional caption)."""
    return " ".join((table.title or "").split())


@dataclass(frozen=True, slots=True)
class Fit:
    """Whether a prompt may be sent, its token count and the max_tokens it may ask for."""

    ok: bool
    prompt_tokens: int
    max_tokens: int
    context: int


@dataclass
class ScopeRun:
    """Everything one question needs; stages read and record through it."""

    question: str
    task: Task
    table_id: str
    table: Table
    options: ScopeOptions
    query: Query
    counter: TokenCounter
    context: int
    table_text: str
    table_tokens: int
    tokenizer: str
    fallbacks: list[dict[str, Any]] = field(default_factory=list)

    # -- recording -----------------------------------------------------------------------
    def decision(self, stage: str, **payload: Any) -> None:
        self.query.trace.event("decision", stage=stage, **payload)

    def fallback(self, stage: str, reason: str, **payload: Any) -> None:
        """Record a documented fallback in the trace and in the result's details."""
        self.fallbacks.append({"stage": stage, "reason": reason})
        self.query.trace.event("fallback", stage=stage, reason=reason, **payload)

    def error(self, stage: str, problem: str, **payload: Any) -> None:
        self.query.trace.event("error", stage=stage, problem=problem, **payload)

    # -- token accounting ----------------------------------------------------------------
    def count(self, text: str) -> int:
        """Tokens of `text` by this question's counter (server, else local)."""
        tokens, _ = safe_count(self.counter, text)
        return tokens

    def fit(self, messages: list[Message], table_tokens: int, table_chars: int, want: int) -> Fit:
        """Whether `messages` (holding tables of `table_tokens` tokens) fit the context."""
        chars = sum(len(m["content"]) for m in messages) - table_chars
        total = table_tokens + math.ceil(max(0, chars) / 4) + 8 * len(messages)
        if self.tokenizer != "server:/tokenize":
            total = math.ceil(total * LOCAL_MARGIN)
        room = self.context - total
        if room < MIN_NEW_TOKENS:
            return Fit(False, total, 0, self.context)
        return Fit(True, total, min(want, room), self.context)

    # -- calls ---------------------------------------------------------------------------
    def discard(self, reply: Completion) -> None:
        """`reply` could not be parsed: a cache under the model forgets it (`LLM.discard`),
        so the same call reaches the model next time (issue 39)."""
        if self.query.llm is not None:
            self.query.llm.discard(reply)

    def chat(
        self,
        kind: str,
        messages: list[Message],
        *,
        temperature: float,
        max_tokens: int,
        n: int = 1,
        logprobs: bool = False,
    ) -> list[Completion] | None:
        """One budgeted call of `kind`; None (recorded) when refused or failed."""
        budget, llm = self.query.budget, self.query.llm
        try:
            if llm is None:
                raise BudgetExhausted(kind, budget.used, budget.max_steps, budget.reserve)
            budget.spend(kind)  # atomic check-and-take: stages may call from threads
        except BudgetExhausted:
            self.fallback(kind, "step budget exhausted", steps=budget.calls)
            return None
        try:
            return llm.chat(
                messages, temperature=temperature, max_tokens=max_tokens, n=n, logprobs=logprobs
            )
        except LLMError as exc:
            self.fallback(kind, f"{type(exc).__name__}: {exc}")
            return None
