"""The model-request guard: the suite may only reach loopback hosts."""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.llm import ModelRequestsDisallowed, OpenAICompatible, check_model_request
from tablequest.llm.guard import is_loopback, model_requests_allowed


def test_suite_runs_with_requests_disallowed() -> None:
    assert model_requests_allowed() is False


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/v1", "http://localhost/v1", "http://[::1]:8080/v1", "HTTP://LOCALHOST"],
)
def test_loopback_allowed(url: str) -> None:
    assert is_loopback(url)
    check_model_request(url)


@pytest.mark.parametrize(
    "url",
    ["https://api.openai.com/v1", "http://10.0.0.5:8000/v1", "http://127.0.0.1.evil.com/v1", "x"],
)
def test_remote_refused(url: str) -> None:
    assert not is_loopback(url)
    with pytest.raises(ModelRequestsDisallowed, match="TABLEQUEST_ALLOW_MODEL_REQUESTS=0"):
        check_model_request(url)


def test_client_refuses_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = OpenAICompatible("https://api.openai.com/v1", "gpt-4o-mini", "sk-test")
    sent: list[Any] = []
    monkeypatch.setattr(llm._client.chat.completions, "create", lambda **kw: sent.append(kw))
    with pytest.raises(ModelRequestsDisallowed, match=r"api\.openai\.com"):
        llm.chat([{"role": "user", "content": "hi"}])
    assert sent == [] and llm.http_requests == 0
    llm.close()


def test_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEQUEST_ALLOW_MODEL_REQUESTS", "1")
    assert model_requests_allowed()
    check_model_request("https://api.openai.com/v1")
    monkeypatch.delenv("TABLEQUEST_ALLOW_MODEL_REQUESTS")
    assert model_requests_allowed()
    monkeypatch.setenv("TABLEQUEST_ALLOW_MODEL_REQUESTS", "false")
    assert not model_requests_allowed()
