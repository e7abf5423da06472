"""Backend for any OpenAI-compatible chat server (vLLM, SGLang, Ollama, llama.cpp, OpenAI).

Built on the official `openai` SDK (sync client) with the SDK's own retries switched off; this
module does its own bounded retries so that every failure ends as one typed `LLMError`.

Choices:
- **Streaming.** Completions are streamed (``stream=True``, usage asked for with
  ``stream_options``), so `timeout` bounds *silence*: the wait for the first token and each
  gap between tokens. A slow server that keeps producing tokens is not cut off; a silent one
  is. Streaming also lets servers notice a client that gave up (llama.cpp and vLLM stop
  generating when the connection closes). A server that rejects streaming (HTTP 400/422
  naming it) or sends a stream that cannot be parsed is asked again without streaming; one
  that answers a plain JSON body is read as such. Either way the client remembers it and
  the fallback is reported to the call scope (trace kind ``fallback``).
- **Fail fast.** A connection that cannot be opened (refused, DNS failure, TLS error), a
  rejected key (401/403) and an unknown model (404, or 400/422 saying so) raise
  `ModelUnreachable` at once, never retried: one line naming the URL and the cause.
- **Retries.** HTTP 429, 5xx and connections lost after they were opened are retried up
  to `max_retries` extra attempts, exponential backoff with full jitter
  (``uniform(0, min(backoff_max, backoff_base * 2**i))``); a Retry-After (or
  retry-after-ms) header replaces the jittered delay, capped at `retry_after_max` seconds.
  Not retried: other 4xx and malformed bodies.
- **Timeouts are not re-sent blindly.** A server that timed out may still be busy with the
  abandoned request (a single-slot llama.cpp server on 2 cores was sent the same request 4
  times). After a timeout the client waits the backoff delay, then probes the server
  (`ModelServer.probe`: llama.cpp's ``/health?fail_on_no_slot=1``, else ``/v1/models``,
  within `probe_timeout`); only an "ok" earns a retry, and only one per call: a second
  timeout, a busy or silent server end the call with `LLMTimeout`.
- **Deadline.** The `Deadline` of the current call scope (`tablequest.llm.deadline`, set by
  `Instrumented`) bounds waiting for a concurrency slot, each attempt's timeout, each
  backoff and each probe; when it leaves no time, `DeadlineExceeded` is raised. It is also
  checked between streamed tokens, so a stream that keeps going ends at the deadline; a gap
  of silence that starts just before it may overrun it by at most the attempt's timeout.
- **Accounting.** Every HTTP request (attempts and retries alike, not probes) is counted in
  `http_requests` and reported to the call scope; every retry is reported with its reason,
  delay and probe result (trace kind ``llm_retry``).
- `n > 1` and `logprobs` are passed through. When the server rejects them (HTTP 400 naming the
  parameter) or returns fewer choices than asked, the client emulates them (the missing
  completions as concurrent single requests, at most `max_concurrency` in flight; logprobs
  None) and remembers that for the rest of its life.
- With n > 1 in one request the request's usage is put on the first completion and the others
  carry zero usage, so sums over completions equal what the server billed.
- **One server object.** `server` (a `ModelServer`) holds the URL, the key and the request
  guard; the SDK's client is built from it, and the probe and `context_length` go through it.
"""

from __future__ import annotations

import contextvars
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import openai
from openai.types.chat import ChatCompletion

from tablequest.llm import _openai_reply
from tablequest.llm._openai_errors import (
    Retryable,
    UnsupportedParam,
    lost_connection,
    status_failure,
    streamed_error,
    timed_out,
)
from tablequest.llm.base import (
    LLM,
    Completion,
    DeadlineExceeded,
    LLMBadResponse,
    LLMError,
    LLMTimeout,
    LLMUnavailable,
    Message,
    ModelUnreachable,
    check_chat_args,
    normalize_stop,
)
from tablequest.llm.deadline import CallScope, Deadline, current_scope
from tablequest.llm.modelserver import ModelServer, connect_failure

__all__ = ["TIMEOUT_RETRIES", "OpenAICompatible"]

NO_KEY = "sk-no-key"  # the SDK insists on a key; local servers ignore it
TIMEOUT_RETRIES = 1  # re-sends after a timeout, each only when the probe says "ok"


