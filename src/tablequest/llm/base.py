"""The LLM interface: messages in, completions out, and the errors every backend raises.

One abstract method (`chat`) plus `describe()`, which names the backend for cache keys and
traces, and `context_length()` (None unless the backend knows it). Backends: `OpenAICompatible`,
`LlamaCppLocal`, `Scripted`; wrappers (`CachedLLM`, `Instrumented`) implement the same
interface and delegate `describe()` and `context_length()` to the model they wrap.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from tablequest.errors import RunError

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""

ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one completion (or of one request, see `OpenAICompatible`)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """One generated reply.

    Attributes:
        text: The reply text ("" when the server sent no content).
        finish_reason: "stop", "length" (truncated by max_tokens), or what the server said.
        token_logprobs: Log-probability of each generated token, or None when unavailable.
        usage: Token counts.
        latency_s: Wall-clock seconds of the request that produced it (0 for cache hits).
        cached: True when served from the on-disk cache.
        cache_key: The cache entry that holds it (set by `CachedLLM`, None otherwise), so a
            caller that cannot use the reply can have it forgotten (`LLM.discard`). Not part
            of `to_dict` nor of equality.
    """

    text: str
    finish_reason: str = "stop"
    token_logprobs: list[float] | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    cache_key: str | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (used by the cache and by traces)."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "token_logprobs": self.token_logprobs,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "latency_s": self.latency_s,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        """Inverse of `to_dict`."""
        usage = data.get("usage") or {}
        logprobs = data.get("token_logprobs")
        return cls(
            text=str(data["text"]),
            finish_reason=str(data.get("finish_reason", "stop")),
            token_logprobs=None if logprobs is None else [float(x) for x in logprobs],
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency_s=float(data.get("latency_s", 0.0)),
            cached=bool(data.get("cached", False)),
        )


class LLMError(RunError):
    """Base class of every error raised by an LLM backend.

    Attributes:
        url: The server URL (or model path) involved, when known.
        model: The model name, when known.
    """

    def __init__(self, message: str, *, url: str | None = None, model: str | None = None):
        super().__init__(message)
        self.url = url
        self.model = model


class LLMUnavailable(LLMError):
    """The model cannot be reached: not configured, connection refused, bad key, missing extra."""


class ModelUnreachable(LLMUnavailable):
    """The model cannot serve this question at all, so retrying or asking again is useless:
    connection refused, a DNS failure, a TLS error, a rejected key (401/403), an unknown model.

    `Instrumented` ends the question at the first one: later calls of the same question are
    refused without a request, and the Result fails with this message as its reason (one line
    naming the URL and the cause).
    """

    def again(self) -> ModelUnreachable:
        """The same error, raised afresh for a later call of the question."""
        return ModelUnreachable(str(self), url=self.url, model=self.model)


class LLMTimeout(LLMError):
    """The server did not answer within the timeout (after the bounded retries)."""


class DeadlineExceeded(LLMError):
    """The question's wall-clock deadline passed before a call could finish (see `Deadline`)."""


class LLMBadResponse(LLMError):
    """The server answered with something that is not a usable chat completion."""


class LLMRequestRejected(LLMError):
    """The server refused the request itself (HTTP 4xx other than 429), so retrying is useless."""


class ModelRequestsDisallowed(LLMUnavailable):
    """A request to a non-loopback host while TABLEQUEST_ALLOW_MODEL_REQUESTS=0 (test suites)."""


def estimate_tokens(text: str) -> int:
    """Rough token count used when a backend reports none: ceil(len(text) / 4), 0 for ""."""
    return math.ceil(len(text) / 4)


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    """`estimate_tokens` over all message contents plus 4 tokens of framing per message."""
    return sum(estimate_tokens(m.get("content", "")) + 4 for m in messages)


def check_chat_args(messages: Sequence[Message], *, max_tokens: int, n: int) -> list[Message]:
    """Validate the arguments shared by every backend; return the messages as a list.

    Raises:
        ValueError: on an empty conversation, a malformed message, n < 1 or max_tokens < 1.
    """
    if isinstance(messages, dict | str) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"messages[{i}] must be a dict, got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise ValueError(f"messages[{i}] has role {role!r}; expected one of {sorted(ROLES)}")
        if not isinstance(content, str):
            raise ValueError(f"messages[{i}]['content'] must be a str, got {content!r:.60}")
        out.append({"role": role, "content": content})
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    return out


def normalize_stop(stop: str | Sequence[str] | None) -> list[str] | None:
    """Return stop sequences as a list (None when there are none)."""
    if stop is None:
        return None
    stops = [stop] if isinstance(stop, str) else [str(s) for s in stop]
    return [s for s in stops if s] or None


class LLM(ABC):
    """A chat model. Implement `chat` and `describe`; everything else builds on them."""

    @abstractmethod
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
        """Generate `n` completions of the conversation.

        Args:
            messages: The conversation, oldest first.
            temperature: Sampling temperature (0 = greedy; cached by default).
            max_tokens: Upper bound on generated tokens per completion.
            n: Number of completions wanted.
            logprobs: Ask for per-token log-probabilities (None in the result when unsupported).
            stop: Stop sequence(s).
            response_format: Passed to the server as is, e.g. ``{"type": "json_object"}``.

        Returns:
            Exactly `n` completions.

        Raises:
            LLMError: a subclass saying what went wrong and how to fix it.
        """

    @abstractmethod
    def describe(self) -> dict[str, str]:
        """Identify the backend: at least ``{"backend", "url", "model"}``. Keys the cache."""

    @property
    def name(self) -> str:
        """Short human-readable name, e.g. ``qwen3-8b @ http://localhost:8000/v1``."""
        info = self.describe()
        return f"{info.get('model', '?')} @ {info.get('url', '?')}"

    def context_length(self) -> int | None:
        """The model's context window in tokens as its server reports it; None: unknown
        (callers use their documented default). Wrappers ask the model they wrap."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections or files held by the backend (idempotent)."""

    def discard(self, reply: Completion) -> None:  # noqa: B027 - optional hook
        """The caller could not use `reply` (it did not parse): a cache under this model
        forgets it, so the same call reaches the model again instead of failing the same way
        (`ask_with_repair` calls this on every `ParseError`). Wrappers pass it on to the
        model they wrap; a backend ignores it."""

    def __enter__(self) -> LLM:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
