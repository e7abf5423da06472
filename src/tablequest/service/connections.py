"""Connections that half-open clients cannot exhaust: a request-head deadline and a socket
budget that makes room by closing the connection waiting longest for its request head.

uvicorn's ``limit_concurrency`` counts open connections (503 beyond), and neither of its
HTTP parsers times out an unfinished request head (``timeout_keep_alive`` only covers the
idle gap between requests), so 520 sockets that each send half a request line made every
request get 503 while they stayed open. We keep uvicorn with httptools and give it our
protocol class (`protocol_class`, uvicorn's ``http=``), a subclass of its httptools protocol:

- **Head deadline** (ours): a connection must send a complete request head within
  `Limits.header_timeout` seconds of connecting, and of the first byte of each later request
  on a kept-alive connection (the gap before that byte is uvicorn's keep-alive timeout). It
  is then closed; a 408 goes first when it had sent part of a request.
- **Budget** (ours): at most `max_connections` sockets are open. A connection is *waiting*
  from its accept (or the end of its last response) until its request head is complete;
  when a new connection would exceed the budget, the waiting connection that has waited
  longest is closed to make room, so a flood of half-open sockets evicts itself before it
  can refuse anyone. Only when every open connection is busy with a request is the new one
  closed. Requests and event streams in progress are bounded separately
  (`tablequest.service.admission`).
- **Open files**: the budget cannot exceed what the process may open: `fd_room` raises the
  soft ``RLIMIT_NOFILE`` towards the hard one when needed and leaves `FD_RESERVE`
  descriptors for the store, traces, the sandbox and the model client.

Each request's scope carries ``scope["extensions"]["tablequest.connection"]["abort"]``, which
drops the connection at once (unsent data discarded): the admission middleware uses it on a
client that stopped reading, where a polite close would wait on a buffer that never drains.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tablequest.service.config import ServeConfig

__all__ = ["FD_RESERVE", "ConnectionBudget", "fd_room", "protocol_class", "uvicorn_options"]

FD_RESERVE = 256
"""Descriptors left for everything but client sockets (store, traces, sandbox, model)."""

EXTENSION = "tablequest.connection"

log = logging.getLogger("tablequest.serve")


class ConnectionBudget:
    """Open connections, and which of them wait for a request head (oldest first)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: set[Any] = set()
        self.waiting: OrderedDict[Any, None] = OrderedDict()
        self.evicted = 0

    def admit(self, conn: Any) -> bool:
        """Count `conn` in, closing the longest-waiting connection when full; False when
        every open connection is busy (then `conn` must be closed)."""
        if len(self.open) >= self.limit:
            if not self.waiting:
                return False
            oldest, _ = self.waiting.popitem(last=False)
            self.open.discard(oldest)
            self.evicted += 1
            oldest.evict()
        self.open.add(conn)
        self.waiting[conn] = None
        return True

    def busy(self, conn: Any) -> None:
        self.waiting.pop(conn, None)

    def idle(self, conn: Any) -> None:
        if conn in self.open:
            self.waiting[conn] = None
            self.waiting.move_to_end(conn)

    def closed(self, conn: Any) -> None:
        self.open.discard(conn)
        self.waiting.pop(conn, None)


def fd_room(wanted: int) -> int:
    """Connections the open-file limit allows, at most `wanted`, raising the soft limit
    towards the hard one when that is needed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # not allowed here: keep the soft limit
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - FD_RESERVE))


class _Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head deadline and the budget (module doc)."""

    budget: ConnectionBudget
    header_timeout: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._waiting = True  # no complete request head since the last response
        self._partial = False  # bytes of a request head have arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.budget.admit(self):
            log.warning("connection refused: all %d connections are busy", self.budget.limit)
            transport.abort()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.budget.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._waiting and data:
            self._partial = True
            if self._head_timer is None:
                self._arm()  # the first byte of a request on a kept-alive connection
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._disarm()
        self._waiting = self._partial = False
        self.budget.busy(self)
        self.scope.setdefault("extensions", {})[EXTENSION] = {"abort": self._abort}
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._waiting = True  # uvicorn's keep-alive timer runs until the next byte
            self.budget.idle(self)

    def evict(self) -> None:
        """Closed to make room for a new connection (it had no complete request head)."""
        self._disarm()
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._waiting:
            return
        if self._partial:
            body = f"request head not complete within {self.header_timeout:g} s\n".encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
        self.transport.close()

    def _abort(self) -> None:
        self.transport.abort()


def protocol_class(budget: ConnectionBudget, header_timeout: float) -> type[asyncio.Protocol]:
    """A uvicorn ``http=`` protocol class bound to one server's budget and head deadline."""
    return type(
        "TablequestHTTP", (_Protocol,), {"budget": budget, "header_timeout": header_timeout}
    )


def uvicorn_options(config: ServeConfig) -> dict[str, Any]:
    """uvicorn's settings for `config`: our connection protocol (head deadline, socket budget
    within the open-file limit: the module doc) instead of uvicorn's
    ``limit_concurrency``, which counted half-open sockets."""
    limits = config.limits
    room = fd_room(limits.max_connections)
    if room < limits.max_connections:
        log.warning(
            "--max-connections %d lowered to %d by the open-file limit (raise `ulimit -n`)",
            limits.max_connections, room,
        )  # fmt: skip
    return {
        "host": config.host,
        "port": config.port,
        "http": protocol_class(ConnectionBudget(room), limits.header_timeout),
        "ws": "none",  # no WebSocket routes; an upgrade would leave the budget's accounting
        "access_log": False,
        "proxy_headers": False,  # no proxy is assumed: X-Forwarded-* from a client means nothing
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 5,
        "backlog": min(2048, room),
    }
