"""`tablequest doctor` through the CLI: a healthy stub model, a refused port, a 401, a reply
that is not JSON, no model at all, embeddings, the sandbox, the extras and stores."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.llm.stub import Fault, StubServer

runner = CliRunner()


def _doctor(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = runner.invoke(app, ["doctor", *args, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def _by_name(checks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in checks}


def _reply(body: dict[str, Any]) -> str:
    return '{"ok": true}' if body.get("response_format") else "ok"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_healthy_model(tmp_path: Path) -> None:
    with StubServer(_reply, max_model_len=4096) as stub:
        status, checks = _doctor("--llm-url", stub.url, "--model", "stub-model", "--check", "model")
        chats = stub.chat_requests
    assert status == 0, checks
    found = _by_name(checks)
    assert list(found) == ["model", "chat", "json reply", "context length", "embeddings"]
    assert all(c["ok"] is True for c in checks) and set(checks[0]) == {"check", "ok", "detail"}
    assert stub.url in found["model"]["detail"] and "'ok'" in found["chat"]["detail"]
    assert found["json reply"]["detail"] == 'parsed {"ok": true}'
    assert "4,096 tokens" in found["context length"]["detail"]
    assert "embeds with 'stub-model'" in found["embeddings"]["detail"]
    assert len(chats) == 2 and chats[1]["response_format"] == {"type": "json_object"}


def test_unknown_context_length_is_not_a_failure() -> None:
    with StubServer(_reply) as stub:  # reports no max_model_len; no /props
        status, checks = _doctor("--llm-url", stub.url, "--model", "stub-model", "--check", "model")
        args = ["doctor", "--llm-url", stub.url, "--model", "stub-model", "--check", "model"]
        human = runner.invoke(app, args)
    context = _by_name(checks)["context length"]
    assert status == 0 and context["ok"] is None and context["detail"].startswith("unknown")
    lines = human.output.splitlines()
    assert human.exit_code == 0 and lines[-1] == "no check failed"
    assert [line[:1] for line in lines[:-1]] == ["✓", "✓", "✓", "–", "✓"]
    assert lines[3].startswith("– context length  unknown")


def test_refused_port_names_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = runner.invoke(app, ["doctor", "--llm-url", url, "--model", "m", "--check", "model"])
    assert result.exit_code == 1
    [chat] = [line for line in result.output.splitlines() if line.startswith("✗ chat")]
    assert url in chat and "refused" in chat
    assert "– json reply" in result.output and "1 of 4 checks failed" in result.output


def test_rejected_key_fails_at_once_without_retries() -> None:
    with StubServer(lambda body: Fault.status(401, message="bad key")) as stub:
        status, checks = _doctor("--llm-url", stub.url, "--model", "stub-model", "--check", "model")
        chats = stub.chat_requests
    chat = _by_name(checks)["chat"]
    assert status == 1 and chat["ok"] is False
    assert "401" in chat["detail"] and stub.url in chat["detail"]
    assert len(chats) == 1  # no retry, and the JSON check is skipped
    assert _by_name(checks)["json reply"]["ok"] is None


def test_a_silent_server_is_cut_at_the_timeout_without_retries() -> None:
    with StubServer(lambda body: Fault.delay(30, "ok")) as stub:
        args = ["--llm-url", stub.url, "--model", "stub-model", "--check", "model"]
        status, checks = _doctor(*args, "--timeout", "1")
        chats = stub.chat_requests
    chat = _by_name(checks)["chat"]
    assert status == 1 and chat["ok"] is False and stub.url in chat["detail"]
    assert "within 1 s" in chat["detail"] and "--timeout" in chat["detail"]
    assert len(chats) == 1 and _by_name(checks)["json reply"]["ok"] is None


def test_a_reply_no_method_can_read_fails_the_json_check() -> None:
    with StubServer(
        lambda body: "Sure! Here you go." if body.get("response_format") else "ok"
    ) as s:
        status, checks = _doctor("--llm-url", s.url, "--model", "stub-model", "--check", "model")
    found = _by_name(checks)
    assert status == 1 and found["chat"]["ok"] is True and found["json reply"]["ok"] is False
    assert "Sure! Here you go." in found["json reply"]["detail"]
    fenced = 'Here:\n```json\n{"ok": true}\n```'
    with StubServer(lambda body: fenced if body.get("response_format") else "ok") as s:
        status, checks = _doctor("--llm-url", s.url, "--model", "stub-model", "--check", "model")
    assert status == 0 and "extra text" in _by_name(checks)["json reply"]["detail"]


def test_no_model_is_a_failed_line_with_the_hint_and_exit_4() -> None:
    status, checks = _doctor("--check", "model")
    assert status == 4 and checks == [
        {"check": "model", "ok": False, "detail": checks[0]["detail"]}
    ]
    assert "--llm-url" in checks[0]["detail"] and "TABLEQUEST_LLM_URL" in checks[0]["detail"]
    result = runner.invoke(app, ["doctor", "--check", "model"])
    assert result.exit_code == 4 and "✗ model" in result.output


def test_a_configured_embeddings_url_must_answer() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with StubServer(_reply) as stub:
        args = ["--llm-url", stub.url, "--model", "stub-model", "--check", "model"]
        status, checks = _doctor(*args, "--embed-url", url, "--embed-model", "e")
        ok_status, ok_checks = _doctor(*args, "--embed-url", stub.url, "--embed-model", "e")
    embeddings = _by_name(checks)["embeddings"]
    assert status == 1 and embeddings["ok"] is False
    assert embeddings["detail"].startswith(f"cannot reach the embeddings server {url}: connection")
    assert (
        ok_status == 0 and "16-dim vectors from 'e'" in _by_name(ok_checks)["embeddings"]["detail"]
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_store_opens_read_only_and_bad_stores_fail(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("city,people\nOslo,709037\n")
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        ingest(store, [tmp_path / "t.csv"])
    before = _digest(path)
    status, checks = _doctor("--check", "store", "--store", str(path))
    assert status == 0 and checks[0]["ok"] is True
    assert "1 tables, opened read-only" in checks[0]["detail"] and _digest(path) == before
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database")
    status, checks = _doctor("--check", "store", "-s", str(text))
    assert status == 1 and checks[0]["ok"] is False and "not a DuckDB store" in checks[0]["detail"]
    missing = tmp_path / "typo.duckdb"
    status, checks = _doctor("--check", "store", "-s", str(missing))
    assert status == 1 and "no store at" in checks[0]["detail"] and not missing.exists()
    status, checks = _doctor("--check", "store")  # no --store and no default store
    [none] = checks
    assert status == 0 and none["ok"] is None and none["detail"].startswith("none given")


def test_extras_are_listed_from_the_package_metadata() -> None:
    status, checks = _doctor("--check", "extras")
    extras = importlib.metadata.metadata("tablequest").get_all("Provides-Extra") or []
    assert [c["check"] for c in checks] == [f"extra {e}" for e in extras if e != "dev"]
    assert status == 0 and all(c["ok"] is not False for c in checks)
    serve = _by_name(checks)["extra serve"]  # the dev install has it
    assert serve["ok"] is True and serve["detail"].startswith("installed (")


def test_unknown_check_group_is_a_usage_error() -> None:
    result = runner.invoke(app, ["doctor", "--check", "gpu"])
    assert result.exit_code == 2 and "unknown check 'gpu'" in result.output


@pytest.mark.slow
def test_sandbox_isolation_is_measured() -> None:
    status, checks = _doctor("--check", "sandbox")
    [sandbox] = checks
    if shutil.which("bwrap"):
        assert status == 0 and sandbox["ok"] is True
        assert sandbox["detail"].startswith("bubblewrap") and "layers in force" in sandbox["detail"]
    else:  # strict isolation without bubblewrap: a failed line saying what to do
        assert status == 1 and sandbox["ok"] is False and "bubblewrap" in sandbox["detail"]
