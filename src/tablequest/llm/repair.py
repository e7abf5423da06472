"""`ask_with_repair`: one call, one repair request on a parse error, then give up politely.

Callers pass the parser for the output they expect; on `ParseError` the conversation is
extended with the bad reply and `repair_prompt` (``{error}`` in it is replaced by the parse
error), and the parser runs once more. A second failure returns None so the caller applies its
documented fallback; LLM errors (unavailable, timeout) propagate. Every attempt spends one step
of the budget, when one is given (the repair as `repair_kind`, default the same kind); without a
step left the function returns (None, attempts). Each unusable reply is an ``error`` trace
event (stage, parse error, the reply's start).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tablequest.llm.base import LLM, Message
from tablequest.llm.parse import ParseError
from tablequest.llm.usage import StepBudget
from tablequest.trace import Trace

T = TypeVar("T")

DEFAULT_REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}\n"
    "Answer again, following the required output format exactly, with nothing else."
)


def ask_with_repair(
    llm: LLM,
    messages: Sequence[Message],
    parse: Callable[[str], T],
    *,
    repair_prompt: str = DEFAULT_REPAIR_PROMPT,
    budget: StepBudget | None = None,
    kind: str = "other",
    repair_kind: str | None = None,
    trace: Trace | None = None,
    **chat_kwargs: Any,
) -> tuple[T | None, int]:
    """Ask `llm`, parse the first completion; on `ParseError` ask once more for a repair.

    Args:
        llm: The model.
        messages: The conversation.
        parse: Turns the reply text into a value, raising `ParseError` when it cannot.
        repair_prompt: Follow-up user message; ``{error}`` is replaced by the error.
        budget: Step budget to spend one step per call from (optional).
        kind: Budget kind of these calls ("qa" may use the reserved step).
        repair_kind: Budget kind of the repair request (default: `kind`).
        trace: Receives a ``fallback`` event when both attempts fail or the budget runs out.
        **chat_kwargs: Passed to `llm.chat` (temperature, max_tokens, ...).

    Returns:
        (value or None, number of LLM calls made).
    """
    conversation = list(messages)
    attempts = 0
    error: ParseError | None = None
    for step_kind in (kind, repair_kind or kind):
        if budget is not None:
            if not budget.can_spend(step_kind):
                _fallback(trace, kind, "step budget exhausted", error, attempts)
                return None, attempts
            budget.spend(step_kind)
        attempts += 1
        text = llm.chat(conversation, **chat_kwargs)[0].text
        try:
            return parse(text), attempts
        except ParseError as exc:
            error = exc
            if trace is not None:
                trace.event("error", stage=kind, problem=str(exc), reply=text[:2000])
            conversation += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": repair_prompt.replace("{error}", str(exc))},
            ]
    _fallback(trace, kind, "output unusable after one repair request", error, attempts)
    return None, attempts


def _fallback(
    trace: Trace | None, stage: str, reason: str, error: ParseError | None, attempts: int
) -> None:
    if trace is not None:
        trace.event(
            "fallback",
            stage=stage,
            reason=reason,
            parse_error=None if error is None else error.kind,
            detail=None if error is None else str(error),
            attempts=attempts,
        )
