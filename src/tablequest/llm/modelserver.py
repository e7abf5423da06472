"""`ModelServer`: the one HTTP client of an OpenAI-compatible model server's other endpoints.

Chat goes through the `openai` SDK (`OpenAICompatible`, which owns a `ModelServer` and takes
its URL, key and guard from it); everything else a server offers is asked here, with one
base URL, one key (``Authorization: Bearer``), the model-request guard
(`tablequest.llm.guard.check_model_request`, before every request), one lazily created
`httpx.Client` and one mapping of failures:

- `first_model`: ``GET /v1/models``, the first model listed;
- `context_length`: the model's context in tokens: vLLM lists ``max_model_len`` for each model
  in ``GET /v1/models``; llama.cpp's server lists ``meta.n_ctx_train`` there and reports
  ``n_ctx`` in ``GET /props`` (under ``default_generation_settings``, older builds at the top
  level). Anything else (OpenAI, a down server, a malformed reply) gives None, and callers use
  their documented default. Cached per URL and model for the process;
- `embeddings`: ``POST /v1/embeddings`` (``encoding_format`` base64, as the `openai` SDK asks;
  a server that sends float lists is read as well), retried like the SDK retries;
- `rerank`: ``POST /v1/rerank`` (Cohere/Jina shape) or ``POST /v1/score`` (vLLM);
- `tokenize`: ``POST {root}/tokenize`` (root: the URL without ``/v1``); llama.cpp answers
  ``{"tokens": [...]}``, vLLM ``{"count": N, "tokens": [...], "max_model_len": N}``, so one
  body carries both servers' field names;
- `probe`: whether a server that just timed out could take a request now: llama.cpp's
  ``GET /health?fail_on_no_slot=1`` answers 503 while every slot is busy (with the abandoned
  request, typically); servers without that route (404) are asked ``GET /v1/models``; no
  answer within the probe timeout means a server that is stuck or swamped.

Failures are one `ModelServerError` whose `kind` says what happened: ``connect`` (the connection
could not be opened: refused, DNS, TLS; `connect_failure` words the cause as `ask` words it for
the model), ``transport`` (opened, then a timeout or a reset), ``status`` (an HTTP error
status) or ``malformed`` (a body that is not the JSON the endpoint promises); `cause` is the
short reason. Callers decide what a failure means to them (no embeddings here, a fallback
tokenizer, a failed check).

Choices (ours): only embeddings are retried (twice by default: connections that fail, HTTP 408,
409, 429 and 5xx; ``Retry-After`` up to 60 s, else 0.5 s doubling up to 8 s with 25 % jitter,
as the SDK that served them before did); probes and the other endpoints answer once, within
their short timeouts. Embedding and rerank requests are marked as waits (`tablequest.waits`).
"""

from __future__ import annotations

import base64
import email.utils
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import httpx
import numpy as np

from tablequest.llm.base import LLMError
from tablequest.llm.guard import check_model_request
from tablequest.waits import waiting

__all__ = [
    "CONTEXT_TIMEOUT",
    "FailureKind",
    "ModelServer",
    "ModelServerError",
    "ProbeResult",
    "Tokenized",
    "connect_failure",
    "parse_retry_after",
    "server_root",
]

ProbeResult = Literal["ok", "busy", "no answer"]
FailureKind = Literal["connect", "transport", "status", "malformed"]
CONTEXT_TIMEOUT = 3.0  # seconds for each context-length request
RETRY_AFTER_MAX = 60.0  # a longer Retry-After is not waited for: the backoff is used instead

_CONTEXT: dict[tuple[str, str | None], int | None] = {}
_CONTEXT_LOCK = threading.Lock()


