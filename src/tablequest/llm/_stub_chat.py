"""Chat-completion bodies for `StubServer`: whole JSON replies and server-sent-event streams.

A streamed reply is a list of `Step`s (wait, then write bytes), so the server can be slow but
steady (`Fault.slow_stream`), silent before the first token (`Fault.delay`) or in the middle
(`Fault.stall`), or send a broken event (`Fault.broken_stream`). Tokens are the reply's
whitespace-separated words, each with the whitespace before it; the fake log-probabilities
are one per word, the same in both forms.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from tablequest.llm.base import estimate_tokens


@dataclass(frozen=True, slots=True)
class Step:
    """Wait `wait` seconds, then write `data` to the client."""

    wait: float
    data: bytes


def fake_logprobs(text: str) -> list[float]:
    """Deterministic fake log-probabilities, one per whitespace token, in [-1, 0)."""
    out = []
    for token in text.split() or [text]:
        h = hashlib.sha256(token.encode()).digest()[0]
        out.append(-(h + 1) / 256)
    return out


def pieces(text: str) -> list[str]:
    """The reply cut into streamed tokens: one per whitespace-separated word (joined: text)."""
    if not text.split():
        return [text]
    found = re.findall(r"\s*\S+", text)
    found[-1] += text[len("".join(found)) :]
    return found


def apply_limits(text: str, body: dict[str, Any], finish: str) -> tuple[str, str]:
    """Cut at a stop sequence, and at ``max_tokens * 4`` characters (finish "length")."""
    stops = body.get("stop")
    for stop in [stops] if isinstance(stops, str) else stops or []:
        if stop and stop in text:
            text = text[: text.index(stop)]
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    if isinstance(max_tokens, int) and len(text) > max_tokens * 4:
        return text[: max_tokens * 4], "length"
    return text, finish


def _token_logprobs(tokens: list[str], values: list[float]) -> dict[str, Any]:
    return {
        "content": [
            {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
            for t, lp in zip(tokens, values, strict=True)
        ]
    }


def choices(
    texts: list[str], body: dict[str, Any], finish: str, logprobs: bool
) -> tuple[list[dict[str, Any]], int]:
    """Non-streamed choices and their completion tokens."""
    out = []
    tokens = 0
    for i, raw in enumerate(texts):
        text, reason = apply_limits(raw, body, finish)
        tokens += estimate_tokens(text)
        choice: dict[str, Any] = {
            "index": i,
            "message": {"role": "assistant", "content": text},
            "finish_reason": reason,
            "logprobs": None,
        }
        if logprobs:
            choice["logprobs"] = _token_logprobs(text.split() or [text], fake_logprobs(text))
        out.append(choice)
    return out, tokens


def usage(body: dict[str, Any], completion_tokens: int) -> dict[str, int]:
    messages = body.get("messages") or []
    prompt = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def envelope(
    body: dict[str, Any], counter: int, model: str, kind: str = "chat.completion"
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-stub-{counter}",
        "object": kind,
        "created": int(time.time()),
        "model": str(body.get("model") or model),
    }


def _event(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


@dataclass(frozen=True, slots=True)
class Timing:
    """When a streamed reply's tokens go out (all waits in seconds)."""

    first: float = 0.0  # silence before the first token
    between: float = 0.0  # silence before each later token
    stall_after: int | None = None  # tokens sent before a stall
    stall: float = 0.0  # length of the stall
    broken: bool = False  # a malformed event after the first token
    error: str | None = None  # an error event after the first token, ending the stream

    def total(self, n_tokens: int) -> float:
        """All the waits of a reply of `n_tokens` tokens."""
        return self.first + self.stall + self.between * max(0, n_tokens - 1)


def stream_steps(
    texts: list[str],
    body: dict[str, Any],
    head: dict[str, Any],
    *,
    finish: str,
    logprobs: bool,
    with_usage: bool,
    timing: Timing,
) -> list[Step]:
    """The events of a streamed reply, tokens of the choices interleaved."""
    cut = [apply_limits(t, body, finish) for t in texts]
    split = [pieces(text) for text, _ in cut]
    values = [fake_logprobs(text) for text, _ in cut]
    chunk = {**head, "object": "chat.completion.chunk"}
    steps: list[Step] = []
    for j in range(max((len(p) for p in split), default=0)):
        wait = timing.first if j == 0 else timing.between
        if timing.stall_after is not None and j == timing.stall_after:
            wait += timing.stall
        for i, parts in enumerate(split):
            if j >= len(parts):
                continue
            delta: dict[str, Any] = {"content": parts[j]}
            if j == 0:
                delta["role"] = "assistant"
            lp = _token_logprobs([parts[j].strip() or parts[j]], [values[i][j]])
            choice = {"index": i, "delta": delta, "finish_reason": None}
            choice["logprobs"] = lp if logprobs else None
            steps.append(Step(wait, _event({**chunk, "choices": [choice]})))
            wait = 0.0
        if timing.broken and j == 0:
            steps.append(Step(0.0, b'data: {"choices": [{"delta": \n\n'))
        if timing.error is not None and j == 0:
            error = {"error": {"message": timing.error, "type": "server_error", "code": 503}}
            return [*steps, Step(0.0, _event(error))]
    for i, (_, reason) in enumerate(cut):
        end = {"index": i, "delta": {}, "finish_reason": reason, "logprobs": None}
        steps.append(Step(0.0, _event({**chunk, "choices": [end]})))
    if with_usage:
        tokens = sum(estimate_tokens(text) for text, _ in cut)
        steps.append(Step(0.0, _event({**chunk, "choices": [], "usage": usage(body, tokens)})))
    steps.append(Step(0.0, _event("[DONE]")))
    return steps
