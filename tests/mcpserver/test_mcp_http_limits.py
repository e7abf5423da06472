"""`tablequest mcp --http` under hostile clients (issue 40): half-open sockets, unfinished
heads and bodies (serve's connection protocol and guard), and the ``Origin`` allowlist —
against the real server (`uvicorn_config`, what the command runs) on a free loopback port."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.mcpserver.conftest import TOKEN, Bed, running_http
from tests.serve.test_serve_connections import closed_within, room_for_sockets, wait_for
from tests.testdata import free_port
from typer.testing import CliRunner

from tablequest.cli.app import app
from tablequest.mcpserver import OriginGate, open_service
from tablequest.service import Limits, ServeConfig, ServeError, normalize_origin

AUTH = {"Authorization": f"Bearer {TOKEN}"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}},
}  # fmt: skip
POST = {**AUTH, "Accept": "application/json, text/event-stream"}


@contextmanager
def serving(bed: Bed, host: str = "127.0.0.1", **options: Any) -> Iterator[tuple[str, Any]]:
    """An MCP HTTP server without a model over the bed's store, bound to 127.0.0.1 whatever
    `host` its configuration names (so a public bind's rules can be tested here); yields
    the /mcp URL and the connection budget."""
    origins = options.pop("allow_origins", ())
    config = ServeConfig(
        store=bed.store, trace_dir=bed.traces, token=TOKEN, host=host, limits=Limits(**options),
        allow_origins=origins,
    )  # fmt: skip
    service = open_service(config, warm=False)
    try:
        with running_http(service) as (url, server):
            yield url, server.config.http.budget
    finally:
        service.close()


def _raw(url: str, sockets: list[socket.socket], data: bytes) -> socket.socket:
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sockets.append(sock)
    sock.sendall(data)
    return sock


def test_half_open_sockets_do_not_lock_out_a_client_with_the_token(bed: Bed) -> None:
    """More half-open sockets than the connection budget: the oldest are closed to make
    room, and an authenticated MCP request is answered at once."""
    n = room_for_sockets(400)
    cap = n // 2
    limits = {"max_connections": cap, "max_requests": 8, "max_streams": 4}
    sockets: list[socket.socket] = []
    try:
        with serving(bed, header_timeout=60, **limits) as (url, budget):
            for _ in range(n):
                _raw(url, sockets, b"POST /mcp HTTP/1.1\r\nHost: 127")
            wait_for(lambda: budget.evicted >= n - cap)
            started = time.perf_counter()
            response = httpx.post(url, json=INITIALIZE, headers=POST, timeout=10)
            seconds = time.perf_counter() - started
            assert response.status_code == 200, response.text
            assert "serverInfo" in response.text
            assert seconds < 2.0, f"{seconds:.3f} s behind {n} half-open sockets"
            assert budget.evicted >= n - cap + 1 and len(budget.open) <= cap
            assert closed_within(sockets[0], 5) == b""  # the longest-waiting one made room
    finally:
        for sock in sockets:
            sock.close()


def test_an_unfinished_head_and_a_stalled_body_are_closed(bed: Bed) -> None:
    sockets: list[socket.socket] = []
    try:
        with serving(bed, header_timeout=0.5, body_timeout=0.5) as (url, _):
            partial = _raw(url, sockets, b"POST /mcp HTTP/1.1\r\nHost: 127")
            stalled = _raw(url, sockets, (
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b'\r\nContent-Length: 100\r\n\r\n{"j'
            ))  # fmt: skip
            started = time.monotonic()
            head = closed_within(partial, 5)
            assert head.startswith(b"HTTP/1.1 408") and b"within 0.5 s" in head
            body = closed_within(stalled, 5)
            assert body.startswith(b"HTTP/1.1 408") and b"too slowly" in body
            assert 0.4 < time.monotonic() - started < 5
            ok = httpx.post(url, json=INITIALIZE, headers=POST, timeout=10)
            assert ok.status_code == 200  # the server itself is unaffected
    finally:
        for sock in sockets:
            sock.close()


def test_a_public_bind_serves_only_the_allowed_origins(bed: Bed) -> None:
    origins = ("https://App.Example:443", "http://localhost:3000")
    with serving(bed, host="0.0.0.0", allow_origins=origins) as (url, _):

        def initialize(origin: str | None) -> httpx.Response:
            headers = {**POST, **({"Origin": origin} if origin is not None else {})}
            return httpx.post(url, json=INITIALIZE, headers=headers, timeout=10)

        for allowed in ("https://app.example", "http://localhost:3000", None):
            assert initialize(allowed).status_code == 200, allowed  # None: not a browser
        for refused in ("https://evil.example", "http://localhost:3001", "http://127.0.0.1:8766",
                        "null", "https://app.example.evil.example"):  # fmt: skip
            response = initialize(refused)
            assert response.status_code == 403, refused
            error = response.json()["error"]
            assert error["code"] == "forbidden_origin" and "--allow-origin" in error["message"]
        no_token = httpx.post(url, json=INITIALIZE, headers={"Origin": "https://evil.example"})
        assert no_token.status_code == 403  # refused before the token is even looked at


def test_a_loopback_bind_serves_loopback_origins(bed: Bed) -> None:
    with serving(bed) as (url, _):
        for origin, status in [("http://localhost:5173", 200), ("http://127.0.0.1", 200),
                               ("http://[::1]:8080", 200), ("https://evil.example", 403),
                               ("http://localhost.evil.example", 403)]:  # fmt: skip
            headers = {**POST, "Origin": origin}
            response = httpx.post(url, json=INITIALIZE, headers=headers, timeout=10)
            assert response.status_code == status, (origin, response.text)


def test_origins_are_spelled_as_browsers_send_them() -> None:
    assert normalize_origin("HTTPS://App.Example.com:443/") == "https://app.example.com"
    assert normalize_origin("http://[::1]:8080") == "http://[::1]:8080"
    assert normalize_origin("http://host:80") == "http://host"
    for bad in ("app.example.com", "ftp://x", "https://x/path", "https://x?q=1", "null",
                "https://user@x", "https://x:99999", ""):  # fmt: skip
        with pytest.raises(ServeError, match="--allow-origin takes an origin"):
            normalize_origin(bad)
    with pytest.raises(ServeError, match="--allow-origin"):
        ServeConfig(store=Path("s"), trace_dir=Path("t"), token=TOKEN, allow_origins=("*",))
    gate = OriginGate(_nothing, allowed=["https://a.example"], loopback=False)
    assert gate.allows("https://a.example") and not gate.allows("http://localhost")


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that answers nothing (the gate's checks are called directly)."""


def test_the_command_passes_allowed_origins_and_refuses_bad_ones(
    bed: Bed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.mcpserver as mcp_pkg

    seen: list[ServeConfig] = []

    def run_http(service: Any) -> None:
        seen.append(service.state.config)
        service.close()

    monkeypatch.setattr(mcp_pkg, "run_http", run_http)
    base = ["mcp", str(bed.store), "--http", f"127.0.0.1:{free_port()}", "--token-file",
            str(tmp_path / "token"), "--trace-dir", str(bed.traces)]  # fmt: skip
    runner = CliRunner()
    result = runner.invoke(app, [*base, "--allow-origin", "https://A.example",
                                 "--allow-origin", "http://localhost:3000"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen[-1].allow_origins == ("https://a.example", "http://localhost:3000")
    assert seen[-1].limits.header_timeout == 10 and seen[-1].limits.max_asks == 4  # [serve]
    bad = runner.invoke(app, [*base, "--allow-origin", "https://a.example/path"])
    assert bad.exit_code == 2 and "--allow-origin takes an origin" in bad.output
    assert len(seen) == 1
