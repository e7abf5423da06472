"""Running the MCP server: stdio (default) or Streamable HTTP behind the serve guard.

stdio: the protocol owns stdout, so nothing else is ever printed there (logs go to stderr).

HTTP (``--http HOST:PORT``): the SDK's Streamable HTTP app at ``/mcp``, held to ``tablequest
serve``'s rules with the same code (`tablequest.service`), with the token from the same token
file. From the socket in:

- the connection protocol of `uvicorn_options` (`uvicorn_config`): a request head must be
  complete within ``[serve] header_timeout``, and at most ``max_connections`` sockets are
  open, the one waiting longest for its head closed first to make room, so half-open sockets
  cannot lock out a client with the token (issue 40);
- `tablequest.service.Guard`: loopback Host names only on a loopback bind, body limits and
  ``body_timeout``, security headers, the access log without query strings;
- `OriginGate`: a browser's ``Origin`` must be allowed (``--allow-origin``; loopback origins
  on a loopback bind), else 403, as the MCP specification asks of servers (issue 40). It
  replaces the SDK's own check, which only knew loopback binds;
- `BearerGate`: every request carries ``Authorization: Bearer TOKEN``, compared in constant
  time (`tablequest.service.token_matches`), else 401 with ``WWW-Authenticate: Bearer``;
- `tablequest.service.Admission`: requests (``max_requests``, then 503) and event streams
  (``max_streams``, then 429) at once, and streams whose client stopped reading dropped.

Unlike ``serve`` there are no pages and no cookie login: an MCP client sends the header.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tablequest.mcpserver.service import McpService
from tablequest.service import (
    Admission,
    Guard,
    ServeError,
    check_bind,
    claim,
    is_loopback,
    normalize_origin,
    token_matches,
    uvicorn_options,
)

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "BearerGate", "OriginGate", "http_app", "parse_bind", "run_http", "run_stdio",
    "uvicorn_config",
]  # fmt: skip

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
PATH = "/mcp"


class BearerGate:
    """Refuses every HTTP request without the bearer token (401, JSON body)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and token_matches(given.strip(), self.token):
            await self.app(scope, receive, send)
            return
        why = "wrong token" if header else "a token is required"
        message = (
            f"{why}: send Authorization: Bearer TOKEN (the token file is printed by "
            "`tablequest mcp --http`)"
        )
        await _refuse(send, 401, "unauthorized", message, [(b"www-authenticate", b"Bearer")])


class OriginGate:
    """Refuses a request whose ``Origin`` header is not allowed (403, JSON body).

    Allowed: no ``Origin`` (a client that is not a browser page), an origin in `allowed`
    (spelled by `normalize_origin`), and on a loopback bind any loopback origin. ``null`` (a
    sandboxed page, a local file) and malformed origins are refused.
    """

    def __init__(self, app: ASGIApp, *, allowed: Iterable[str], loopback: bool) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = dict(scope.get("headers") or []).get(b"origin")
        if origin is None or self.allows(origin.decode("latin-1")):
            await self.app(scope, receive, send)
            return
        shown = origin.decode("latin-1")[:200]
        message = (
            f"pages of origin {shown!r} may not call this server; its operator can allow "
            "them with `tablequest mcp --http … --allow-origin ORIGIN`"
        )
        await _refuse(send, 403, "forbidden_origin", message)

    def allows(self, origin: str) -> bool:
        """Whether pages of `origin` (an ``Origin`` header's value) may call the server."""
        try:
            key = normalize_origin(origin)
        except ServeError:
            return False
        return key in self.allowed or (self.loopback and is_loopback(urlsplit(key).hostname or ""))


async def _refuse(
    send: Send, status: int, code: str, message: str, headers: list[Any] | None = None
) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    start = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8766`` for IPv6) → (host, port).

    Raises:
        ServeError: no port, or a port outside 1..65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ServeError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8766), not {value!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def http_app(service: McpService) -> ASGIApp:
    """The Streamable HTTP app at ``/mcp`` behind the layers of the module doc.

    Raises:
        ServeError: no token (HTTP always needs one), or too short.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    config = service.state.config
    if not config.token:
        raise ServeError("the MCP HTTP endpoint needs a token (--token-file)")
    check_bind(config.host, config.token)
    # Host and Origin are checked on every bind by Guard and OriginGate, not by the SDK
    own_checks = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    inner = service.server.streamable_http_app(
        streamable_http_path=PATH, host=config.host,
        max_request_body_size=config.limits.max_body_bytes, transport_security=own_checks,
    )  # fmt: skip
    counted = Admission(inner, limits=config.limits)  # after the token: only clients count
    gated = BearerGate(counted, config.token)
    origins = OriginGate(gated, allowed=config.allow_origins, loopback=is_loopback(config.host))
    return Guard(origins, token=None, host=config.host, limits=config.limits)


def uvicorn_config(service: McpService) -> uvicorn.Config:
    """uvicorn's configuration for `service` over HTTP: ``tablequest serve``'s connection
    protocol and settings (`uvicorn_options`: request-head deadline, connection budget)."""
    import uvicorn

    options = uvicorn_options(service.state.config)
    return uvicorn.Config(http_app(service), log_level="warning", lifespan="on", **options)


def run_http(service: McpService, *, sock: socket.socket | None = None) -> None:
    """Serve over Streamable HTTP until interrupted; closes `service` at the end.

    Listens on `sock`, else on the sockets of the config's claim (the CLI's, bound before the
    token), else binds the config's address first (`claim`; uvicorn's own bind failure exited
    with its status 3).

    Raises:
        CannotListen: the address is in use or cannot be bound.
    """
    import uvicorn

    config = service.state.config
    own = None
    try:
        if sock is not None:
            sockets = [sock]
        else:
            held = config.claim or (own := claim(None, config.host, config.port))
            sockets = list(held.sockets)
        uvicorn.Server(uvicorn_config(service)).run(sockets=sockets)
    finally:
        if own is not None:
            own.close()
        service.close()


def run_stdio(service: McpService) -> None:
    """Serve over stdin/stdout until the client closes it; closes `service`."""
    import anyio

    try:
        anyio.run(service.server.run_stdio_async)
    finally:
        service.close()
