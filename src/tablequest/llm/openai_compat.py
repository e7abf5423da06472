"""Backend for any OpenAI-compatible chat server (vLLM, SGLang, Ollama, llama.cpp, OpenAI).

Built on the official `openai` SDK (sync client) with the SDK's own retries switched off; this
module does its own bounded retries so that every failure ends as one typed `LLMError`.

Choices:
- Retried: HTTP 429, 5xx, connection errors and timeouts; up to `max_retries` extra attempts,
  exponential backoff with full jitter (``uniform(0, min(backoff_max, backoff_base * 2**i))``);
  a Retry-After (or retry-after-ms) header replaces the jittered delay, capped at
  `retry_after_max` seconds. Not retried: other 4xx and malformed bodies.
- `n > 1` and `logprobs` are passed through. When the server rejects them (HTTP 400 naming the
  parameter) or returns fewer choices than asked, the client emulates them (the missing
  completions as concurrent single requests, at most `max_concurrency` in flight; logprobs
  None) and remembers that for the rest of its life.
- With n > 1 in one request the request's usage is put on the first completion and the others
  carry zero usage, so sums over completions equal what the server billed.
"""

from __future__ import annotations

import email.utils
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import openai

from tablequest.llm.base import (
    LLM,
    Completion,
    LLMBadResponse,
    LLMError,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    Message,
    Usage,
    check_chat_args,
    estimate_prompt_tokens,
    estimate_tokens,
    normalize_stop,
)
from tablequest.llm.guard import check_model_request

_N_PARAM = re.compile(r"(?<![\w-])['\"`]?n['\"`]?(?![\w-])|\bnum_choices\b|\bchoices?\b", re.I)
_LOGPROBS_PARAM = re.compile(r"logprob", re.I)
NO_KEY = "sk-no-key"  # the SDK insists on a key; local servers ignore it


