"""StubServer endpoints and script behaviour, exercised with plain HTTP (httpx)."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from tablequest.llm import Fault, StubServer
from tablequest.llm.stub import fake_embedding, fake_logprobs

MSG = [{"role": "user", "content": "hi"}]


_CLIENT = httpx.Client(timeout=5)


def post(url: str, path: str, body: Any) -> httpx.Response:
    return _CLIENT.post(url + path, json=body)


def teardown_module() -> None:
    _CLIENT.close()


def test_models_endpoint_and_request_log() -> None:
    with StubServer(model="my-model") as stub:
        r = _CLIENT.get(stub.url + "/models")
        assert r.status_code == 200
        assert r.json()["data"][0]["id"] == "my-model"
        assert stub.requests == [{"method": "GET", "path": "/v1/models", "json": None}]


def test_embeddings_are_deterministic_unit_vectors() -> None:
    with StubServer(embedding_dim=8) as stub:
        one = post(stub.url, "/embeddings", {"input": "alpha", "model": "e"}).json()
        many = post(stub.url, "/embeddings", {"input": ["alpha", "beta"], "model": "e"}).json()
        bad = post(stub.url, "/embeddings", {"input": 3})
    v = one["data"][0]["embedding"]
    assert len(v) == 8 and math.isclose(sum(x * x for x in v), 1.0)
    assert many["data"][0]["embedding"] == v
    assert many["data"][1]["embedding"] != v
    assert bad.status_code == 400
    assert fake_embedding("alpha", 8) == v


def test_unknown_route_and_bad_body() -> None:
    with StubServer(["x"]) as stub:
        assert post(stub.url, "/completions", {}).status_code == 404
        assert post(stub.url, "/chat/completions", {"no": "messages"}).status_code == 400
        r = _CLIENT.post(stub.url + "/chat/completions", content=b"{not json")
        assert r.status_code == 400


def test_exhausted_script_answers_410_or_default() -> None:
    with StubServer(["only"]) as stub:
        assert post(stub.url, "/chat/completions", {"messages": MSG}).status_code == 200
        r = post(stub.url, "/chat/completions", {"messages": MSG})
        assert r.status_code == 410 and "exhausted" in r.json()["error"]["message"]
        stub.enqueue("more")
        r = post(stub.url, "/chat/completions", {"messages": MSG})
        assert r.json()["choices"][0]["message"]["content"] == "more"
    with StubServer(default_reply="fallback") as stub:
        r = post(stub.url, "/chat/completions", {"messages": MSG, "n": 2})
        assert [c["message"]["content"] for c in r.json()["choices"]] == ["fallback"]


def test_function_replies_see_the_request() -> None:
    def reply(body: dict[str, Any]) -> Any:
        content = body["messages"][-1]["content"]
        if content == "fail":
            return Fault.status(503)
        if content == "boom":
            raise RuntimeError("bug in test")
        if content == "many":
            return ["one", "two"]
        return content.upper()

    with StubServer(reply) as stub:
        r = post(stub.url, "/chat/completions", {"messages": [{"role": "user", "content": "abc"}]})
        assert r.json()["choices"][0]["message"]["content"] == "ABC"
        body = {"messages": [{"role": "user", "content": "abc"}], "n": 2}
        r = post(stub.url, "/chat/completions", body)
        assert [c["message"]["content"] for c in r.json()["choices"]] == ["ABC", "ABC"]
        many = {"messages": [{"role": "user", "content": "many"}], "n": 2}
        r = post(stub.url, "/chat/completions", many)
        assert [c["message"]["content"] for c in r.json()["choices"]] == ["one", "two"]
        fail = {"messages": [{"role": "user", "content": "fail"}]}
        assert post(stub.url, "/chat/completions", fail).status_code == 503
        boom = {"messages": [{"role": "user", "content": "boom"}]}
        r = post(stub.url, "/chat/completions", boom)
        assert r.status_code == 500 and "bug in test" in r.text


def test_max_tokens_cuts_with_length_and_usage_counts() -> None:
    with StubServer(["x" * 100]) as stub:
        r = post(stub.url, "/chat/completions", {"messages": MSG, "max_tokens": 5}).json()
    choice = r["choices"][0]
    assert choice["message"]["content"] == "x" * 20 and choice["finish_reason"] == "length"
    assert r["usage"]["completion_tokens"] == 5


def test_fault_in_queue_applies_to_whole_request() -> None:
    with StubServer(["a", Fault.status(500), "b"]) as stub:
        r = post(stub.url, "/chat/completions", {"messages": MSG, "n": 3})
        assert [c["message"]["content"] for c in r.json()["choices"]] == ["a"]
        r = post(stub.url, "/chat/completions", {"messages": MSG})
        assert r.status_code == 500 and "retry-after" not in r.headers
        r = post(stub.url, "/chat/completions", {"messages": MSG})
        assert r.json()["choices"][0]["message"]["content"] == "b"


def test_port_before_start_is_an_error() -> None:
    stub = StubServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = stub.url
    stub.start()
    assert stub.start() is stub  # idempotent
    stub.close()
    stub.close()


def test_fake_logprobs_shape() -> None:
    assert len(fake_logprobs("a b c")) == 3
    assert fake_logprobs("a b") == fake_logprobs("a b")
    assert len(fake_logprobs("")) == 1


def test_rerank_scores_word_overlap_like_a_reranker() -> None:
    from tablequest.corpus.retrieval.rerank import APIReranker

    with StubServer([]) as stub:
        reranker = APIReranker(stub.url, "stub-reranker")
        scores = reranker.scores(
            "gold medals nation", ["nation gold", "city", "medals gold nation"]
        )
        assert scores == pytest.approx([2 / 3, 0.0, 1.0])
        bad = httpx.post(f"{stub.url}/rerank", json={"query": 1})
        assert bad.status_code == 400
