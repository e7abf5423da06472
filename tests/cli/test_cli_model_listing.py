"""`--llm-url` without `--model`: when the server's models cannot be listed, the exit status
says whose fault it is. A server that cannot be reached is a run failure (exit 1, as with
``--model``); a server that answers without a usable list, or with several models, is bad
input (exit 2: pass ``--model``)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tablequest.cli import app
from tablequest.llm.stub import StubServer, _json

runner = CliRunner()


class _Several(StubServer):
    """A server that lists two models."""

    def _handle(self, method: str, path: str, body: Any) -> Any:
        if method == "GET" and path.rstrip("/") == "/v1/models":
            return _json(200, {"data": [{"id": "a-7b"}, {"id": "b-70b"}]})
        return super()._handle(method, path, body)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("k,v\nx,1\n", encoding="utf-8")
    return path


def ask_without_model(table: Path, url: str) -> Result:
    return runner.invoke(app, ["ask", "what is v?", "-s", str(table), "--llm-url", url, "--json"])


def test_an_unreachable_server_is_a_run_failure_with_or_without_model(table: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connection refused
    result = ask_without_model(table, url)
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "failed" and "connection refused" in error["message"]
    assert url in error["message"] and "cannot be listed" in error["message"]
    named = runner.invoke(
        app, ["ask", "what is v?", "-s", str(table), "--llm-url", url, "--model", "m"]
    )
    assert named.exit_code == 1, named.output


def test_a_server_without_a_usable_list_or_with_several_is_bad_input(table: Path) -> None:
    with StubServer(["hi"]) as server:
        no_route = ask_without_model(table, server.url.replace("/v1", "/nowhere/v1"))
    assert no_route.exit_code == 2, no_route.output
    error = json.loads(no_route.stdout)["error"]
    assert error["code"] == "usage" and "HTTP 404" in error["message"]
    assert "--model" in error["message"]
    with _Several(["hi"]) as server:
        several = ask_without_model(table, server.url)
    assert several.exit_code == 2, several.output
    assert "a-7b, b-70b" in json.loads(several.stdout)["error"]["message"]
