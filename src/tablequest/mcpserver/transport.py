"""Running the MCP server: stdio (default) or Streamable HTTP behind the serve guard.

stdio: the protocol owns stdout, so nothing else is ever printed there (logs go to stderr).

HTTP (``--http HOST:PORT``): the SDK's Streamable HTTP app at ``/mcp``, behind two layers:
`BearerGate` (every request carries ``Authorization: Bearer TOKEN``, compared in constant
time by `tablequest.serve.security.token_matches`; else 401 with ``WWW-Authenticate:
Bearer``) inside `tablequest.serve.security.Guard` (loopback Host check, body limits and
timeouts, security headers, the access log without query strings) — so the MCP endpoint is
held to ``tablequest serve``'s rules, with the token from the same token file. Unlike
``serve`` there are no pages and no cookie login: an MCP client sends the header.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tablequest.mcpserver.service import McpService
from tablequest.serve.config import ServeError, check_bind
from tablequest.serve.security import Guard, token_matches

__all__ = ["BearerGate", "http_app", "parse_bind", "run_http", "run_stdio"]

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
        body = json.dumps(
            {"error": {"code": "unauthorized", "message": f"{why}: send Authorization: "
                       "Bearer TOKEN (the token file is printed by `tablequest mcp --http`)"}}
        ).encode()  # fmt: skip
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
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
    """The Streamable HTTP app at ``/mcp`` behind `BearerGate` and `Guard`.

    Raises:
        ServeError: no token (HTTP always needs one), or too short.
    """
    config = service.state.config
    if not config.token:
        raise ServeError("the MCP HTTP endpoint needs a token (--token-file)")
    check_bind(config.host, config.token)
    inner = service.server.streamable_http_app(
        streamable_http_path=PATH, host=config.host,
        max_request_body_size=config.limits.max_body_bytes,
    )  # fmt: skip
    gated = BearerGate(inner, config.token)
    return Guard(gated, token=None, host=config.host, limits=config.limits)


def run_http(service: McpService, *, sock: socket.socket | None = None) -> None:
    """Serve over Streamable HTTP until interrupted; closes `service` at the end."""
    import uvicorn

    config = service.state.config
    uv = uvicorn.Config(
        http_app(service), host=config.host, port=config.port, log_level="warning",
        lifespan="on", timeout_keep_alive=5,
    )  # fmt: skip
    try:
        uvicorn.Server(uv).run(sockets=[sock] if sock is not None else None)
    finally:
        service.close()


def run_stdio(service: McpService) -> None:
    """Serve over stdin/stdout until the client closes it; closes `service`."""
    import anyio

    try:
        anyio.run(service.server.run_stdio_async)
    finally:
        service.close()
