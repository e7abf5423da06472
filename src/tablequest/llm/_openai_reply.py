"""Turning an OpenAI-compatible server's reply into `Completion`s, and the health probe.

Replies come whole (`from_response`) or as server-sent-event chunks (`StreamAssembler`, which
joins each choice's content deltas, finish reason, log-probabilities and the usage the last
chunk carries when ``stream_options.include_usage`` is honoured).

With n > 1 in one request the request's usage is put on the first completion and the others
carry zero usage, so sums over completions equal what the server billed; a server that sends
no usage gets it estimated (characters / 4).

`parse_retry_after` and `error_detail` read an HTTP error's headers and body.

`connect_failure` tells a connection that could not be opened (refused, DNS, TLS: the caller
fails fast) from one lost after it was opened (retried); `UNKNOWN_MODEL` matches error texts
of servers that do not know the model asked for.

`probe` asks a server that just timed out whether a retry could be served: llama.cpp's
``GET /health?fail_on_no_slot=1`` answers 503 while every slot is busy (with the abandoned
request, typically); servers without that route (404) are asked ``GET /v1/models``; no answer
within the probe timeout means a server that is stuck or swamped.
"""

from __future__ import annotations

import email.utils
import re
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import openai

from tablequest.llm.base import (
    Completion,
    LLMBadResponse,
    Message,
    Usage,
    estimate_prompt_tokens,
    estimate_tokens,
)

ProbeResult = Literal["ok", "busy", "no answer"]


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


def probe(base_url: str, api_key: str | None, timeout: float) -> ProbeResult:
    """Whether the server could take a request now (module docstring); at most two GETs."""
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            health = client.get(f"{root}/health", params={"fail_on_no_slot": "1"})
            if health.status_code == 200:
                return "ok"
            if health.status_code == 503:
                return "busy"
            models = client.get(f"{base_url}/models")
            return "ok" if models.status_code < 300 else "no answer"
    except httpx.HTTPError:
        return "no answer"


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


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


def connect_failure(exc: BaseException) -> str | None:
    """Why a connection could not be opened (refused, DNS, TLS), or None when it was opened
    and then failed (a reset or a closed stream: those may be retried)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    # by name: the SDK's HTTP stack may be httpx or a renamed copy of it (httpx2, httpcore2)
    if not any(type(e).__name__ == "ConnectError" for e in chain):
        return None
    for e in chain:
        if isinstance(e, ConnectionRefusedError) or "connection refused" in str(e).lower():
            return "connection refused (is the server running, and is the port right?)"
        if isinstance(e, socket.gaierror) or "name or service not known" in str(e).lower():
            return "DNS lookup failed for its host name (is the host name right?)"
        if isinstance(e, ssl.SSLError) or "certificate" in str(e).lower():
            return f"TLS error ({str(e)[:160]}); check https:// vs http:// and the certificate"
    detail = str(chain[-1]) or type(chain[-1]).__name__
    return f"connection failed ({detail[:160]})"
