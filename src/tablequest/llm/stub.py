"""A stub OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and fault injection.

Real sockets, stdlib only (`http.server.ThreadingHTTPServer` in a daemon thread), so tests
drive the real `OpenAICompatible` client end to end without a model::

    with StubServer(["hello", Fault.status(500), "world"]) as stub:
        llm = OpenAICompatible(stub.url, "stub-model")
        ...
        assert len(stub.requests) == 3

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``POST /v1/embeddings``
(deterministic hash-based unit vectors) and, with ``tokenize=True``, ``POST /tokenize`` (one
token per whitespace-separated word of ``content`` or ``prompt``; ``max_model_len`` as vLLM
reports it when set). Choices made to look like real servers: `stop`
sequences cut the reply; a reply longer than ``max_tokens * 4`` characters is cut with
finish_reason "length"; usage is estimated as ceil(chars / 4).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from tablequest.llm.base import estimate_tokens

Mode = Literal["support", "reject", "ignore"]


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected misbehaviour, used in place of a reply. Build with the static methods."""

    kind: Literal["delay", "status", "malformed_json", "truncated", "empty_choices"]
    seconds: float = 0.0
    code: int = 200
    retry_after: float | str | None = None
    text: str = ""

    @staticmethod
    def delay(seconds: float, then: str = "") -> Fault:
        """Wait `seconds` (e.g. beyond the client timeout), then reply `then`."""
        return Fault("delay", seconds=seconds, text=then)

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


StubReply = str | Fault
StubFunction = Callable[[dict[str, Any]], "StubReply | Sequence[str]"]


def fake_logprobs(text: str) -> list[float]:
    """Deterministic fake log-probabilities, one per whitespace token, in [-1, 0)."""
    out = []
    for token in text.split() or [text]:
        h = hashlib.sha256(token.encode()).digest()[0]
        out.append(-(h + 1) / 256)
    return out


def fake_embedding(text: str, dim: int = 16) -> list[float]:
    """Deterministic unit vector of length `dim` derived from sha256 of `text`."""
    raw = b""
    block = 0
    while len(raw) < dim * 4:
        raw += hashlib.sha256(f"{block}:{text}".encode()).digest()
        block += 1
    ints = struct.unpack(f"<{dim}I", raw[: dim * 4])
    vec = [i / 2**31 - 1.0 for i in ints]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    stub: StubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (timeouts) are expected; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status, headers, payload = self.server.stub._handle(method, self.path, body)
        try:
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (timeout): nothing to do
            pass


Response = tuple[int, dict[str, str], bytes]


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> Response:
    return status, headers or {}, json.dumps(data).encode()


def _error(status: int, message: str, param: str | None = None) -> Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return _json(status, {"error": {"message": message, "type": kind, "param": param}})


