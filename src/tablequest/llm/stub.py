"""A stub OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and fault injection.

Real sockets, stdlib only (`http.server.ThreadingHTTPServer` in a daemon thread), so tests
drive the real `OpenAICompatible` client end to end without a model::

    with StubServer(["hello", Fault.status(500), "world"]) as stub:
        llm = OpenAICompatible(stub.url, "stub-model")
        ...
        assert len(stub.requests) == 3

Endpoints: ``POST /v1/chat/completions`` (whole JSON, or server-sent events when the
request says ``"stream": true``), ``GET /v1/models``, ``GET /health`` (llama.cpp's: with
``?fail_on_no_slot=1`` it answers 503 while every slot is busy), ``POST /v1/embeddings``
(deterministic hash-based unit vectors), ``POST /v1/rerank`` (Cohere/Jina shape; the score of a
document is the share of the query's words it contains) and, with ``tokenize=True``,
``POST /tokenize`` (one token per whitespace-separated word of ``content`` or ``prompt``;
``max_model_len`` as vLLM reports it when set). Choices made to look like real servers: `stop`
sequences cut the reply; a reply longer than ``max_tokens * 4`` characters is cut with
finish_reason "length"; usage is estimated as ceil(chars / 4); a chat request holds a slot
until its reply is written or the client is found gone (a silent stall ends, the next write
fails), as llama.cpp's server frees a slot when a streaming client disconnects.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from tablequest.llm import _stub_chat as chat_body
from tablequest.llm._stub_chat import Step, Timing, fake_logprobs
from tablequest.llm._stub_fault import Fault
from tablequest.llm.base import estimate_tokens

__all__ = ["Fault", "StubServer", "fake_embedding", "fake_logprobs"]

Mode = Literal["support", "reject", "ignore"]
StubReply = str | Fault
StubFunction = Callable[[dict[str, Any]], "StubReply | Sequence[str]"]


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
        stub = self.server.stub
        with stub._slot(self.path):
            reply = stub._handle(method, self.path, body)
            try:
                if isinstance(reply, Streamed):
                    self._stream(reply)
                else:
                    self._whole(*reply)
            except OSError:  # the client gave up (timeout): nothing to do
                pass

    def _whole(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: Streamed) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for step in reply.steps:
            if step.wait and self.server.stub._stop.wait(step.wait):
                return
            self.wfile.write(step.data)
            self.wfile.flush()


@dataclass(frozen=True, slots=True)
class Streamed:
    """A server-sent-event reply: steps written one after another."""

    steps: list[Step]


Response = tuple[int, dict[str, str], bytes]
Reply = Response | Streamed


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
        max_model_len: Context size reported by ``/tokenize`` and ``/v1/models`` (None: not
            reported).
        stream_mode: "support" (server-sent events when asked), "reject" (HTTP 400 when
            ``stream`` is true) or "ignore" (always one JSON body).
        slots: Chat requests served at once before ``/health?fail_on_no_slot=1`` says 503
            (None: it always says ok); requests are not queued, only reported.
        probe_delay: Seconds ``GET /health`` and ``GET /v1/models`` wait before answering
            (a hung server); settable while running.
        health_route: False answers 404 on ``/health`` (servers other than llama.cpp's).
        rerank: False answers 404 on ``/v1/rerank`` (a chat-only server).

    Attributes:
        requests: Every request received: ``{"method", "path", "json"}``, in order.
        busy: Chat requests being served right now.
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
        stream_mode: Mode = "support",
        slots: int | None = None,
        probe_delay: float = 0.0,
        health_route: bool = True,
        rerank: bool = True,
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
        self.stream_mode: Mode = stream_mode
        self.slots = slots
        self.probe_delay = probe_delay
        self.health_route = health_route
        self.rerank = rerank
        self.busy = 0
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

    @contextmanager
    def _slot(self, path: str) -> Iterator[None]:
        """Count a chat request as busy while it is handled and written."""
        chat = path.split("?", 1)[0].rstrip("/").endswith("/chat/completions")
        if chat:
            with self._lock:
                self.busy += 1
        try:
            yield
        finally:
            if chat:
                with self._lock:
                    self.busy -= 1

    def _health(self, query: str) -> Response:
        if not self.health_route:
            return _error(404, "no route GET /health")
        with self._lock:
            full = self.slots is not None and self.busy >= self.slots
        if full and "fail_on_no_slot" in query:
            return _json(503, {"error": {"code": 503, "message": "no slot available"}})
        return _json(200, {"status": "ok"})

    def _handle(self, method: str, path: str, body: Any) -> Reply:
        with self._lock:
            self._requests.append({"method": method, "path": path, "json": body})
        route, _, query = path.partition("?")
        route = route.rstrip("/")
        if method == "GET" and route in ("/health", "/v1/models") and self.probe_delay:
            self._stop.wait(self.probe_delay)
        if method == "GET" and route == "/health":
            return self._health(query)
        if method == "GET" and route == "/v1/models":
            item: dict[str, Any] = {"id": self.model, "object": "model", "owned_by": "stub"}
            if self.max_model_len is not None:  # as vLLM lists it
                item["max_model_len"] = self.max_model_len
            return _json(200, {"object": "list", "data": [item]})
        if method == "POST" and route == "/v1/embeddings":
            return self._embeddings(body)
        if method == "POST" and route == "/v1/rerank" and self.rerank:
            return self._rerank(body)
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

    def _rerank(self, body: Any) -> Response:
        query = body.get("query") if isinstance(body, dict) else None
        documents = body.get("documents") if isinstance(body, dict) else None
        if not isinstance(query, str) or not isinstance(documents, list):
            return _error(400, "'query' must be a string and 'documents' a list of strings")
        words = set(query.lower().split())
        results = []
        for i, doc in enumerate(documents):
            seen = set(str(doc).lower().split())
            score = len(words & seen) / len(words) if words else 0.0
            results.append({"index": i, "relevance_score": score})
        results.sort(key=lambda r: -float(r["relevance_score"]))
        return _json(200, {"model": self.model, "results": results})

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

    def _chat(self, body: dict[str, Any]) -> Reply:
        n = int(body.get("n") or 1)
        want_logprobs = bool(body.get("logprobs"))
        stream = bool(body.get("stream"))
        if n > 1 and self.n_mode == "reject":
            return _error(400, "'n' > 1 is not supported by this server", "n")
        if want_logprobs and self.logprobs_mode == "reject":
            return _error(400, "'logprobs' is not supported by this server", "logprobs")
        if stream and self.stream_mode == "reject":
            return _error(400, "'stream' is not supported by this server", "stream")
        stream = stream and self.stream_mode == "support"
        k = n if self.n_mode == "support" else 1
        try:
            replies = self._next_replies(body, k)
        except Exception as exc:  # a broken test function: report it like a server would
            return _error(500, f"stub reply function failed: {exc!r}")
        if replies is None:
            return _error(410, f"StubServer script exhausted at request #{len(self.requests)}")
        finish, timing = "stop", Timing()
        if isinstance(replies, Fault):
            fault = replies
            if fault.kind == "status" or (fault.kind == "stream_error" and not stream):
                return self._status_fault(fault)
            if fault.kind == "malformed_json":
                return 200, {}, fault.text.encode()
            if fault.kind == "empty_choices":
                texts: list[str] = []
            else:
                texts = [fault.text] * k
                finish = "length" if fault.kind == "truncated" else "stop"
                timing = _timing(fault, len(chat_body.pieces(fault.text)))
            if not stream:  # a whole-body reply comes after all the waits together
                self._stop.wait(timing.total(len(chat_body.pieces(fault.text))))
            replies = texts
        logprobs = want_logprobs and self.logprobs_mode == "support"
        head = self._head(body)
        if stream:
            usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
            steps = chat_body.stream_steps(
                replies,
                body,
                head,
                finish=finish,
                logprobs=logprobs,
                with_usage=usage_wanted and self.include_usage,
                timing=timing,
            )
            return Streamed(steps)
        choices, completion_tokens = chat_body.choices(replies, body, finish, logprobs)
        out = {**head, "choices": choices}
        if self.include_usage:
            out["usage"] = chat_body.usage(body, completion_tokens)
        return _json(200, out)

    def _status_fault(self, fault: Fault) -> Response:
        headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
        message = fault.message or fault.text or f"injected HTTP {fault.code}"
        status, _, payload = _error(fault.code, message)
        return status, headers, payload

    def _head(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            counter = self._counter
        return chat_body.envelope(body, counter, self.model)


def _timing(fault: Fault, n_pieces: int) -> Timing:
    """How a timing fault spreads its waits over a streamed reply."""
    if fault.kind == "delay":
        return Timing(first=fault.seconds)
    if fault.kind == "slow_stream":
        return Timing(first=fault.seconds, between=fault.seconds)
    if fault.kind == "stall":
        return Timing(stall_after=min(fault.after, n_pieces), stall=fault.seconds)
    if fault.kind == "broken_stream":
        return Timing(broken=True)
    if fault.kind == "stream_error":
        return Timing(error=fault.message or "injected stream error")
    return Timing()
