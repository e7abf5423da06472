"""A deadline per question bounds calls and retries; streaming; timeouts not re-sent blindly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import (
    DEFAULT_DEADLINE,
    ConfigError,
    Deadline,
    DeadlineExceeded,
    Fault,
    Instrumented,
    LLMTimeout,
    LLMUnavailable,
    OpenAICompatible,
    StubServer,
    UsageMeter,
    call_scope,
    current_scope,
    resolve_config,
)
from tablequest.llm.stub import fake_logprobs
from tablequest.trace import Trace

MSG = [{"role": "user", "content": "What is the answer?"}]
CHAT = "/v1/chat/completions"
HEALTH = "/health?fail_on_no_slot=1"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make() -> Iterator[Any]:
    clients: list[OpenAICompatible] = []

    def factory(url: str, **kw: Any) -> OpenAICompatible:
        options: dict[str, Any] = {"timeout": 2.0, "max_retries": 2, "backoff_base": 0.01}
        options.update(kw)
        client = OpenAICompatible(url, "stub-model", **options)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


def paths(stub: StubServer) -> list[str]:
    return [r["path"] for r in stub.requests]


# -- the Deadline object and the call scope ------------------------------------------------
def test_deadline_counts_down_and_says_how_to_raise_it() -> None:
    clock = FakeClock()
    deadline = Deadline(10, clock=clock)
    assert deadline.remaining() == 10 and not deadline.expired
    assert deadline.bound(60) == 10 and deadline.bound(3) == 3
    clock.now += 10
    assert deadline.expired and deadline.remaining() == 0
    with pytest.raises(DeadlineExceeded, match=r"deadline of 10 s passed before the call") as info:
        deadline.check(url="http://x/v1", model="m")
    assert "--deadline" in str(info.value) and "TABLEQUEST_DEADLINE" in str(info.value)
    assert info.value.model == "m"
    unlimited = Deadline(None)
    assert unlimited.remaining() is None and not unlimited.expired and unlimited.bound(5) == 5
    with pytest.raises(ValueError, match="seconds > 0"):
        Deadline(0)


class Recorder:
    def __init__(self) -> None:
        self.requests = 0
        self.retries: list[dict[str, Any]] = []

    def on_request(self) -> None:
        self.requests += 1

    def on_retry(self, info: dict[str, Any]) -> None:
        self.retries.append(info)

    def on_fallback(self, info: dict[str, Any]) -> None:
        self.retries.append({"fallback": info})


def test_scopes_nest_with_the_earlier_deadline_and_every_observer() -> None:
    clock = FakeClock()
    late, soon = Deadline(100, clock=clock), Deadline(5, clock=clock)
    outer, inner = Recorder(), Recorder()
    assert current_scope().deadline is None
    with call_scope(deadline=late, observer=outer):
        with call_scope(deadline=soon, observer=inner) as scope:
            assert scope.deadline is soon
            scope.request_sent()
        with call_scope(deadline=None) as scope:
            assert scope.deadline is late
    assert current_scope().deadline is None and current_scope().observers == ()
    assert outer.requests == 1 and inner.requests == 1


# -- configuration ----------------------------------------------------------------------------
def test_deadline_from_default_file_env_and_flag(tmp_path: Path) -> None:
    assert resolve_config(cwd=tmp_path, env={}).deadline == DEFAULT_DEADLINE == 600.0
    (tmp_path / "tablequest.toml").write_text("[llm]\ndeadline = 120\n")
    assert resolve_config(cwd=tmp_path, env={}).deadline == 120.0
    env = {"TABLEQUEST_DEADLINE": "45"}
    assert resolve_config(cwd=tmp_path, env=env).deadline == 45.0
    config = resolve_config(cwd=tmp_path, env=env, deadline=0)
    assert config.deadline == 0 and config.sources["deadline"] == "flag"
    assert config.question_deadline().remaining() is None  # 0 means none
    remaining = resolve_config(cwd=tmp_path, env=env).question_deadline().remaining()
    assert remaining is not None and 0 < remaining <= 45
    with pytest.raises(ConfigError, match=r"\$TABLEQUEST_DEADLINE: invalid deadline"):
        resolve_config(cwd=tmp_path, env={"TABLEQUEST_DEADLINE": "-1"})
    with pytest.raises(ConfigError, match="invalid deadline"):
        resolve_config(cwd=tmp_path, env={}, deadline=float("nan"))


# -- streaming ----------------------------------------------------------------------------------
def test_slow_server_that_keeps_streaming_is_not_cut_off(make: Any) -> None:
    text = " ".join(f"w{i}" for i in range(30))
    with StubServer([Fault.slow_stream(text, 0.05)]) as stub:
        # 30 tokens at 0.05 s: more than the 1 s timeout in all, never near 1 s silent
        [c] = make(stub.url, timeout=1.0).chat(MSG)
        assert paths(stub) == [CHAT]
    assert c.text == text and c.finish_reason == "stop"
    assert stub.chat_requests[0]["stream"] is True


def test_streamed_replies_keep_n_logprobs_stop_and_response_format(make: Any) -> None:
    with StubServer(["alpha beta END gamma", "delta epsilon"]) as stub:
        llm = make(stub.url)
        out = llm.chat(MSG, n=2, logprobs=True, stop="END", response_format={"type": "json_object"})
        body = stub.chat_requests[0]
    assert [c.text for c in out] == ["alpha beta ", "delta epsilon"]
    assert out[0].token_logprobs == fake_logprobs("alpha beta ")
    assert out[1].token_logprobs == fake_logprobs("delta epsilon")
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["response_format"] == {"type": "json_object"} and body["stop"] == ["END"]
    assert out[0].usage.completion_tokens > 0 and out[1].usage.prompt_tokens == 0
    assert llm.supports_streaming


@pytest.mark.parametrize("mode", ["reject", "ignore"])
def test_server_without_streaming_is_asked_whole_and_it_is_recorded(make: Any, mode: Any) -> None:
    trace, usage = Trace.in_memory(), UsageMeter()
    with StubServer(["plain reply", "second"], stream_mode=mode) as stub:
        client = make(stub.url)
        llm = Instrumented(client, trace=trace, usage=usage)
        [c] = llm.chat(MSG)
        [again] = llm.chat(MSG)
        bodies = stub.chat_requests
    assert c.text == "plain reply" and again.text == "second"
    assert not client.supports_streaming
    # reject: the first request is refused and sent again whole; ignore: read as JSON
    assert len(bodies) == (3 if mode == "reject" else 2)
    assert "stream" not in bodies[-1]
    fallbacks = [e for e in trace.events if e["kind"] == "fallback"]
    assert len(fallbacks) == 1 and fallbacks[0]["what"] == "llm_stream"
    assert usage.totals.requests == len(bodies) and usage.totals.calls == 2


def test_broken_stream_falls_back_to_a_whole_reply(make: Any) -> None:
    with StubServer([Fault.broken_stream("half of it"), "whole reply"]) as stub:
        client = make(stub.url)
        [c] = client.chat(MSG)
        bodies = stub.chat_requests
    assert c.text == "whole reply"
    assert bodies[0]["stream"] is True and "stream" not in bodies[1]
    assert not client.supports_streaming


def test_error_event_mid_stream_is_a_failing_server_and_is_retried(make: Any) -> None:
    with StubServer([Fault.stream_error("KV cache full"), "second try"]) as stub:
        client = make(stub.url)
        [c] = client.chat(MSG)
        bodies = stub.chat_requests
    assert c.text == "second try"
    assert [b["stream"] for b in bodies] == [True, True]
    assert client.supports_streaming  # a server error says nothing against streaming
    failing = StubServer([Fault.stream_error("KV cache full")] * 3)
    with failing, pytest.raises(LLMUnavailable, match=r"streamed an error .*KV cache full"):
        make(failing.url, max_retries=1).chat(MSG)


# -- timeouts: silence, probes, no blind re-sends -------------------------------------------
def test_silent_server_times_out_and_a_busy_one_is_not_sent_it_again(make: Any) -> None:
    with StubServer([Fault.stall("a b c", 5, after=1), "never"], slots=1) as stub:
        with pytest.raises(LLMTimeout, match="busy") as info:
            make(stub.url, timeout=0.3, max_retries=3).chat(MSG)
        assert paths(stub) == [CHAT, HEALTH]  # the stalled request still holds the slot
    assert "not sent again" in str(info.value)


def test_server_that_does_not_answer_the_probe_is_not_sent_it_again(make: Any) -> None:
    with StubServer([Fault.delay(5)], probe_delay=5) as stub:
        with pytest.raises(LLMTimeout, match="did not answer a probe"):
            make(stub.url, timeout=0.3, probe_timeout=0.2).chat(MSG)
        assert paths(stub) == [CHAT, HEALTH]


def test_timeout_is_retried_once_when_the_models_probe_answers(make: Any) -> None:
    trace, usage = Trace.in_memory(), UsageMeter()
    with StubServer([Fault.delay(5), "second try"], health_route=False) as stub:
        llm = Instrumented(make(stub.url, timeout=1.0), trace=trace, usage=usage)
        [c] = llm.chat(MSG)
        assert paths(stub) == [CHAT, "/health?fail_on_no_slot=1", "/v1/models", CHAT]
    assert c.text == "second try"
    [retry] = [e for e in trace.events if e["kind"] == "llm_retry"]
    assert retry["attempt"] == 1 and retry["reason"] == "LLMTimeout" and retry["probe"] == "ok"
    [call] = [e for e in trace.events if e["kind"] == "llm_call"]
    assert call["requests"] == 2
    assert usage.totals.calls == 1 and usage.totals.requests == 2


# -- the deadline bounds everything -----------------------------------------------------------
def test_deadline_ends_retries_of_a_failing_server(make: Any) -> None:
    trace, usage = Trace.in_memory(), UsageMeter()
    with StubServer([Fault.status(503)] * 50) as stub:
        client = make(stub.url, max_retries=50, backoff_base=0.2, backoff_max=0.2)
        llm = Instrumented(client, trace=trace, usage=usage, deadline=Deadline(1.0))
        with pytest.raises(DeadlineExceeded) as info:
            llm.chat(MSG)
        sent = len(stub.chat_requests)
    assert "HTTP 503" in str(info.value)  # the last failure is named
    requests = usage.totals.requests  # sent by the client: one first attempt, then retries
    # the last request may be cut by the deadline before the server has logged it
    assert 1 <= sent < 50 and requests - 1 <= sent <= requests
    retries = [e for e in trace.events if e["kind"] == "llm_retry"]
    assert len(retries) == requests - 1
    assert usage.totals.calls == 1 and usage.totals.errors == 1
    [call] = [e for e in trace.events if e["kind"] == "llm_call"]
    assert call["error"] == "DeadlineExceeded" and call["requests"] == requests


def test_deadline_ends_a_stream_that_keeps_going(make: Any) -> None:
    text = " ".join(f"w{i}" for i in range(400))  # 400 tokens at 0.05 s: 20 s in all
    with StubServer([Fault.slow_stream(text, 0.05)]) as stub:
        llm = Instrumented(make(stub.url, timeout=5), deadline=Deadline(2.0))
        with pytest.raises(DeadlineExceeded, match="still streaming"):
            llm.chat(MSG)
        assert paths(stub) == [CHAT]


def test_deadline_cuts_the_wait_for_a_silent_server(make: Any) -> None:
    # the case scaled down: a server answering after 70 s, client timeout 60 s
    with StubServer([Fault.delay(7, "late")] * 4) as stub:
        llm = Instrumented(make(stub.url, timeout=6, max_retries=3), deadline=Deadline(0.5))
        with pytest.raises(DeadlineExceeded, match="waiting for"):
            llm.chat(MSG)
        assert paths(stub) == [CHAT]


def test_expired_deadline_refuses_the_call_without_a_request(make: Any) -> None:
    clock = FakeClock()
    deadline = Deadline(1, clock=clock)
    usage = UsageMeter()
    with StubServer(["never sent"]) as stub:
        llm = Instrumented(make(stub.url), usage=usage, deadline=deadline)
        clock.now += 2
        with pytest.raises(DeadlineExceeded, match="before the call"):
            llm.chat(MSG)
        assert stub.requests == []
    assert usage.totals.calls == 1 and usage.totals.errors == 1 and usage.totals.requests == 0


def test_waiting_for_a_connection_slot_respects_the_deadline(make: Any) -> None:
    with StubServer([Fault.delay(5, "slow")]) as stub:
        client = make(stub.url, max_concurrency=1, timeout=10)
        client._semaphore.acquire()  # another thread holds the only slot
        try:
            with call_scope(deadline=Deadline(0.2)), pytest.raises(DeadlineExceeded):
                client.chat(MSG)
        finally:
            client._semaphore.release()
        assert stub.requests == []


def test_requests_count_every_http_attempt(make: Any) -> None:
    usage = UsageMeter()
    with StubServer([Fault.status(500), Fault.status(429, retry_after=0.01), "ok"]) as stub:
        llm = Instrumented(make(stub.url), usage=usage)
        [c] = llm.chat(MSG)
    assert c.text == "ok"
    assert usage.totals.calls == 1 and usage.totals.requests == 3
    assert usage.totals.to_dict()["requests"] == 3