class ModelServerError(LLMError):
    """A request to the model server failed (module docstring: the kinds).

    Attributes:
        kind: ``connect``, ``transport``, ``status`` or ``malformed``.
        cause: The short reason (the connection's failure, ``HTTP 404: body``, what was wrong).
        status: The HTTP status of a ``status`` failure.
        retry_after: Seconds the server asked to wait (``Retry-After``), if it did.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        cause: str,
        url: str,
        model: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, url=url, model=model)
        self.kind: FailureKind = kind
        self.cause = cause
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """A failure a later attempt may not meet (connections, 408/409/429, 5xx)."""
        if self.kind in ("connect", "transport"):
            return True
        return self.status is not None and (self.status in (408, 409, 429) or self.status >= 500)


@dataclass(frozen=True, slots=True)
class Tokenized:
    """What ``/tokenize`` said: the token count and, from vLLM, the context length."""

    count: int
    context: int | None = None


def server_root(url: str) -> str:
    """``http://h:8000/v1`` → ``http://h:8000`` (the root /tokenize, /props, /health live under)."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class ModelServer:
    """The non-chat endpoints of one OpenAI-compatible server (module docstring).

    Args:
        base_url: Server URL including the API prefix, e.g. ``http://localhost:8000/v1``.
        api_key: Bearer key; None for local servers that need none.
        model: The model asked about (the guard's message, `context_length`'s pick).
        timeout: Default seconds per request; each method may pass its own.
        transport: An httpx transport (tests: `httpx.MockTransport`); None: the network.
        sleep: Sleep function between embedding retries (tests may record the waits).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.root = server_root(self.base_url)
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self._transport = transport
        self._sleep = sleep
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def headers(self) -> dict[str, str]:
        """The headers of every request (the key, when there is one)."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def check(self, model: str | None = None) -> None:
        """The model-request guard for this server (raises `ModelRequestsDisallowed`)."""
        check_model_request(self.base_url, model=model or self.model)

    @property
    def client(self) -> httpx.Client:
        """The one HTTP client, created on first use (again after `close`)."""
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=self.timeout, headers=self.headers, transport=self._transport
                )
            return self._client

    def close(self) -> None:
        """Close the HTTP client (idempotent)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- requests and their failures ---------------------------------------------------------

    def _fail(self, url: str, kind: FailureKind, cause: str, **extra: Any) -> ModelServerError:
        message = {
            "connect": f"cannot reach the model server {self.base_url}: {cause}",
            "transport": f"{url}: {cause}",
            "status": f"{url} answered {cause}",
            "malformed": f"{url} sent {cause}",
        }[kind]
        return ModelServerError(message, kind=kind, cause=cause, url=url, model=self.model, **extra)

    def send(
        self, method: str, url: str, *, timeout: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One request, guarded, whatever its status; raises `ModelServerError` (``connect``,
        ``transport``) when no response came."""
        self.check()
        try:
            return self.client.request(
                method, url, timeout=self.timeout if timeout is None else timeout, **kwargs
            )
        except httpx.HTTPError as exc:
            cause = connect_failure(exc)
            if cause is not None:
                raise self._fail(url, "connect", cause) from exc
            raise self._fail(url, "transport", f"{type(exc).__name__}: {exc}") from exc

    def request_json(
        self, method: str, url: str, *, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        """The JSON body of a successful (2xx) reply; `ModelServerError` otherwise."""
        response = self.send(method, url, timeout=timeout, **kwargs)
        if not response.is_success:
            raise self._fail(
                url,
                "status",
                f"HTTP {response.status_code}: {response.text[:120]}",
                status=response.status_code,
                retry_after=parse_retry_after(response.headers),
            )
        try:
            return response.json()
        except ValueError as exc:
            raise self._fail(url, "malformed", f"a body that is not JSON ({exc})") from exc

    def _malformed(self, url: str, what: str, exc: Exception) -> ModelServerError:
        return self._fail(url, "malformed", f"{what} ({type(exc).__name__}: {exc})"[:300])

    # -- endpoints ---------------------------------------------------------------------------

    def model_ids(self, *, timeout: float | None = None) -> list[str]:
        """Every model id ``GET /v1/models`` lists, in its order."""
        url = f"{self.base_url}/models"
        listed = self.request_json("GET", url, timeout=timeout)
        try:
            return [str(item["id"]) for item in listed["data"]]
        except (KeyError, TypeError) as exc:
            raise self._malformed(url, "no model list", exc) from exc

    def first_model(self, *, timeout: float | None = None) -> str:
        """The first model ``GET /v1/models`` lists."""
        url = f"{self.base_url}/models"
        listed = self.request_json("GET", url, timeout=timeout)
        try:
            return str(listed["data"][0]["id"])
        except (KeyError, IndexError, TypeError) as exc:
            raise self._malformed(url, "no model in its list", exc) from exc

    def context_length(self, *, timeout: float = CONTEXT_TIMEOUT) -> int | None:
        """The model's context length in tokens as the server reports it, or None (cached)."""
        key = (self.base_url, self.model)
        with _CONTEXT_LOCK:
            if key in _CONTEXT:
                return _CONTEXT[key]
        found: int | None = None
        try:
            self.check(self.model or "?")
            for target, read in ((f"{self.base_url}/models", _from_models),
                                 (f"{self.root}/props", _from_props)):  # fmt: skip
                try:
                    data = self.request_json("GET", target, timeout=timeout)
                except ModelServerError:
                    data = None
                found = read(data, self.model)
                if found:
                    break
        except LLMError:  # the guard: no request, nothing known
            found = None
        with _CONTEXT_LOCK:
            _CONTEXT[key] = found
        return found

    def embeddings(
        self, texts: Sequence[str], *, model: str, retries: int = 2, timeout: float | None = None
    ) -> list[list[float]]:
        """One vector per text, in order of the reply's ``index``."""
        url = f"{self.base_url}/embeddings"
        body = {"model": model, "input": list(texts), "encoding_format": "base64"}
        for attempt in range(retries + 1):
            try:
                with waiting():  # the host may run other work meanwhile (tablequest.waits)
                    reply = self.request_json("POST", url, json=body, timeout=timeout)
                break
            except ModelServerError as exc:
                if attempt >= retries or not exc.retryable:
                    raise
                self._sleep(_retry_delay(exc, attempt))
        try:
            items = sorted(reply["data"], key=lambda d: int(d["index"]))
            return [_vector(item["embedding"]) for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise self._malformed(url, "no embeddings", exc) from exc

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        model: str,
        endpoint: Literal["rerank", "score"] = "rerank",
        timeout: float | None = None,
    ) -> list[float]:
        """The relevance of each document to `query`, in the documents' order."""
        url = f"{self.base_url}/{endpoint}"
        body: dict[str, Any] = (
            {"model": model, "query": query, "documents": list(documents),
             "top_n": len(documents)}
            if endpoint == "rerank"
            else {"model": model, "text_1": query, "text_2": list(documents)}
        )  # fmt: skip
        with waiting():  # the host may run other work meanwhile (tablequest.waits)
            data = self.request_json("POST", url, json=body, timeout=timeout)
        try:
            items = data["results"] if endpoint == "rerank" else data["data"]
            out = [0.0] * len(documents)
            for item in items:
                out[int(item["index"])] = float(item.get("relevance_score", item.get("score")))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise self._malformed(url, "no scores", exc) from exc
        return out

    def tokenize(self, text: str, *, timeout: float | None = None) -> Tokenized:
        """Tokens of `text` by the server's own tokenizer (``POST {root}/tokenize``)."""
        url = f"{self.root}/tokenize"
        body = {"content": text, "prompt": text, "model": self.model, "add_special": False}
        data = self.request_json("POST", url, json=body, timeout=timeout)
        if isinstance(data, dict):
            context = _positive(data.get("max_model_len"))
            if isinstance(data.get("count"), int):
                return Tokenized(int(data["count"]), context)
            if isinstance(data.get("tokens"), list):
                return Tokenized(len(data["tokens"]), context)
        raise self._fail(url, "malformed", f"an unexpected /tokenize reply {str(data)[:120]!r}")

    def probe(self, timeout: float) -> ProbeResult:
        """Whether the server could take a request now (module docstring); at most two GETs."""
        try:
            params = {"fail_on_no_slot": "1"}
            health = self.send("GET", f"{self.root}/health", params=params, timeout=timeout)
            if health.status_code == 200:
                return "ok"
            if health.status_code == 503:
                return "busy"
            models = self.send("GET", f"{self.base_url}/models", timeout=timeout)
            return "ok" if models.status_code < 300 else "no answer"
        except LLMError:  # no response (or the guard: no request)
            return "no answer"


# -- reading replies ---------------------------------------------------------------------------


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_models(data: Any, model: str | None) -> int | None:
    items = data.get("data") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or (model and item.get("id") not in (model, None)):
            continue
        meta = item.get("meta")
        train = meta.get("n_ctx_train") if isinstance(meta, dict) else None
        found = _positive(item.get("max_model_len")) or _positive(train)
        if found:
            return found
    return None


def _from_props(data: Any, model: str | None = None) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _positive(nested) or _positive(data.get("n_ctx"))


def _vector(value: Any) -> list[float]:
    """An embedding as floats: a base64 string of little-endian float32s, or a list."""
    if isinstance(value, str):
        floats: list[float] = np.frombuffer(base64.b64decode(value), dtype="<f4").tolist()
        return floats
    if not isinstance(value, list):
        raise TypeError(f"an embedding is a list or a base64 string, not {type(value).__name__}")
    return [float(x) for x in value]


def _retry_delay(exc: ModelServerError, attempt: int) -> float:
    if exc.retry_after is not None and exc.retry_after <= RETRY_AFTER_MAX:
        return exc.retry_after
    return min(0.5 * 2.0**attempt, 8.0) * (1 - 0.25 * random.random())


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