class _Retryable(Exception):
    def __init__(self, error: LLMError, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class _Unsupported(Exception):
    def __init__(self, param: str):
        super().__init__(param)
        self.param = param


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


class OpenAICompatible(LLM):
    """Chat completions from an OpenAI-compatible server.

    Args:
        base_url: Server URL including the API prefix, e.g. ``http://localhost:8000/v1``.
        model: Model name as the server knows it.
        api_key: Bearer key; None for local servers that need none.
        timeout: Seconds per HTTP attempt.
        max_retries: Extra attempts after a retryable failure (0 = try once).
        max_concurrency: Requests in flight at once from this client (threads may share it).
        backoff_base: First backoff ceiling in seconds; doubles per attempt.
        backoff_max: Largest backoff ceiling in seconds.
        retry_after_max: Cap on a server's Retry-After, in seconds.
        sleep: Sleep function (tests may record the waits).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_concurrency: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        retry_after_max: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url or not model:
            raise LLMUnavailable("OpenAICompatible needs both a base URL and a model name")
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0:
            raise ValueError("need max_retries >= 0, max_concurrency >= 1 and timeout > 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self._sleep = sleep
        self._semaphore = threading.BoundedSemaphore(max_concurrency)
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or NO_KEY, timeout=timeout, max_retries=0
        )
        self.supports_n = True
        self.supports_logprobs = True
        self.http_requests = 0
        self._count_lock = threading.Lock()

    def describe(self) -> dict[str, str]:
        return {"backend": "openai", "url": self.base_url, "model": self.model}

    def close(self) -> None:
        self._client.close()

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
        check_model_request(self.base_url, model=self.model)
        params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        stops = normalize_stop(stop)
        if stops:
            params["stop"] = stops
        if response_format is not None:
            params["response_format"] = response_format
        out: list[Completion] = []
        if n > 1 and self.supports_n:
            out = self._request(msgs, params, n, logprobs)
            if len(out) < n:
                self.supports_n = False
        if len(out) < n:
            out.extend(self._singles(msgs, params, n - len(out), logprobs))
        return out[:n]

    def _singles(
        self, msgs: list[Message], params: dict[str, Any], count: int, logprobs: bool
    ) -> list[Completion]:
        """`count` single-completion requests, concurrent (bounded by `max_concurrency`)."""
        if count == 1:
            return self._request(msgs, params, 1, logprobs)[:1]
        workers = min(count, self.max_concurrency)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._request, msgs, params, 1, logprobs) for _ in range(count)]
            return [f.result()[0] for f in futures]

    # -- one logical request (with emulation fallbacks and retries) --------------------------

    def _request(
        self, msgs: list[Message], params: dict[str, Any], n: int, logprobs: bool
    ) -> list[Completion]:
        while True:
            call = dict(params)
            if n > 1:
                call["n"] = n
            if logprobs and self.supports_logprobs:
                call["logprobs"] = True
            try:
                return self._with_retries(msgs, call)
            except _Unsupported as unsupported:
                if unsupported.param == "logprobs":
                    self.supports_logprobs = False
                    continue
                self.supports_n = False
                return self._singles(msgs, params, n, logprobs)

    def _with_retries(self, msgs: list[Message], call: dict[str, Any]) -> list[Completion]:
        attempt = 0
        while True:
            try:
                return self._attempt(msgs, call)
            except _Retryable as failure:
                if attempt >= self.max_retries:
                    raise failure.error from failure.__cause__
                if failure.retry_after is not None:
                    delay = min(failure.retry_after, self.retry_after_max)
                else:
                    ceiling = min(self.backoff_max, self.backoff_base * 2**attempt)
                    delay = random.uniform(0, ceiling)
                attempt += 1
                self._sleep(delay)

    def _attempt(self, msgs: list[Message], call: dict[str, Any]) -> list[Completion]:
        where = f"{self.base_url} (model {self.model!r})"
        kw = {"url": self.base_url, "model": self.model}
        with self._semaphore:
            with self._count_lock:
                self.http_requests += 1
            started = time.perf_counter()
            try:
                response = self._client.chat.completions.create(
                    model=self.model,
                    messages=msgs,  # type: ignore[arg-type]
                    **call,
                )
            except openai.APITimeoutError as exc:
                error: LLMError = LLMTimeout(
                    f"no answer from {where} within {self.timeout:g}s after "
                    f"{self.max_retries + 1} attempt(s); raise the timeout "
                    "(TABLEQUEST_LLM_TIMEOUT, or timeout under [llm] in tablequest.toml) "
                    "or check the server",
                    **kw,
                )
                raise _Retryable(error) from exc
            except openai.APIConnectionError as exc:
                error = LLMUnavailable(
                    f"cannot connect to {where}: {exc}; is the server running and the URL "
                    "right (it usually ends in /v1)?",
                    **kw,
                )
                raise _Retryable(error) from exc
            except openai.APIStatusError as exc:
                self._status_error(exc, call, where)
            except ValueError as exc:  # body is not JSON
                raise LLMBadResponse(
                    f"{where} sent a body that is not valid JSON ({exc}); is the URL an "
                    "OpenAI-compatible /v1 endpoint?",
                    **kw,
                ) from exc
            latency = time.perf_counter() - started
        return self._completions(response, msgs, latency, where)

    def _status_error(
        self, exc: openai.APIStatusError, call: dict[str, Any], where: str
    ) -> NoReturn:
        status = exc.status_code
        detail = _error_detail(exc)
        kw = {"url": self.base_url, "model": self.model}
        if status == 429 or status >= 500:
            error = LLMUnavailable(
                f"{where} answered HTTP {status} ({detail}) on every one of "
                f"{self.max_retries + 1} attempt(s); the server is overloaded or failing",
                **kw,
            )
            raise _Retryable(error, parse_retry_after(exc.response.headers)) from exc
        if status in (400, 422):
            if call.get("logprobs") and _LOGPROBS_PARAM.search(detail):
                raise _Unsupported("logprobs") from exc
            if call.get("n", 1) > 1 and _N_PARAM.search(detail):
                raise _Unsupported("n") from exc
        if status in (401, 403):
            raise LLMUnavailable(
                f"{where} refused the API key (HTTP {status}: {detail}); set --api-key or "
                "TABLEQUEST_LLM_KEY",
                **kw,
            ) from exc
        if status == 404:
            raise LLMUnavailable(
                f"{where} answered 404 ({detail}); check the model name and that the URL ends "
                "in /v1",
                **kw,
            ) from exc
        raise LLMRequestRejected(
            f"{where} rejected the request: HTTP {status}: {detail}", **kw
        ) from exc

    def _completions(
        self, response: Any, msgs: list[Message], latency: float, where: str
    ) -> list[Completion]:
        kw = {"url": self.base_url, "model": self.model}
        try:
            choices = list(response.choices or [])
            usage = getattr(response, "usage", None)
            if not choices:
                raise LLMBadResponse(f"{where} returned no choices", **kw)
            out = []
            for i, choice in enumerate(choices):
                message = choice.message
                text = (message.content if message is not None else None) or ""
                if usage is not None:
                    counted = (
                        Usage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
                        if i == 0
                        else Usage()
                    )
                else:
                    prompt = estimate_prompt_tokens(msgs) if i == 0 else 0
                    counted = Usage(prompt, estimate_tokens(text))
                out.append(
                    Completion(
                        text=text,
                        finish_reason=str(choice.finish_reason or "unknown"),
                        token_logprobs=_logprobs(choice),
                        usage=counted,
                        latency_s=latency,
                    )
                )
            return out
        except (AttributeError, TypeError, ValueError) as exc:
            raise LLMBadResponse(f"{where} returned a malformed completion: {exc}", **kw) from exc


def _logprobs(choice: Any) -> list[float] | None:
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        return None
    return [float(token.logprob) for token in content]


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
    return str(exc.message)[:300]
