"""The guard in front of every route: token, Host, body limits, security headers, access log.

One pure ASGI middleware (cheap per request):

- **Token**: every request but ``/login`` and ``/static/`` carries the token, as
  ``Authorization: Bearer TOKEN`` (API clients) or the ``tq_token`` cookie that ``/login`` sets
  (browsers; HttpOnly, SameSite=Strict). A request authenticated by the cookie that changes
  something (not GET/HEAD) must also carry ``X-Requested-With: tablequest`` (the pages' script
  sets it; another site's form cannot), so cookies cannot be used for cross-site requests.
  Missing or wrong: 401 JSON for ``/v1`` and ``/openapi.json``, a redirect to ``/login`` for
  pages.
- **Host**: on a loopback bind only loopback Host headers are served (DNS rebinding).
- **Bodies**: a declared Content-Length over the route's limit is refused with 413 before
  reading; a body that grows past it while streaming, or whose next part takes longer than
  `body_timeout`, ends the request with 413 / 408 and closes the connection.
- **Headers**: a Content-Security-Policy without inline script or style, nosniff,
  no framing, no referrer.
- **Access log**: method, path (never the query string: ``/login?token=``), status, time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any

from tablequest.service.config import Limits, is_loopback

__all__ = ["COOKIE", "CSP", "Guard", "token_matches"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "tq_token"
CSRF_HEADER = b"x-requested-with"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
PUBLIC_PREFIXES = ("/login", "/static/")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UPLOAD_PATHS = ("/v1/ingest",)

log = logging.getLogger("tablequest.serve")


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the server's."""
    return given is not None and secrets.compare_digest(given.encode(), token.encode())


class Guard:
    """The ASGI middleware described in the module doc."""

    def __init__(self, app: ASGIApp, *, token: str | None, host: str, limits: Limits) -> None:
        self.app = app
        self.token = token
        self.limits = limits
        self.loopback = is_loopback(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = {"status": 0, "guard": False}
        path: str = scope.get("path", "")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                message["headers"] = list(message.get("headers") or []) + SECURITY_HEADERS
            await send(message)

        async def app_send(message: Message) -> None:
            if not state["guard"]:  # after the guard answered, the app's reply is dropped
                await send_with_headers(message)

        async def refuse(status: int, body: bytes) -> Message:
            if not state["guard"]:
                state["guard"] = True
                # the body was cut off mid-way: what follows on this connection is not a request
                await _respond(send_with_headers, status, body, [(b"connection", b"close")])
            return {"type": "http.disconnect"}

        try:
            refusal = self._refusal(scope, path)
            if refusal is not None:
                await _respond(send_with_headers, *refusal)
                return
            limited = self._limited(receive, self._limit(path), refuse)
            await self.app(scope, limited, app_send)
        finally:
            ms = (time.perf_counter() - started) * 1000
            log.info("%s %s %s %.1fms", scope.get("method"), path, state["status"], ms)

    def _limit(self, path: str) -> int:
        if path.startswith(UPLOAD_PATHS):
            return self.limits.max_upload_bytes
        return self.limits.max_body_bytes

    def _refusal(self, scope: Scope, path: str) -> tuple[int, bytes, list[Any]] | None:
        headers = dict(scope.get("headers") or [])
        if self.loopback and not _loopback_host(headers.get(b"host", b"").decode("latin-1")):
            return 400, _error("bad_host", "this server answers to loopback host names only"), []
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self._limit(path)
            except ValueError:
                return 400, _error("bad_request", "invalid Content-Length"), []
            if too_big:
                return 413, _error("too_large", _size_message(self._limit(path))), []
        if self.token is None or path.startswith(PUBLIC_PREFIXES):
            return None
        bearer = _bearer(headers.get(b"authorization"))
        if bearer is not None:
            if token_matches(bearer, self.token):
                return None
            return _unauthorized(path, "wrong token")
        cookie = _cookie(headers.get(b"cookie"))
        if not token_matches(cookie, self.token):
            return _unauthorized(path, "a token is required" if cookie is None else "wrong token")
        if scope.get("method") not in SAFE_METHODS and headers.get(CSRF_HEADER) != b"tablequest":
            message = "cookie-authenticated requests that change data need X-Requested-With"
            return 403, _error("csrf", message), []
        return None

    def _limited(
        self, receive: Receive, limit: int, refuse: Callable[[int, bytes], Awaitable[Message]]
    ) -> Receive:
        seen = 0
        complete = False
        timeout = self.limits.body_timeout

        async def wrapped() -> Message:
            nonlocal seen, complete
            if complete:  # the body is in: waiting now is waiting for a disconnect (streams)
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), timeout=timeout)
            except TimeoutError:
                return await refuse(408, _error("timeout", "the request body came too slowly"))
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > limit:
                    return await refuse(413, _error("too_large", _size_message(limit)))
            return message

        return wrapped


def _loopback_host(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return bool(name) and is_loopback(name)


def _bearer(value: bytes | None) -> str | None:
    if value is None:
        return None
    scheme, _, credentials = value.decode("latin-1").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else ""


def _cookie(value: bytes | None) -> str | None:
    if value is None:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(value.decode("latin-1"))
    except Exception:  # a malformed Cookie header is no cookie
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def _error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def _size_message(limit: int) -> str:
    return f"request body over the server's limit of {limit:,} bytes"


def _unauthorized(path: str, why: str) -> tuple[int, bytes, list[Any]]:
    if path.startswith("/v1") or path == "/openapi.json":
        message = f"{why}: send Authorization: Bearer TOKEN (printed by `tablequest serve`)"
        return 401, _error("unauthorized", message), [(b"www-authenticate", b"Bearer")]
    return 303, b"", [(b"location", b"/login")]


async def _respond(send: Send, status: int, body: bytes, headers: list[Any] | None = None) -> None:
    kind = b"application/json" if body.startswith(b"{") else b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
