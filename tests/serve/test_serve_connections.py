"""Connections (issue 25): half-open sockets, head and body deadlines, the socket budget,
the request cap, and the event-stream cap and stall timeout — against the real server with
the settings `tablequest serve` uses (`uvicorn_options`), on a free loopback port."""

from __future__ import annotations

import resource
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from tests.testdata import free_port
from typer.testing import CliRunner

from tablequest.cli.app import app as cli_app
from tablequest.corpus import Store
from tablequest.serve import create_app
from tablequest.service import Limits, ServeConfig, ServeError, uvicorn_options
from tablequest.service.asks import AskJob, StreamingTrace

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HALF_OPEN = 1000
FAST = {"header_timeout": 0.5, "body_timeout": 0.5, "stream_idle_timeout": 0.5}


class Served:
    def __init__(self, url: str, port: int, app: Any, options: dict[str, Any]) -> None:
        self.url, self.port, self.app = url, port, app
        self.budget = options["http"].budget
        self.sockets: list[socket.socket] = []  # closed when the server stops

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=10)

    def raw(self, data: bytes = b"") -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.sockets.append(sock)
        if data:
            sock.sendall(data)
        return sock

    def hold_ask(self, gate: threading.Event, events: int = 1, size: int = 10) -> AskJob:
        """An ask that records `events` events of `size` characters, then waits for `gate`."""

        def run(job: AskJob, trace: StreamingTrace) -> Any:
            for i in range(events):
                trace.event("decision", stage="test", step=i, pad="x" * size)
            gate.wait(30)
            raise RuntimeError("the test ask ends here")

        job: AskJob = self.app.state.tq.asks.start("q", "test", None, run)
        return job