class OpenAICompatible(LLM):
    """Chat completions from an OpenAI-compatible server.

    Args:
        base_url: Server URL including the API prefix, e.g. ``http://localhost:8000/v1``.
        model: Model name as the server knows it.
        api_key: Bearer key; None for local servers that need none.
        timeout: Seconds of silence allowed per attempt (before the first token, between
            tokens; for a non-streaming server, before the whole reply).
        max_retries: Extra attempts after a retryable failure (0 = try once); at most
            `TIMEOUT_RETRIES` of them after timeouts.
        max_concurrency: Requests in flight at once from this client (threads may share it).
        backoff_base: First backoff ceiling in seconds; doubles per attempt.
        backoff_max: Largest backoff ceiling in seconds.
        retry_after_max: Cap on a server's Retry-After, in seconds.
        probe_timeout: Seconds a health probe after a timeout may take (each of two GETs).
        stream: Stream completions (False: whole replies, as before streaming).
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
        probe_timeout: float = 5.0,
        stream: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url or not model:
            raise LLMUnavailable("OpenAICompatible needs both a base URL and a model name")
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0:
            raise ValueError("need max_retries >= 0, max_concurrency >= 1 and timeout > 0")
        self.server = ModelServer(base_url, api_key=api_key, model=model, timeout=timeout)
        self.base_url = self.server.base_url
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.probe_timeout = probe_timeout
        self._sleep = sleep
        self._semaphore = threading.BoundedSemaphore(max_concurrency)
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=self.server.api_key or NO_KEY,
            timeout=timeout,
            max_retries=0,
        )
        self.supports_n = True
        self.supports_logprobs = True
        self.supports_streaming = stream
        self.http_requests = 0
        self._count_lock = threading.Lock()
        self._where = f"{self.base_url} (model {self.model!r})"
        self._kw = {"url": self.base_url, "model": self.model}

    def describe(self) -> dict[str, str]:
        return {"backend": "openai", "url": self.base_url, "model": self.model}

    def _served(self) -> str:
        """What to pass as --model instead: the models the server lists (best effort)."""
        try:
            ids = self.server.model_ids(timeout=5)
        except Exception:  # the hint must never hide the error it explains
            return "check --model"
        if not ids:
            return "check --model (the server lists no model)"
        return "it serves: " + ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")

    def close(self) -> None:
        self._client.close()
        self.server.close()

    def context_length(self) -> int | None:
        """The context the server reports for the model (`ModelServer.context_length`)."""
        return self.server.context_length()

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
        self.server.check()
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
            # each request carries the caller's call scope (deadline, retry observer)
            futures = [
                pool.submit(contextvars.copy_context().run, self._request, msgs, params, 1,
                            logprobs)
                for _ in range(count)
            ]  # fmt: skip
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
            except UnsupportedParam as unsupported:
                if unsupported.param == "logprobs":
                    self.supports_logprobs = False
                    continue
                if unsupported.param == "stream":
                    continue  # supports_streaming is now False: the same request, whole
                self.supports_n = False
                return self._singles(msgs, params, n, logprobs)

    def _with_retries(self, msgs: list[Message], call: dict[str, Any]) -> list[Completion]:
        scope = current_scope()
        attempt = timeouts = 0
        last: LLMError | None = None
        retry: dict[str, Any] | None = None  # reported when the retry is actually sent
        while True:
            attempt += 1
            try:
                return self._attempt(msgs, call, scope, retry)
            except DeadlineExceeded as exc:
                if last is None:
                    raise
                raise DeadlineExceeded(f"{exc} (last failure: {last})", **self._kw) from exc
            except Retryable as failure:
                last = failure.error(attempt)
                timeouts += failure.timeout
                delay = self._retry_delay(failure, attempt, timeouts, scope.deadline)
                self._sleep(delay)
                retry = {
                    "attempt": attempt,
                    "reason": type(last).__name__,
                    "message": str(last)[:300],
                    "delay_s": round(delay, 3),
                    "probe": self._probe(failure, attempt, scope.deadline),
                }

    def _retry_delay(
        self, failure: Retryable, attempt: int, timeouts: int, deadline: Deadline | None
    ) -> float:
        """The wait before the next attempt; raises the error when there is none."""
        if attempt > self.max_retries:
            raise failure.error(attempt) from failure.__cause__
        if timeouts > TIMEOUT_RETRIES:
            raise self._timed_out_again(failure, attempt) from failure.__cause__
        if failure.retry_after is not None:
            delay = min(failure.retry_after, self.retry_after_max)
        else:
            delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))
        left = None if deadline is None else deadline.remaining()
        if deadline is not None and left is not None and left <= delay:
            raise deadline.exceeded(
                f"while waiting to retry {self._where} ({failure.error(attempt)})", **self._kw
            ) from failure.__cause__
        return delay

    def _timed_out_again(self, failure: Retryable, attempt: int) -> LLMError:
        return LLMTimeout(
            f"{failure.error(attempt)}; it timed out again after a retry, so it is not sent "
            "a third time",
            **self._kw,
        )

    def _probe(self, failure: Retryable, attempt: int, deadline: Deadline | None) -> str | None:
        """After a timeout: raise unless the server says it could take the request now."""
        if not failure.timeout:
            return None
        seconds = self.probe_timeout if deadline is None else deadline.bound(self.probe_timeout)
        result = self.server.probe(max(seconds, 0.001))
        if result != "ok":
            why = "is busy (no free slot)" if result == "busy" else "did not answer a probe"
            raise LLMTimeout(
                f"{failure.error(attempt)}; the server {why}, probably still working on the "
                "abandoned request, so it is not sent again",
                **self._kw,
            ) from failure.__cause__
        return result

    # -- one HTTP attempt --------------------------------------------------------------------

    def _attempt(
        self,
        msgs: list[Message],
        call: dict[str, Any],
        scope: CallScope,
        retry: dict[str, Any] | None = None,
    ) -> list[Completion]:
        deadline = scope.deadline
        self._take_slot(deadline)
        if retry is not None:
            scope.retrying(retry)
        try:
            silence = self.timeout if deadline is None else deadline.bound(self.timeout)
            with self._count_lock:
                self.http_requests += 1
            scope.request_sent()
            started = time.perf_counter()
            try:
                if self.supports_streaming:
                    return self._streamed(msgs, call, silence, started, scope)
                response = self._create(msgs, call, silence, stream=False)
                latency = time.perf_counter() - started
                return _openai_reply.from_response(response, msgs, latency, self._where, self._kw)
            except openai.APITimeoutError as exc:
                if deadline is not None and (silence < self.timeout or deadline.expired):
                    raise deadline.exceeded(f"waiting for {self._where}", **self._kw) from exc
                raise timed_out(self._where, self._kw, silence) from exc
            except openai.APIConnectionError as exc:
                cause = connect_failure(exc)
                if cause is not None:  # nothing listens, no such host, bad TLS: no retry
                    raise ModelUnreachable(
                        f"cannot reach the model server {self.base_url}: {cause}", **self._kw
                    ) from exc
                raise lost_connection(self._where, self._kw, exc) from exc
            except openai.APIStatusError as exc:
                self._status_error(exc, call)
        finally:
            self._semaphore.release()

    def _take_slot(self, deadline: Deadline | None) -> None:
        """Wait for one of `max_concurrency` slots, no longer than the deadline allows."""
        if deadline is None:
            self._semaphore.acquire()
            return
        deadline.check(f"before a request to {self._where}", **self._kw)
        if not self._semaphore.acquire(timeout=deadline.remaining()):
            raise deadline.exceeded(f"waiting for a free connection to {self._where}", **self._kw)

    def _create(
        self, msgs: list[Message], call: dict[str, Any], silence: float, *, stream: bool
    ) -> Any:
        extra: dict[str, Any] = {}
        if stream:
            extra = {"stream": True, "stream_options": {"include_usage": True}}
        try:
            return self._client.chat.completions.create(
                model=self.model,
                messages=msgs,
                timeout=openai.Timeout(silence, connect=min(silence, 10.0)),
                **call,
                **extra,
            )
        except ValueError as exc:  # a whole body that is not JSON
            raise LLMBadResponse(
                f"{self._where} sent a body that is not valid JSON ({exc}); is the URL an "
                "OpenAI-compatible /v1 endpoint?",
                **self._kw,
            ) from exc

    def _streamed(
        self,
        msgs: list[Message],
        call: dict[str, Any],
        silence: float,
        started: float,
        scope: CallScope,
    ) -> list[Completion]:
        stream = self._create(msgs, call, silence, stream=True)
        if "json" in stream.response.headers.get("content-type", ""):
            return self._not_streamed(stream, msgs, started, scope)
        assembler = _openai_reply.StreamAssembler()
        try:
            for chunk in stream:
                assembler.add(chunk)
                if scope.deadline is not None and scope.deadline.expired:
                    raise scope.deadline.exceeded(
                        f"while {self._where} was still streaming", **self._kw
                    )
        except (ValueError, AttributeError, TypeError) as exc:
            self._stop_streaming(scope, f"the stream could not be parsed ({exc})")
            raise UnsupportedParam("stream") from exc
        except openai.APIError as exc:
            if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
                raise
            raise streamed_error(
                self._where, self._kw, exc
            ) from exc  # an error event: a failing server
        finally:
            stream.close()
        latency = time.perf_counter() - started
        return assembler.completions(msgs, latency, self._where, self._kw)

    def _not_streamed(
        self, stream: Any, msgs: list[Message], started: float, scope: CallScope
    ) -> list[Completion]:
        """A server that ignored ``stream`` and sent one JSON body: read it as such."""
        self._stop_streaming(scope, "the server answered a stream request with one JSON body")
        try:
            data = json.loads(stream.response.read())
        except ValueError as exc:
            raise LLMBadResponse(
                f"{self._where} sent a body that is not valid JSON ({exc})", **self._kw
            ) from exc
        finally:
            stream.close()
        if not isinstance(data, dict):
            raise LLMBadResponse(
                f"{self._where} sent a JSON body that is not an object", **self._kw
            )
        response = ChatCompletion.construct(**data)
        latency = time.perf_counter() - started
        return _openai_reply.from_response(response, msgs, latency, self._where, self._kw)

    def _stop_streaming(self, scope: CallScope, reason: str) -> None:
        self.supports_streaming = False
        scope.fell_back({"what": "llm_stream", "to": "non-streaming", "reason": reason[:300]})

    def _status_error(self, exc: openai.APIStatusError, call: dict[str, Any]) -> NoReturn:
        failure = status_failure(
            exc, call, where=self._where, kw=self._kw, model=self.model,
            streaming=self.supports_streaming, served=self._served,
        )  # fmt: skip
        if isinstance(failure, UnsupportedParam) and failure.param == "stream":
            self._stop_streaming(current_scope(), failure.why)
        raise failure from exc
