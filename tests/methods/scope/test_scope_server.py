"""TabScope against the stub HTTP server: token counting, n/logprobs handling, chaos."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import httpx
import pytest
from scope_helpers import LEAGUE, QUESTION, stage_of

from tablequest.llm import OpenAICompatible
from tablequest.llm.config import LLMConfig
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.result import Result
from tablequest.methods.scope import ScopeOptions, TabScope
from tablequest.methods.scope.state import linearize
from tablequest.methods.scope.tokens import (
    DEFAULT_CONTEXT,
    TokenCounter,
    safe_count,
    server_root,
    token_counter,
)
from tablequest.trace import Trace

GOOD = {
    "classify": json.dumps({"question_type": "lookup"}),
    "rows": "f_row([row_0, row_1])",
    "cols": "f_col([Year, League])",
    "refine": json.dumps({"action": "keep", "final_rows": [], "final_columns": []}),
    "answer": "<think>ok</think><answer>2004</answer>",
}


def good_reply(body: dict[str, Any]) -> str:
    return GOOD[stage_of(body["messages"]).removesuffix("_repair")]


def tokenize_requests(stub: StubServer) -> int:
    return sum(1 for r in stub.requests if r["path"] == "/tokenize")


def run_scope(stub: StubServer, **options: Any) -> tuple[Result, Trace]:
    llm = OpenAICompatible(stub.url, "stub", max_retries=1, backoff_base=0.01, timeout=5)
    config = LLMConfig(url=stub.url, model="stub")
    method = TabScope(ScopeOptions(**options), MethodContext(llm=llm, llm_config=config))
    trace = Trace.in_memory()
    try:
        result = method.answer(QUESTION, TableSet([("t1", LEAGUE)]), trace=trace)
    finally:
        method.close()
        llm.close()
    return result, trace


# -- token counting ------------------------------------------------------------------------------
def test_server_root() -> None:
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("http://h/v1/") == "http://h"
    assert server_root("http://h/api") == "http://h/api"


def test_server_tokenizer_counts_and_reports_the_context() -> None:
    with StubServer(good_reply, tokenize=True, max_model_len=4096) as stub:
        result, trace = run_scope(stub)
    assert result.status == "answered"
    assert result.details["tokenizer"] == "server:/tokenize"
    assert result.details["tokens"] == len(linearize(LEAGUE).split())  # the stub's tokens
    assert result.details["context_tokens"] == 4096
    size = next(e for e in trace.events if e.get("stage") == "size")
    assert size["tokenizer"] == "server:/tokenize"


def test_llama_cpp_style_tokenize_without_context_asks_models_then_props() -> None:
    with StubServer(good_reply, tokenize=True) as stub:
        counter = token_counter(stub.url, "stub")
        paths = [r["path"] for r in stub.requests]
        assert counter.count("three little words") == 3
        counter.close()
    assert counter.name == "server:/tokenize" and counter.context is None
    assert paths == ["/tokenize", "/v1/models", "/props"]


def test_without_tokenize_the_local_counter_counts_and_the_server_is_asked_once() -> None:
    with StubServer(good_reply) as stub:
        counter = token_counter(stub.url, "stub")
        assert counter.name in ("minilm-wordpiece", "chars/4") and counter.context is None
        llm = OpenAICompatible(stub.url, "stub", max_retries=0)
        config = LLMConfig(url=stub.url, model="stub")
        method = TabScope(ScopeOptions(), MethodContext(llm=llm, llm_config=config))
        for _ in range(2):
            result = method.answer(QUESTION, TableSet([("t1", LEAGUE)]))
            assert result.details["tokenizer"] == counter.name
            assert result.details["context_tokens"] == DEFAULT_CONTEXT
        method.close()
        llm.close()
        assert tokenize_requests(stub) == 2  # one probe above, one for the method's life


def test_local_mode_never_asks_the_server() -> None:
    with StubServer(good_reply, tokenize=True) as stub:
        result, _ = run_scope(stub, tokenizer="local")
        assert tokenize_requests(stub) == 0
    assert result.details["tokenizer"] in ("minilm-wordpiece", "chars/4")


def test_remote_servers_are_not_probed_when_model_requests_are_off() -> None:
    counter = token_counter("https://api.example.invalid/v1", "m")
    assert counter.name in ("minilm-wordpiece", "chars/4")


def test_counter_failing_mid_run_falls_back_to_local() -> None:
    def broken(text: str) -> int:
        raise httpx.ConnectError("gone")

    tokens, name = safe_count(TokenCounter("server:/tokenize", broken), "a b c")
    assert tokens > 0 and name in ("minilm-wordpiece", "chars/4")


# -- n and logprobs ------------------------------------------------------------------------------
def n_requests(trace: Trace) -> set[str]:
    return {e["n_request"] for e in trace.events if "n_request" in e}


def test_n_and_logprobs_supported() -> None:
    with StubServer(good_reply) as stub:
        result, trace = run_scope(stub)
        retrieval = [b for b in stub.chat_requests if stage_of(b["messages"]) in ("rows", "cols")]
    assert n_requests(trace) == {"one request"}
    assert len(retrieval) == 2 and all(b["n"] == 4 and b["logprobs"] for b in retrieval)
    rows = result.details["retrieval"]["rows"]
    assert rows["received"] == 4 and rows["logprobs"] == "present"
    assert all(s is not None and s < 0 for s in rows["scores"])  # the stub's fake logprobs


def test_server_ignoring_n_and_logprobs_still_gets_k_samples_by_frequency_vote() -> None:
    with StubServer(good_reply, n_mode="ignore", logprobs_mode="reject") as stub:
        result, trace = run_scope(stub)
        chats = len(stub.chat_requests)
    assert n_requests(trace) == {"several requests (the client emulated n)"}
    rows = result.details["retrieval"]["rows"]
    assert rows["received"] == 4 and rows["logprobs"] == "absent"
    assert result.details["retrieval"]["aggregation"]["frequency_voting"]["rows"] is True
    assert result.status == "answered" and result.steps == 5
    assert chats >= 1 + 4 + 4 + 1 + 1  # the client emulated n with single requests


# -- chaos: every run ends with a Result and a trace ---------------------------------------------
FAULTS = [
    lambda: Fault.status(500),
    lambda: Fault.status(429, retry_after=0),
    lambda: Fault.truncated('{"question_type": "loo'),
    lambda: Fault.malformed_json(),
    lambda: Fault.empty_choices(),
    lambda: "Sure! Here is my detailed analysis of the table, without any function call.",
    lambda: "f_row([row_7, row_8])",
    lambda: "<think>never closed",
]


def chaotic(seed: int, rate: float):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Any:
        with lock:
            roll, pick = rng.random(), rng.randrange(len(FAULTS))
        if roll < rate:
            return FAULTS[pick]()
        return good_reply(body)

    return reply


@pytest.mark.parametrize("seed", range(6))
def test_chaotic_server_runs_end_with_a_result_and_a_trace(seed: int) -> None:
    with StubServer(chaotic(seed, rate=0.5)) as stub:
        result, trace = run_scope(stub, k=2)
    # whatever the status, it is an honest one: an answer only when answered, a reason
    # whenever it failed
    assert (result.answer is not None) == (result.status == "answered"), result
    assert result.status != "failed" or result.reason, result
    json.dumps(result.to_json())  # the ask --json payload
    events = trace.events
    assert events[0]["stage"] == "start" and events[-1]["stage"] == "end"
    assert result.steps == sum(1 for e in events if e["kind"] == "llm_call")
    assert result.steps <= ScopeOptions(k=2).default_steps()
    if result.status != "answered":
        assert result.reason


def test_server_down_ends_failed_with_a_reason() -> None:
    with StubServer(lambda body: Fault.status(503)) as stub:
        result, _trace = run_scope(stub)
    assert result.status == "failed" and "could not be made" in (result.reason or "")
    assert {f["stage"] for f in result.details["fallbacks"]} >= {"classify", "qa"}
