"""`Scripted`: an in-process fake LLM for tests and demos (like pydantic-ai's FunctionModel).

Replies come from a queue (texts, `Completion`s or exceptions to raise) or from a function of
the messages and parameters. Every call is recorded in `.calls` so tests can assert prompts.

Choices: each completion of a call consumes one queue item (n = 3 takes three); an exception at
the head of the queue is raised and consumed; stop sequences cut text replies as a server would;
token counts are estimated as ceil(chars / 4) plus 4 per message; with ``logprobs=True`` a text
reply gets log-probability 0.0 for each whitespace token (certainty), a `Completion` keeps its own.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tablequest.llm.base import (
    LLM,
    Completion,
    LLMError,
    Message,
    Usage,
    check_chat_args,
    estimate_prompt_tokens,
    estimate_tokens,
    normalize_stop,
)

Reply = str | Completion | Exception
ReplyFunction = Callable[[list[Message], dict[str, Any]], "Reply | Sequence[str | Completion]"]


class ScriptExhausted(LLMError):
    """A `Scripted` model was asked for more replies than were queued."""


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One recorded call: the messages and the keyword parameters."""

    messages: list[Message]
    params: dict[str, Any]

    @property
    def prompt(self) -> str:
        """Content of the last message (usually the user prompt)."""
        return self.messages[-1]["content"]


class Scripted(LLM):
    """Fake LLM answering from a script.

    Args:
        replies: Queue of replies, or ``fn(messages, params)`` returning a reply or a list of
            replies (one per completion; a single reply is repeated for n > 1).
        model: Name reported by `describe()`.
    """

    def __init__(self, replies: Sequence[Reply] | ReplyFunction = (), *, model: str = "scripted"):
        self._fn: ReplyFunction | None = replies if callable(replies) else None
        self._queue: deque[Reply] = deque() if callable(replies) else deque(replies)
        self.model = model
        self.calls: list[ScriptedCall] = []
        self._lock = threading.Lock()

    def describe(self) -> dict[str, str]:
        return {"backend": "scripted", "url": "scripted://", "model": self.model}

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Number of queued replies not yet used."""
        return len(self._queue)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        n: int = 1,
        logprobs: bool = False,
        stop: str | Sequence[str] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        msgs = check_chat_args(messages, max_tokens=max_tokens, n=n)
        params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "n": n,
            "logprobs": logprobs,
            "stop": normalize_stop(stop),
            "response_format": response_format,
        }
        with self._lock:
            self.calls.append(ScriptedCall(msgs, params))
            replies = self._take(msgs, params, n)
        prompt_tokens = estimate_prompt_tokens(msgs)
        return [
            self._complete(reply, params, prompt_tokens if i == 0 else 0)
            for i, reply in enumerate(replies)
        ]

    def _take(self, msgs: list[Message], params: dict[str, Any], n: int) -> list[str | Completion]:
        if self._fn is not None:
            result = self._fn([dict(m) for m in msgs], dict(params))
            if isinstance(result, Exception):
                raise result
            if isinstance(result, str | Completion):
                return [result] * n
            replies = list(result)
            if len(replies) < n:
                raise ScriptExhausted(f"reply function gave {len(replies)} replies for n={n}")
            return replies[:n]
        out: list[str | Completion] = []
        while len(out) < n:
            if not self._queue:
                raise ScriptExhausted(
                    f"Scripted model {self.model!r} has no reply left for call #{len(self.calls)} "
                    f"(prompt: {msgs[-1]['content'][:80]!r}); enqueue more replies"
                )
            item = self._queue.popleft()
            if isinstance(item, Exception):
                raise item
            out.append(item)
        return out

    @staticmethod
    def _complete(reply: str | Completion, params: dict[str, Any], prompt: int) -> Completion:
        if isinstance(reply, Completion):
            return replace(reply, cached=False)
        text, finish = reply, "stop"
        for stop in params["stop"] or []:
            if stop in text:
                text = text[: text.index(stop)]
        if estimate_tokens(text) > params["max_tokens"]:
            text, finish = text[: params["max_tokens"] * 4], "length"
        logprobs = [0.0] * max(1, len(text.split())) if params["logprobs"] else None
        return Completion(
            text=text,
            finish_reason=finish,
            token_logprobs=logprobs,
            usage=Usage(prompt, estimate_tokens(text)),
            latency_s=0.0,
        )
