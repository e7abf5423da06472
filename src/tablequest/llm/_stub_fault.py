"""`Fault`: one misbehaviour `StubServer` injects in place of a reply (llm/stub.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FaultKind = Literal[
    "delay",
    "status",
    "malformed_json",
    "truncated",
    "empty_choices",
    "slow_stream",
    "stall",
    "broken_stream",
    "stream_error",
]


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected misbehaviour, used in place of a reply. Build with the static methods."""

    kind: FaultKind
    seconds: float = 0.0
    code: int = 200
    retry_after: float | str | None = None
    text: str = ""
    after: int = 0
    message: str = ""

    @staticmethod
    def delay(seconds: float, then: str = "") -> Fault:
        """Say nothing for `seconds` (e.g. beyond the client timeout), then reply `then`."""
        return Fault("delay", seconds=seconds, text=then)

    @staticmethod
    def slow_stream(text: str, interval: float) -> Fault:
        """Reply `text` one token every `interval` seconds: slow, but never silent for long.

        A non-streaming request gets the whole reply after all the intervals together.
        """
        return Fault("slow_stream", seconds=interval, text=text)

    @staticmethod
    def stall(text: str, seconds: float, *, after: int = 1) -> Fault:
        """Stream `after` tokens of `text`, fall silent for `seconds`, then send the rest
        (a non-streaming request: silent for `seconds`, then the reply)."""
        return Fault("stall", seconds=seconds, text=text, after=after)

    @staticmethod
    def broken_stream(text: str) -> Fault:
        """Stream the first token of `text`, then an event that is not JSON (a non-streaming
        request gets `text` normally)."""
        return Fault("broken_stream", text=text)

    @staticmethod
    def stream_error(message: str, text: str = "partial reply") -> Fault:
        """Stream the first token of `text`, then an error event (a server failing mid-way;
        a non-streaming request gets HTTP 503)."""
        return Fault("stream_error", code=503, text=text, message=message)

    @staticmethod
    def status(code: int, *, retry_after: float | str | None = None, message: str = "") -> Fault:
        """Answer with HTTP `code` and an OpenAI-style error body (optional Retry-After)."""
        return Fault("status", code=code, retry_after=retry_after, text=message)

    @staticmethod
    def malformed_json(body: str = '{"id": "x", "choices": [{"message": ') -> Fault:
        """Answer 200 with a body that is not valid JSON."""
        return Fault("malformed_json", text=body)

    @staticmethod
    def truncated(text: str) -> Fault:
        """Answer `text` with finish_reason "length", as when max_tokens cut the reply."""
        return Fault("truncated", text=text)

    @staticmethod
    def empty_choices() -> Fault:
        """Answer 200 with ``"choices": []``."""
        return Fault("empty_choices")
