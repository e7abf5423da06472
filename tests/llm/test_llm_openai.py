"""The real OpenAICompatible client driven through StubServer: every fault type, n, logprobs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tablequest.llm import (
    Fault,
    LLMBadResponse,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    ModelUnreachable,
    OpenAICompatible,
    StubServer,
    extract_json,
)
from tablequest.llm.modelserver import parse_retry_after

MSG = [{"role": "user", "content": "What is the answer?"}]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(min(seconds, 0.01))


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(sleeps: Sleeps) -> Iterator[Any]:
    clients: list[OpenAICompatible] = []

    def factory(url: str, **kw: Any) -> OpenAICompatible:
        options: dict[str, Any] = {
            "timeout": 2.0,
            "max_retries": 2,
            "backoff_base": 0.01,
            "sleep": sleeps,
        }
        options.update(kw)
        client = OpenAICompatible(url, "stub-model", **options)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


def test_plain_reply_and_usage(make: Any) -> None:
    with StubServer(["The answer is 42."]) as stub:
        [c] = make(stub.url).chat(MSG)
    assert c.text == "The answer is 42."
    assert c.finish_reason == "stop"
    assert c.token_logprobs is None
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens == 5
    assert c.latency_s > 0 and not c.cached
    body = stub.chat_requests[0]
    assert body["model"] == "stub-model" and body["messages"] == MSG
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1024
    assert "n" not in body and "logprobs" not in body


def test_timeout_is_sent_again_once_and_only_after_a_probe(make: Any, sleeps: Sleeps) -> None:
    with StubServer([Fault.delay(3, "late")] * 3) as stub:
        llm = make(stub.url, timeout=0.2, max_retries=2)
        with pytest.raises(LLMTimeout) as info:
            llm.chat(MSG)
        paths = [r["path"] for r in stub.requests]
    chat = "/v1/chat/completions"
    assert paths == [chat, "/health?fail_on_no_slot=1", chat]  # max_retries=2 is not used up
    assert len(sleeps) == 1
    assert stub.url in str(info.value) and "stub-model" in str(info.value)
    assert "attempt 2" in str(info.value) and "timed out again" in str(info.value)
    assert info.value.url == stub.url


def test_500_then_success_is_retried(make: Any, sleeps: Sleeps) -> None:
    with StubServer([Fault.status(500), Fault.status(503), "recovered"]) as stub:
        [c] = make(stub.url).chat(MSG)
        assert len(stub.requests) == 3
    assert c.text == "recovered"
    assert len(sleeps) == 2
    assert all(0 <= s <= 0.04 for s in sleeps)  # full jitter under base * 2**attempt


def test_persistent_500_gives_up(make: Any) -> None:
    with StubServer([Fault.status(500, message="GPU on fire")] * 5) as stub:
        with pytest.raises(LLMUnavailable, match=r"HTTP 500 .*GPU on fire"):
            make(stub.url, max_retries=1).chat(MSG)
        assert len(stub.requests) == 2


def test_429_honours_retry_after(make: Any, sleeps: Sleeps) -> None:
    with StubServer([Fault.status(429, retry_after=0.05), "ok"]) as stub:
        [c] = make(stub.url).chat(MSG)
        assert len(stub.requests) == 2
    assert c.text == "ok"
    assert sleeps == [0.05]


def test_429_retry_after_is_capped(make: Any, sleeps: Sleeps) -> None:
    with StubServer([Fault.status(429, retry_after=3600), "ok"]) as stub:
        [c] = make(stub.url, retry_after_max=0.02).chat(MSG)
    assert c.text == "ok"
    assert sleeps == [0.02]


def test_malformed_json_is_bad_response_not_retried(make: Any) -> None:
    with StubServer([Fault.malformed_json(), "never"]) as stub:
        with pytest.raises(LLMBadResponse, match="not valid JSON"):
            make(stub.url).chat(MSG)
        assert len(stub.requests) == 1


def test_json_without_choices_is_bad_response(make: Any) -> None:
    body = '{"id": "x", "object": "chat.completion"}'
    with StubServer([Fault.malformed_json(body)]) as stub, pytest.raises(LLMBadResponse):
        make(stub.url).chat(MSG)


def test_truncated_reply_keeps_finish_reason_length(make: Any) -> None:
    with StubServer([Fault.truncated('{"rows": [1, 2], "cols": ["na')]) as stub:
        [c] = make(stub.url).chat(MSG)
    assert c.finish_reason == "length"
    assert extract_json(c.text) == {"rows": [1, 2]}


def test_empty_choices_is_bad_response(make: Any) -> None:
    with StubServer([Fault.empty_choices()]) as stub:
        with pytest.raises(LLMBadResponse, match="no choices"):
            make(stub.url).chat(MSG)
        assert len(stub.requests) == 1


def test_chatty_prose_around_json(make: Any) -> None:
    reply = (
        "Sure! Here is what you asked for:\n```json\n"
        '{"action": "select", "tables": ["t3", "t7"],}\n```\nLet me know if you need more.'
    )
    with StubServer([reply]) as stub:
        [c] = make(stub.url).chat(MSG)
    assert extract_json(c.text, dict) == {"action": "select", "tables": ["t3", "t7"]}


def test_empty_content_is_empty_text(make: Any) -> None:
    with StubServer([""]) as stub:
        [c] = make(stub.url).chat(MSG)
    assert c.text == "" and c.finish_reason == "stop"


def test_connection_refused_is_unreachable_at_once(make: Any, sleeps: Sleeps) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = make(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ModelUnreachable, match="connection refused") as info:
        llm.chat(MSG)
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "\n" not in str(info.value)  # one line naming the URL and the cause
    assert sleeps == []  # refused: not retried
    assert llm.http_requests == 1


def test_dns_failure_is_unreachable_without_retries(make: Any, sleeps: Sleeps) -> None:
    # the lookup itself is faked (tests send nothing off the machine); the guard that allows
    # only loopback hosts in tests is lifted for this one call
    llm = make("http://no-such-host.invalid:8000/v1", max_retries=3)

    def no_such_host(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TABLEQUEST_ALLOW_MODEL_REQUESTS", "1")
        mp.setattr(socket, "getaddrinfo", no_such_host)
        with pytest.raises(ModelUnreachable, match="DNS lookup failed") as info:
            llm.chat(MSG)
    assert "no-such-host.invalid" in str(info.value)
    assert sleeps == []


def test_connection_lost_after_opening_is_still_retried(make: Any, sleeps: Sleeps) -> None:
    # a server that accepts and hangs up: the connection was opened, so it may be retried
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        stop = threading.Event()

        def hang_up() -> None:
            listener.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                conn.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        try:
            llm = make(f"http://127.0.0.1:{port}/v1", max_retries=2)
            with pytest.raises(LLMUnavailable) as info:
                llm.chat(MSG)
        finally:
            stop.set()
            thread.join(5)
    assert not isinstance(info.value, ModelUnreachable)
    assert len(sleeps) == 2 and llm.http_requests == 3


@pytest.mark.parametrize(
    ("code", "error", "pattern"),
    [
        (401, LLMUnavailable, "API key"),
        (403, LLMUnavailable, "API key"),
        (404, LLMUnavailable, "model name"),
        (400, LLMRequestRejected, "context length"),
        (422, LLMRequestRejected, "context length"),
    ],
)
def test_client_errors_are_not_retried(
    make: Any, code: int, error: type[Exception], pattern: str
) -> None:
    with StubServer([Fault.status(code, message="context length exceeded")] * 3) as stub:
        with pytest.raises(error, match=pattern):
            make(stub.url).chat(MSG)
        assert len(stub.requests) == 1


def test_n_passthrough(make: Any) -> None:
    with StubServer(["a", "b", "c"]) as stub:
        out = make(stub.url).chat(MSG, n=3, temperature=0.7)
        assert len(stub.requests) == 1
        assert stub.chat_requests[0]["n"] == 3
    assert [c.text for c in out] == ["a", "b", "c"]
    assert out[0].usage.prompt_tokens > 0
    assert out[1].usage.prompt_tokens == 0 and out[1].usage.completion_tokens == 0


def test_n_rejected_is_emulated_and_remembered(make: Any) -> None:
    with StubServer(["a", "b", "c", "d", "e"], n_mode="reject") as stub:
        llm = make(stub.url)
        out = llm.chat(MSG, n=3)
        assert sorted(c.text for c in out) == ["a", "b", "c"]
        assert len(stub.requests) == 4  # one rejected, three single requests
        assert llm.supports_n is False
        out = llm.chat(MSG, n=2)
        assert sorted(c.text for c in out) == ["d", "e"]
        assert len(stub.requests) == 6
        assert all("n" not in body for body in stub.chat_requests[1:])


def test_n_ignored_by_server_is_completed_by_single_requests(make: Any) -> None:
    with StubServer(["a", "b", "c"], n_mode="ignore") as stub:
        llm = make(stub.url)
        out = llm.chat(MSG, n=3)
        assert out[0].text == "a" and sorted(c.text for c in out[1:]) == ["b", "c"]
        assert len(stub.requests) == 3
        assert llm.supports_n is False


def test_emulated_n_requests_run_concurrently() -> None:
    # The three missing completions wait for each other at a barrier: sequential requests
    # would break it (after 10 s) and fail; concurrent ones all pass it.
    barrier = threading.Barrier(3, timeout=10)
    calls: list[int] = []

    def reply(body: dict[str, Any]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return "first"
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return Fault.status(500)
        return "later"

    with StubServer(reply, n_mode="ignore") as stub:
        llm = OpenAICompatible(stub.url, "m", max_retries=0, max_concurrency=4)
        out = llm.chat(MSG, n=4)
    assert [c.text for c in out] == ["first", "later", "later", "later"]


def test_logprobs_passthrough(make: Any) -> None:
    with StubServer(["two words"]) as stub:
        [c] = make(stub.url).chat(MSG, logprobs=True)
        assert stub.chat_requests[0]["logprobs"] is True
    assert c.token_logprobs is not None and len(c.token_logprobs) == 2
    assert all(-1 <= lp < 0 for lp in c.token_logprobs)


def test_logprobs_rejected_is_dropped_and_remembered(make: Any) -> None:
    with StubServer(["x", "y"], logprobs_mode="reject") as stub:
        llm = make(stub.url)
        [c] = llm.chat(MSG, logprobs=True)
        assert c.text == "x" and c.token_logprobs is None
        assert llm.supports_logprobs is False
        [c] = llm.chat(MSG, logprobs=True)
        assert c.text == "y"
        assert len(stub.requests) == 3
        assert "logprobs" not in stub.chat_requests[2]


def test_logprobs_ignored_gives_none(make: Any) -> None:
    with StubServer(["x"], logprobs_mode="ignore") as stub:
        [c] = make(stub.url).chat(MSG, logprobs=True)
    assert c.token_logprobs is None


def test_stop_and_response_format_passthrough(make: Any) -> None:
    fmt = {"type": "json_object"}
    with StubServer(["Thought: t\nAction: a\nObservation: invented"]) as stub:
        [c] = make(stub.url).chat(MSG, stop="Observation:", response_format=fmt)
        body = stub.chat_requests[0]
    assert c.text == "Thought: t\nAction: a\n"
    assert body["stop"] == ["Observation:"] and body["response_format"] == fmt


def test_missing_usage_is_estimated(make: Any) -> None:
    with StubServer(["12345678"], include_usage=False) as stub:
        [c] = make(stub.url).chat(MSG)
    assert c.usage.completion_tokens == 2 and c.usage.prompt_tokens > 0


def test_concurrency_is_limited(make: Any) -> None:
    inflight = 0
    peak = 0
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> str:
        nonlocal inflight, peak
        with lock:
            inflight += 1
            peak = max(peak, inflight)
        time.sleep(0.05)
        with lock:
            inflight -= 1
        return "ok"

    with StubServer(reply) as stub:
        llm = make(stub.url, max_concurrency=2)
        results: list[str] = []
        threads = [
            threading.Thread(target=lambda: results.append(llm.chat(MSG)[0].text)) for _ in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == ["ok"] * 6
    assert peak <= 2
    assert llm.http_requests == 6


def test_invalid_arguments() -> None:
    with pytest.raises(LLMUnavailable):
        OpenAICompatible("", "m")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAICompatible("http://127.0.0.1:1/v1", "m", max_concurrency=0)
    llm = OpenAICompatible("http://127.0.0.1:1/v1", "m")
    with pytest.raises(ValueError, match="n must be"):
        llm.chat(MSG, n=0)
    assert llm.describe() == {"backend": "openai", "url": "http://127.0.0.1:1/v1", "model": "m"}
    assert llm.name == "m @ http://127.0.0.1:1/v1"
    llm.close()


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "1"}) == 1.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after({"retry-after": date}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": date}, now=1445412500.0) == 0.0
