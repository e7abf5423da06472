"""What `OpenAICompatible` does with a failed HTTP attempt: retry it (`Retryable`, which holds
the error to raise once no attempt is left), send it again without a parameter the server
rejects (`UnsupportedParam`), or raise a typed `LLMError` at once (`status_failure`).

The rules (the module doc of `tablequest.llm.openai_compat`): HTTP 429 and 5xx, a lost
connection, a stream that reports an error and a timeout are retryable; a rejected ``n``,
``logprobs`` or ``stream`` is emulated; an unknown model, a refused key and a 404 fail fast
(`ModelUnreachable`); any other status is `LLMRequestRejected`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import openai

from tablequest.errors import RunError
from tablequest.llm import _openai_reply
from tablequest.llm._openai_reply import UNKNOWN_MODEL
from tablequest.llm.base import (
    LLMError,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    ModelUnreachable,
)
from tablequest.llm.modelserver import parse_retry_after

__all__ = [
    "Retryable",
    "UnsupportedParam",
    "lost_connection",
    "status_failure",
    "streamed_error",
    "timed_out",
]

_N_PARAM = re.compile(r"(?<![\w-])['\"`]?n['\"`]?(?![\w-])|\bnum_choices\b|\bchoices?\b", re.I)
_LOGPROBS_PARAM = re.compile(r"logprob", re.I)
_STREAM_PARAM = re.compile(r"stream", re.I)


class Retryable(RunError):
    """A failed attempt that may be retried; `error(attempts)` is what to raise if not."""

    def __init__(
        self,
        make: Callable[[int], LLMError],
        retry_after: float | None = None,
        *,
        timeout: bool = False,
    ):
        super().__init__(str(make(1)))
        self.error = make
        self.retry_after = retry_after
        self.timeout = timeout


class UnsupportedParam(RunError):
    """The server rejected `param` (``n``, ``logprobs`` or ``stream``): `why` it did."""

    def __init__(self, param: str, why: str = ""):
        super().__init__(param)
        self.param = param
        self.why = why


def timed_out(where: str, kw: Mapping[str, Any], silence: float) -> Retryable:
    """A server that sent nothing for `silence` seconds."""

    def make(attempts: int) -> LLMError:
        return LLMTimeout(
            f"{where} sent nothing for {silence:g}s (attempt {attempts}); raise the "
            "timeout (TABLEQUEST_LLM_TIMEOUT, or timeout under [llm] in tablequest.toml) "
            "or check the server",
            **kw,
        )

    return Retryable(make, timeout=True)


def streamed_error(where: str, kw: Mapping[str, Any], exc: openai.APIError) -> Retryable:
    """An error event in the middle of a stream: a failing server."""

    def make(attempts: int) -> LLMError:
        return LLMUnavailable(
            f"{where} streamed an error ({exc.message[:300]}) on every one of "
            f"{attempts} attempt(s); the server is overloaded or failing",
            **kw,
        )

    return Retryable(make)


def lost_connection(where: str, kw: Mapping[str, Any], exc: Exception) -> Retryable:
    """A connection lost after it was opened."""

    def make(attempts: int) -> LLMError:
        return LLMUnavailable(
            f"cannot connect to {where} ({attempts} attempt(s)): {exc}; is the "
            "server running and the URL right (it usually ends in /v1)?",
            **kw,
        )

    return Retryable(make)


def status_failure(
    exc: openai.APIStatusError,
    call: Mapping[str, Any],
    *,
    where: str,
    kw: Mapping[str, Any],
    model: str,
    streaming: bool,
    served: Callable[[], str],
) -> Exception:
    """What to raise for an HTTP error status (`served`: what the server serves instead, for
    an unknown model)."""
    status = exc.status_code
    detail = _openai_reply.error_detail(exc)
    if status == 429 or status >= 500:

        def make(attempts: int) -> LLMError:
            return LLMUnavailable(
                f"{where} answered HTTP {status} ({detail}) on every one of "
                f"{attempts} attempt(s); the server is overloaded or failing",
                **kw,
            )

        return Retryable(make, parse_retry_after(exc.response.headers))
    if status in (400, 422):
        if call.get("logprobs") and _LOGPROBS_PARAM.search(detail):
            return UnsupportedParam("logprobs")
        if call.get("n", 1) > 1 and _N_PARAM.search(detail):
            return UnsupportedParam("n")
        if streaming and _STREAM_PARAM.search(detail):
            return UnsupportedParam("stream", f"HTTP {status}: {detail}")
    if status in (400, 404, 422) and UNKNOWN_MODEL.search(detail):
        return ModelUnreachable(
            f"{where} does not serve the model {model!r} (HTTP {status}: "
            f"{detail[:200]}); {served()}",
            **kw,
        )
    if status in (401, 403):
        return ModelUnreachable(
            f"{where} refused the API key (HTTP {status}: {detail}); set --api-key or "
            "TABLEQUEST_LLM_KEY",
            **kw,
        )
    if status == 404:
        return ModelUnreachable(
            f"{where} answered 404 ({detail}); check the model name and that the URL ends in /v1",
            **kw,
        )
    return LLMRequestRejected(f"{where} rejected the request: HTTP {status}: {detail}", **kw)
