"""A server takes its port and (``serve``) its store's writer lock before the token
(`tablequest.service.claims`): a port in use, or a store another ``serve`` writes, is one
``error:`` line and exit 1, and nothing is written or printed before it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli.app import app
from tablequest.corpus import Store, StoreLocked
from tablequest.service import CannotListen, ServeConfig, ServerState
from tablequest.service.claims import bind_sockets, lock_path, lock_store

runner = CliRunner()


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port another process would hold: bound and listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {
        **os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache"),
    }  # fmt: skip


def test_serve_on_a_port_in_use_says_so_and_exits_1_before_the_token(
    tmp_path: Path, store: Path, taken: int
) -> None:
    """It aborted (SIGABRT, 134) after printing a new token: uvicorn's bind failed after the
    app's startup, with the warm-up thread still inside DuckDB at exit."""
    token = tmp_path / "token"
    args = ["serve", "--store", str(store), "--port", str(taken), "--token-file", str(token)]
    done = subprocess.run(
        [sys.executable, "-m", "tablequest", *args],
        capture_output=True, text=True, timeout=60, env=_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{taken}" in done.stderr and "in use" in done.stderr
    assert "--port" in done.stderr and "Traceback" not in done.stderr
    assert not token.exists() and "token" not in done.stdout.lower()


def test_mcp_http_on_a_port_in_use_exits_1_before_the_token(
    tmp_path: Path, store: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.mcpserver as mcp_pkg

    seen: list[Any] = []
    monkeypatch.setattr(mcp_pkg, "run_http", lambda service: seen.append(service.close()))
    token = tmp_path / "token"
    args = ["mcp", str(store), "--http", f"127.0.0.1:{taken}", "--token-file", str(token)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert f"127.0.0.1:{taken}" in result.output and "in use" in result.output
    assert seen == [] and not token.exists()


def test_a_second_serve_of_a_store_is_refused_while_mcp_may_read_it(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.mcpserver as mcp_pkg
    import tablequest.serve as serve_pkg

    monkeypatch.setattr(serve_pkg, "run_server", lambda config: None)
    monkeypatch.setattr(mcp_pkg, "run_http", lambda service: service.close())
    first = lock_store(store)  # what a running `serve` of the store holds
    try:
        token = tmp_path / "token"
        serve = ["serve", "--store", str(store), "--port", "1", "--token-file", str(token)]
        refused = runner.invoke(app, serve)
        assert refused.exit_code == 1, refused.output
        assert str(store) in refused.output and "in use" in refused.output
        assert f"PID {os.getpid()}" in refused.output and not token.exists()
        port = _free_port()
        mcp = ["mcp", str(store), "--http", f"127.0.0.1:{port}", "--token-file", str(token)]
        reader = runner.invoke(app, mcp)  # a reader takes no lock
        assert reader.exit_code == 0, reader.output
    finally:
        assert first is not None
        os.close(first)
    again = lock_store(store)  # released: the next serve may start
    assert again is not None
    os.close(again)


def test_the_writer_lock_goes_with_a_killed_process(store: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; "
        "from tablequest.service.claims import lock_store; "
        "lock_store(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, str(store)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(StoreLocked, match=f"PID {child.pid}"):
            lock_store(store)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    fd = lock_store(store)
    assert fd is not None and lock_path(store).exists()
    os.close(fd)


def test_bind_sockets_names_the_address_in_use(taken: int) -> None:
    with pytest.raises(CannotListen, match=f"127.0.0.1:{taken}: the address is in use"):
        bind_sockets("127.0.0.1", taken, hint="--http HOST:PORT")
    assert CannotListen.exit_code == 1


def test_shutdown_waits_for_the_warm_up(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm-up thread still reading DuckDB when the interpreter exits aborts the process."""
    from fastapi.testclient import TestClient

    from tablequest.serve import create_app

    finished: list[bool] = []

    def slow_warm(self: ServerState) -> None:
        time.sleep(0.3)
        finished.append(True)

    monkeypatch.setattr(ServerState, "warm", slow_warm)
    config = ServeConfig(store=store, trace_dir=tmp_path / "traces", token=None)
    with TestClient(create_app(config)):
        pass
    assert finished == [True]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
