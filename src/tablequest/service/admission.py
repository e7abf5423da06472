"""Admission: how many requests and event streams are handled at once, and streams whose
client stopped reading.

One ASGI middleware, inside the guard (so only requests with the token are counted, and its
refusals get the security headers and the access line):

- **Requests** in progress (handlers running, bodies being read) are at most
  `Limits.max_requests`; beyond, 503 with ``Retry-After: 1``. Open connections are not
  requests: a socket waiting for its request head is the connection budget's business
  (`tablequest.service.connections`), so half-open sockets take no request slot.
- **Event streams** (a response whose content type is ``text/event-stream``) leave the
  request count when their response starts and are at most `Limits.max_streams`; beyond, the
  response is replaced by 429 with ``Retry-After: 5`` (the app then sees the client gone: an
  ask streamed by ``POST /v1/ask`` is stopped, as when its client leaves).
- **Stalled streams** (ours): a stream is not closed for being quiet (the stream itself
  sends a keep-alive comment every 15 s, and it ends with its ask, which `ask_timeout`
  bounds), but a write the client does not take within `Limits.stream_idle_timeout` seconds
  drops the connection (the ``abort`` the connection protocol puts in the scope), so a
  client that stops reading gives its slot back instead of holding it, and a task blocked on
  its full buffer, for as long as the socket lives.

Counters live on the event loop (one thread), so they need no lock.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tablequest.service.config import Limits
from tablequest.service.connections import EXTENSION

__all__ = ["Admission"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

EVENT_STREAM = b"text/event-stream"

log = logging.getLogger("tablequest.serve")


class Admission:
    """The ASGI middleware described in the module doc."""

    def __init__(self, app: ASGIApp, *, limits: Limits) -> None:
        self.app = app
        self.limits = limits
        self.requests = 0
        self.streams = 0
        self.stalled = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.requests >= self.limits.max_requests:
            message = (
                f"{self.requests} requests are in progress, the server's limit "
                "(--max-requests); retry shortly"
            )
            await _refuse(send, 503, "overloaded", message, retry_after=1)
            return
        self.requests += 1
        slot = {"kind": "request"}
        try:
            await self.app(scope, receive, self._sender(scope, send, slot))
        finally:
            if slot["kind"] == "request":
                self.requests -= 1
            elif slot["kind"] == "stream":
                self.streams -= 1

    def _sender(self, scope: Scope, send: Send, slot: dict[str, str]) -> Send:
        abort = (scope.get("extensions") or {}).get(EXTENSION, {}).get("abort")

        async def sender(message: Message) -> None:
            if slot["kind"] == "refused":
                return  # the 429 went instead; the app learns the client is gone
            if message["type"] == "http.response.start" and _is_stream(message):
                if self.streams >= self.limits.max_streams:
                    self.requests -= 1
                    slot["kind"] = "refused"
                    text = (
                        f"{self.streams} event streams are open, the server's limit "
                        "(--max-streams); retry later or close one"
                    )
                    await _refuse(send, 429, "busy", text, retry_after=5)
                    return
                self.requests -= 1
                self.streams += 1
                slot["kind"] = "stream"
            if slot["kind"] != "stream" or abort is None:
                await send(message)
                return
            timer = asyncio.get_running_loop().call_later(
                self.limits.stream_idle_timeout, self._stalled, abort
            )
            try:
                await send(message)
            finally:
                timer.cancel()

        return sender

    def _stalled(self, abort: Callable[[], None]) -> None:
        self.stalled += 1
        log.info(
            "event stream dropped: the client took nothing for %g s (--stream-idle-timeout)",
            self.limits.stream_idle_timeout,
        )
        abort()


def _is_stream(message: Message) -> bool:
    for name, value in message.get("headers") or []:
        if name.lower() == b"content-type":
            return bool(value.lower().startswith(EVENT_STREAM))
    return False


async def _refuse(send: Send, status: int, code: str, message: str, *, retry_after: int) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