@contextmanager
def serving(tmp_path: Path, **limits: Any) -> Iterator[Served]:
    Store(tmp_path / "s.duckdb").close()
    config = ServeConfig(
        store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=TOKEN,
        token_file=tmp_path / "token", limits=Limits(**limits),
    )  # fmt: skip
    app = create_app(config)
    options = uvicorn_options(config)
    for bound in ("host", "port"):  # the test binds its own socket
        options.pop(bound)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    served = Served(f"http://127.0.0.1:{port}", port, app, options)
    try:
        yield served
    finally:
        for client_sock in served.sockets:
            client_sock.close()
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing `sock` (fails if it stays open `seconds`)."""
    sock.settimeout(seconds)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def room_for_sockets(n: int) -> int:
    """Raise the soft open-file limit for `n` client and `n` server sockets (both ends live
    in this process); the number that fits when the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * n + 512
    if hard != resource.RLIM_INFINITY and hard < need:
        return max(100, (hard - 512) // 2)
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return n


def test_half_open_connections_do_not_delay_an_authenticated_request(tmp_path: Path) -> None:
    n = room_for_sockets(HALF_OPEN)
    with serving(tmp_path, header_timeout=60) as served:
        for _ in range(n):
            served.raw(b"GET /v1/vers")
        wait_for(lambda: len(served.budget.open) >= n)
        with served.client() as client:
            started = time.perf_counter()
            response = client.get("/v1/version")
            seconds = time.perf_counter() - started
        assert response.status_code == 200 and response.json()["api"] == "v1"
        assert seconds < 1.0, f"{seconds:.3f} s with {n} half-open connections"
        assert len(served.budget.open) >= n and served.budget.evicted == 0  # all still open


def test_an_unfinished_request_head_is_closed_after_the_header_timeout(tmp_path: Path) -> None:
    with serving(tmp_path, **FAST) as served:
        partial, silent = served.raw(b"GET /v1/version HTTP/1.1\r\nHost: 127"), served.raw()
        started = time.monotonic()
        answer = closed_within(partial, 5)
        assert answer.startswith(b"HTTP/1.1 408") and b"within 0.5 s" in answer
        assert closed_within(silent, 5) == b""  # nothing sent: closed without a word
        assert 0.4 < time.monotonic() - started < 5
        # a kept-alive connection: the next request's head has the same deadline
        kept = served.raw(b"GET /v1/version HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")  # fmt: skip
        kept.settimeout(5)
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /v1/ver")
        assert closed_within(kept, 5).startswith(b"HTTP/1.1 408")


def test_a_full_budget_closes_the_longest_waiting_connection(tmp_path: Path) -> None:
    limits = {"max_connections": 6, "max_requests": 2, "max_streams": 1, "header_timeout": 60}
    with serving(tmp_path, **limits) as served:
        waiting = [served.raw(b"GET /") for _ in range(6)]
        wait_for(lambda: len(served.budget.open) == 6)
        with served.client() as client:
            assert client.get("/v1/version").status_code == 200
        assert closed_within(waiting[0], 5) == b""  # the oldest made room
        waiting[1].settimeout(0.2)
        with pytest.raises(TimeoutError):  # the others are still open
            waiting[1].recv(1)
        assert served.budget.evicted == 1


def test_a_stalled_body_gets_408_and_a_held_request_slot_gives_503(tmp_path: Path) -> None:
    with serving(tmp_path, max_requests=1, **FAST) as served:
        stalled = served.raw(
            b"POST /v1/asks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b'\r\nContent-Length: 100\r\n\r\n{"q'
        )
        time.sleep(0.1)  # its handler waits for the rest of the body: the one request slot
        with served.client() as client:
            refused = client.get("/v1/version")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "--max-requests" in refused.json()["error"]["message"]
            answer = closed_within(stalled, 3)  # not left to keep-alive (5 s)
            assert answer.startswith(b"HTTP/1.1 408") and b"too slowly" in answer
            assert client.get("/v1/version").status_code == 200  # the slot is back


def test_event_streams_have_their_own_cap(tmp_path: Path) -> None:
    gate = threading.Event()
    with serving(tmp_path, max_streams=1, max_requests=2) as served, served.client() as client:
        job = served.hold_ask(gate)
        events = f"/v1/asks/{job.id}/events"
        with client.stream("GET", events) as first:
            assert first.status_code == 200
            refused = client.get(events)
            assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
            assert "--max-streams" in refused.json()["error"]["message"]
            assert client.get("/v1/version").status_code == 200  # streams take no request slot
            assert client.get("/v1/version").status_code == 200
        wait_for(lambda: _stream_opens(client, job.id))  # the slot is back once it closed
        gate.set()


def test_a_client_that_stops_reading_gives_its_stream_slot_back(tmp_path: Path) -> None:
    gate = threading.Event()
    with serving(tmp_path, max_streams=1, **FAST) as served, served.client() as client:
        job = served.hold_ask(gate, events=400, size=20_000)  # 8 MB: more than any buffer
        wait_for(lambda: len(job.events) == 400)
        reader = socket.socket()
        served.sockets.append(reader)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", served.port))
        reader.sendall(f"GET /v1/asks/{job.id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())  # fmt: skip
        time.sleep(0.2)
        assert client.get(f"/v1/asks/{job.id}/events").status_code == 429  # it holds the slot
        # it reads nothing: its writes stall, and after 0.5 s the server drops it
        wait_for(lambda: client.get(f"/v1/asks/{job.id}").status_code == 200 and
                 _stream_opens(client, job.id), seconds=10)  # fmt: skip
        gate.set()


def _stream_opens(client: httpx.Client, ask_id: str) -> bool:
    with client.stream("GET", f"/v1/asks/{ask_id}/events") as response:
        return response.status_code == 200


runner = CliRunner()


def test_serve_options_reach_the_limits_and_bad_ones_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.serve as serve_pkg

    seen: list[Any] = []
    monkeypatch.setattr(serve_pkg, "run_server", lambda config: seen.append(config))
    Store(tmp_path / "s.duckdb").close()
    base = ["serve", "--token-file", str(tmp_path / "token"), "--store", str(tmp_path / "s.duckdb"),
            "--port", str(free_port())]  # fmt: skip
    options = ["--header-timeout", "3", "--body-timeout", "4", "--max-connections", "900",
               "--max-requests", "100", "--max-streams", "8",
               "--stream-idle-timeout", "20"]  # fmt: skip
    result = runner.invoke(cli_app, [*base, *options])
    assert result.exit_code == 0, result.output
    limits = seen[-1].limits
    assert (limits.header_timeout, limits.body_timeout, limits.stream_idle_timeout) == (3, 4, 20)
    assert (limits.max_connections, limits.max_requests, limits.max_streams) == (900, 100, 8)
    small = runner.invoke(cli_app, [*base, "--max-connections", "100"])
    assert small.exit_code != 0 and len(seen) == 1
    assert "--max-connections (100) must be above" in small.output
    with pytest.raises(ServeError, match="--header-timeout must be a positive"):
        Limits(header_timeout=0)
