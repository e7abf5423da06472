"""Turning an OpenAI-compatible server's chat reply (or its error) into `Completion`s.

Replies come whole (`from_response`) or as server-sent-event chunks (`StreamAssembler`, which
joins each choice's content deltas, finish reason, log-probabilities and the usage the last
chunk carries when ``stream_options.include_usage`` is honoured).

With n > 1 in one request the request's usage is put on the first completion and the others
carry zero usage, so sums over completions equal what the server billed; a server that sends
no usage gets it estimated (characters / 4).

`error_detail` reads an SDK error's body; `UNKNOWN_MODEL` matches error texts of servers that
do not know the model asked for. The server's other endpoints (the health probe after a
timeout, `Retry-After`, why a connection failed) are `tablequest.llm.modelserver`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import openai

from tablequest.llm.base import (
    Completion,
    LLMBadResponse,
    Message,
    Usage,
    estimate_prompt_tokens,
    estimate_tokens,
)


def _logprobs(choice: Any) -> list[float] | None:
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        return None
    return [float(token.logprob) for token in content]


def _usage(usage: Any, i: int, msgs: list[Message], text: str) -> Usage:
    if usage is not None:
        if i > 0:
            return Usage()
        return Usage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
    return Usage(estimate_prompt_tokens(msgs) if i == 0 else 0, estimate_tokens(text))


def from_response(
    response: Any, msgs: list[Message], latency: float, where: str, kw: dict[str, str]
) -> list[Completion]:
    """Completions of a whole (non-streamed) chat-completion response."""
    try:
        choices = list(response.choices or [])
        usage = getattr(response, "usage", None)
        if not choices:
            raise LLMBadResponse(f"{where} returned no choices", **kw)
        out = []
        for i, choice in enumerate(choices):
            message = choice.message
            text = (message.content if message is not None else None) or ""
            out.append(
                Completion(
                    text=text,
                    finish_reason=str(choice.finish_reason or "unknown"),
                    token_logprobs=_logprobs(choice),
                    usage=_usage(usage, i, msgs, text),
                    latency_s=latency,
                )
            )
        return out
    except (AttributeError, TypeError, ValueError) as exc:
        raise LLMBadResponse(f"{where} returned a malformed completion: {exc}", **kw) from exc


@dataclass
class _Choice:
    parts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    logprobs: list[float] | None = None


@dataclass
class StreamAssembler:
    """Joins streamed chunks into completions, choice by choice (chunks may interleave)."""

    choices: dict[int, _Choice] = field(default_factory=dict)
    usage: Any = None
    chunks: int = 0

    def add(self, chunk: Any) -> None:
        """Take one ``chat.completion.chunk``; AttributeError/TypeError when malformed."""
        self.chunks += 1
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in chunk.choices or []:
            state = self.choices.setdefault(int(choice.index or 0), _Choice())
            delta = choice.delta
            content = getattr(delta, "content", None) if delta is not None else None
            if content:
                state.parts.append(str(content))
            if choice.finish_reason:
                state.finish_reason = str(choice.finish_reason)
            values = _logprobs(choice)
            if values:
                state.logprobs = (state.logprobs or []) + values

    def completions(
        self, msgs: list[Message], latency: float, where: str, kw: dict[str, str]
    ) -> list[Completion]:
        if not self.choices:
            raise LLMBadResponse(f"{where} streamed no choices", **kw)
        out = []
        for i, index in enumerate(sorted(self.choices)):
            state = self.choices[index]
            text = "".join(state.parts)
            out.append(
                Completion(
                    text=text,
                    finish_reason=state.finish_reason or "unknown",
                    token_logprobs=state.logprobs,
                    usage=_usage(self.usage, i, msgs, text),
                    latency_s=latency,
                )
            )
        return out


def error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
    return str(exc.message)[:300]


UNKNOWN_MODEL = re.compile(
    r"model\b.{0,80}\b(not found|does not exist|doesn't exist|not exist|unknown|"
    r"not available|no such)|unknown model|model_not_found",
    re.I,
)