class StubServer:
    """OpenAI-compatible server on 127.0.0.1 (port 0) replying from a script.

    Args:
        replies: A queue of reply texts and `Fault`s consumed in order (one per choice; a
            `Fault` applies to the whole request), or a function of the request JSON returning
            a text, a `Fault` or a list of texts (one per choice).
        model: Model id listed by ``GET /v1/models``.
        n_mode: "support" (n choices), "reject" (HTTP 400 when n > 1) or "ignore" (always one
            choice, as llama.cpp's server does).
        logprobs_mode: "support" (fake per-token logprobs), "reject" (HTTP 400) or "ignore".
        include_usage: Send a ``usage`` object.
        embedding_dim: Length of the vectors from ``/v1/embeddings``.
        default_reply: Reply used once the queue is empty; None answers HTTP 410 instead.
        tokenize: Serve ``POST /tokenize`` (as llama.cpp's and vLLM's servers do).
        max_model_len: Context size reported by ``/tokenize`` (None: not reported).

    Attributes:
        requests: Every request received: ``{"method", "path", "json"}``, in order.
    """

    def __init__(
        self,
        replies: Sequence[StubReply] | StubFunction = (),
        *,
        model: str = "stub-model",
        n_mode: Mode = "support",
        logprobs_mode: Mode = "support",
        include_usage: bool = True,
        embedding_dim: int = 16,
        default_reply: str | None = None,
        tokenize: bool = False,
        max_model_len: int | None = None,
    ) -> None:
        self._fn: StubFunction | None = replies if callable(replies) else None
        self._queue: deque[StubReply] = deque() if callable(replies) else deque(replies)
        self.model = model
        self.n_mode: Mode = n_mode
        self.logprobs_mode: Mode = logprobs_mode
        self.include_usage = include_usage
        self.embedding_dim = embedding_dim
        self.default_reply = default_reply
        self.tokenize = tokenize
        self.max_model_len = max_model_len
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> StubServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread (idempotent)."""
        if self._httpd is None:
            httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
            httpd.stub = self
            self._httpd = httpd
            self._port = int(httpd.server_address[1])
            self._thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, interrupt pending delays and release the port (idempotent)."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("StubServer is not started; use `with StubServer(...) as stub:`")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for clients, e.g. ``http://127.0.0.1:41234/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script ------------------------------------------------------------------------------

    def enqueue(self, *replies: StubReply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests received."""
        return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    # -- handling ----------------------------------------------------------------------------

    def _handle(self, method: str, path: str, body: Any) -> Response:
        with self._lock:
            self._requests.append({"method": method, "path": path, "json": body})
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route == "/v1/models":
            data = [{"id": self.model, "object": "model", "owned_by": "tablequest-stub"}]
            return _json(200, {"object": "list", "data": data})
        if method == "POST" and route == "/v1/embeddings":
            return self._embeddings(body)
        if method == "POST" and route == "/tokenize" and self.tokenize:
            return self._tokenize(body)
        if method == "POST" and route == "/v1/chat/completions":
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return _error(400, "request body must be JSON with a 'messages' list")
            return self._chat(body)
        return _error(404, f"no route {method} {path}")

    def _embeddings(self, body: Any) -> Response:
        inputs = body.get("input") if isinstance(body, dict) else None
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "'input' must be a string or a list of strings", "input")
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, self.embedding_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(estimate_tokens(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return _json(200, {"object": "list", "data": data, "model": self.model, "usage": usage})

    def _tokenize(self, body: Any) -> Response:
        text = body.get("content", body.get("prompt")) if isinstance(body, dict) else None
        if not isinstance(text, str):
            return _error(400, "'content' (llama.cpp) or 'prompt' (vLLM) must be a string")
        count = len(text.split())
        data: dict[str, Any] = {"tokens": list(range(count)), "count": count}
        if self.max_model_len is not None:
            data["max_model_len"] = self.max_model_len
        return _json(200, data)

    def _next_replies(self, body: dict[str, Any], k: int) -> list[str] | Fault | None:
        if self._fn is not None:
            result = self._fn(body)
            if isinstance(result, Fault):
                return result
            return [result] * k if isinstance(result, str) else [str(r) for r in result]
        with self._lock:
            head = self._queue[0] if self._queue else None
            if isinstance(head, Fault):
                self._queue.popleft()
                return head
            texts: list[str] = []
            while self._queue and len(texts) < k and isinstance(self._queue[0], str):
                texts.append(str(self._queue.popleft()))
        if not texts and self.default_reply is not None:
            texts = [self.default_reply]
        return texts or None

    def _chat(self, body: dict[str, Any]) -> Response:
        n = int(body.get("n") or 1)
        want_logprobs = bool(body.get("logprobs"))
        if n > 1 and self.n_mode == "reject":
            return _error(400, "'n' > 1 is not supported by this server", "n")
        if want_logprobs and self.logprobs_mode == "reject":
            return _error(400, "'logprobs' is not supported by this server", "logprobs")
        k = n if self.n_mode == "support" else 1
        try:
            replies = self._next_replies(body, k)
        except Exception as exc:  # a broken test function: report it like a server would
            return _error(500, f"stub reply function failed: {exc!r}")
        if replies is None:
            return _error(410, f"StubServer script exhausted at request #{len(self.requests)}")
        finish = "stop"
        if isinstance(replies, Fault):
            fault = replies
            if fault.kind == "delay":
                self._stop.wait(fault.seconds)
                replies = [fault.text] * k
            elif fault.kind == "status":
                return self._status_fault(fault)
            elif fault.kind == "malformed_json":
                return 200, {}, fault.text.encode()
            elif fault.kind == "empty_choices":
                return _json(200, self._envelope(body, [], 0))
            else:  # truncated
                replies, finish = [fault.text] * k, "length"
        choices = []
        completion_tokens = 0
        for i, text in enumerate(replies):
            text, reason = self._apply_limits(text, body, finish)
            completion_tokens += estimate_tokens(text)
            choice: dict[str, Any] = {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": reason,
                "logprobs": None,
            }
            if want_logprobs and self.logprobs_mode == "support":
                lps = fake_logprobs(text)
                tokens = text.split() or [text]
                choice["logprobs"] = {
                    "content": [
                        {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                        for t, lp in zip(tokens, lps, strict=True)
                    ]
                }
            choices.append(choice)
        return _json(200, self._envelope(body, choices, completion_tokens))

    @staticmethod
    def _apply_limits(text: str, body: dict[str, Any], finish: str) -> tuple[str, str]:
        stops = body.get("stop")
        for stop in [stops] if isinstance(stops, str) else stops or []:
            if stop and stop in text:
                text = text[: text.index(stop)]
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(max_tokens, int) and len(text) > max_tokens * 4:
            return text[: max_tokens * 4], "length"
        return text, finish

    def _status_fault(self, fault: Fault) -> Response:
        headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
        message = fault.text or f"injected HTTP {fault.code}"
        status, _, payload = _error(fault.code, message)
        return status, headers, payload

    def _envelope(
        self, body: dict[str, Any], choices: list[dict[str, Any]], completion_tokens: int
    ) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            counter = self._counter
        out: dict[str, Any] = {
            "id": f"chatcmpl-stub-{counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": choices,
        }
        if self.include_usage:
            messages = body.get("messages") or []
            prompt = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)
            out["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt + completion_tokens,
            }
        return out
