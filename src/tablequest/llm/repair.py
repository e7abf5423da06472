"""`ask_with_repair`: one call, one repair request on a parse error, then give up politely.

Callers pass the parser for the output they expect; on `ParseError` the conversation is
extended with the bad reply and `repair_prompt` (``{error}`` in it is replaced by the parse
error), and the parser runs once more. Each reply that does not parse is reported with
`LLM.discard`, so a cache under the model forgets it (`tablequest.llm.cache`). A second
failure returns None so the caller applies its documented fallback; LLM errors
(unavailable, timeout) propagate. Every attempt spends one step of the budget, when one is
given (the repair as `repair_kind`, default the same kind); without a step left the
function returns (None, attempts). Each unusable reply is an ``error`` trace
event (stage, parse error, the reply's start).

`ask_json` is the pattern every method's structured call follows: `ask_with_repair`, with an
`LLMError` (unavailable, timeout, budget) taken as a fallback instead of raised — a
``fallback`` trace event (stage = the call's kind, reason "Type: message") unless the caller
records it itself (`on_error`) — and an `Asked` result: the value (None: apply the
documented fallback), the calls made, and the error when one stopped it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tablequest.llm.base import LLM, LLMError, Message
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
    calls = [0]
    value = _ask(
        llm, messages, parse, repair_prompt, budget, kind, repair_kind, trace, calls, chat_kwargs
    )
    return value, calls[0]


@dataclass(frozen=True)
class Asked(Generic[T]):
    """What `ask_json` got back.

    Attributes:
        value: The parsed value; None when the replies were unusable, no step was left, or
            an LLM error stopped the call (the caller applies its fallback).
        attempts: LLM calls made (the one an error stopped included).
        error: The `LLMError` that stopped the call, if one did.
    """

    value: T | None
    attempts: int
    error: LLMError | None = None

    @property
    def reason(self) -> str | None:
        """``"Type: message"`` of the error, None when there was none."""
        return None if self.error is None else f"{type(self.error).__name__}: {self.error}"


def ask_json(
    llm: LLM,
    messages: Sequence[Message],
    parse: Callable[[str], T],
    *,
    kind: str,
    trace: Trace | None,
    repair_prompt: str = DEFAULT_REPAIR_PROMPT,
    budget: StepBudget | None = None,
    repair_kind: str | None = None,
    on_error: Callable[[str], None] | None = None,
    fallback_fields: Mapping[str, Any] | None = None,
    **chat_kwargs: Any,
) -> Asked[T]:
    """A structured call: `ask_with_repair`, with an `LLMError` taken as a fallback.

    On an LLM error, `on_error(reason)` is called when given (the caller records the
    fallback its own way); otherwise `trace` receives ``fallback`` (stage `kind`, the
    reason, and `fallback_fields`). Arguments as for `ask_with_repair`.
    """
    calls = [0]
    try:
        value = _ask(
            llm, messages, parse, repair_prompt, budget, kind, repair_kind, trace, calls,
            chat_kwargs,
        )  # fmt: skip
    except LLMError as exc:
        asked: Asked[T] = Asked(None, calls[0], exc)
        reason = asked.reason or ""
        if on_error is not None:
            on_error(reason)
        elif trace is not None:
            trace.event("fallback", stage=kind, reason=reason, **dict(fallback_fields or {}))
        return asked
    return Asked(value, calls[0])


def _ask(
    llm: LLM,
    messages: Sequence[Message],
    parse: Callable[[str], T],
    repair_prompt: str,
    budget: StepBudget | None,
    kind: str,
    repair_kind: str | None,
    trace: Trace | None,
    calls: list[int],
    chat_kwargs: Mapping[str, Any],
) -> T | None:
    """The call and its one repair; `calls[0]` counts the calls made, so that a caller
    that catches an `LLMError` still knows how many there were."""
    conversation = list(messages)
    error: ParseError | None = None
    for step_kind in (kind, repair_kind or kind):
        if budget is not None:
            if not budget.can_spend(step_kind):
                _fallback(trace, kind, "step budget exhausted", error, calls[0])
                return None
            budget.spend(step_kind)
        calls[0] += 1
        reply = llm.chat(conversation, **chat_kwargs)[0]
        text = reply.text
        try:
            return parse(text)
        except ParseError as exc:
            error = exc
            llm.discard(reply)  # a cached reply that does not parse is not served again
            if trace is not None:
                trace.event("error", stage=kind, problem=str(exc), reply=text[:2000])
            conversation += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": repair_prompt.replace("{error}", str(exc))},
            ]
    _fallback(trace, kind, "output unusable after one repair request", error, calls[0])
    return None


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
