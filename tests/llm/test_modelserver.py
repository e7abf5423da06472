"""`ModelServer`: every non-chat endpoint against the stub server, its failures, its guard,
and the context length asked through the LLM object (wrappers delegate)."""

from __future__ import annotations

import base64
import json
import socket
import struct
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tablequest.eval.runner import GatedLLM
from tablequest.llm import (
    CachedLLM,
    Instrumented,
    ModelRequestsDisallowed,
    OpenAICompatible,
    Scripted,
    StubServer,
    UsageMeter,
)
from tablequest.llm.modelserver import (
    ModelServer,
    ModelServerError,
    Tokenized,
    _from_models,
    _from_props,
    server_root,
)
from tablequest.llm.stub import fake_embedding
from tablequest.scale.batchrun import Replica


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}/v1"


def _mock(
    handler: Callable[[httpx.Request], httpx.Response],
    sleeps: list[float] | None = None,
    api_key: str | None = None,
) -> ModelServer:
    """A `ModelServer` whose requests `handler` answers (replies the stub cannot send)."""
    return ModelServer(
        "http://127.0.0.1:1/v1",
        api_key=api_key,
        transport=httpx.MockTransport(handler),
        sleep=(sleeps if sleeps is not None else []).append,
    )


# -- endpoints against the stub ---------------------------------------------------------------
def test_models_and_context_length_are_read_and_cached() -> None:
    with StubServer(model="m-1", max_model_len=8192) as stub, ModelServer(stub.url) as server:
        assert server.first_model() == "m-1"
        server.model = "m-1"
        assert server.context_length() == 8192
        before = len(stub.requests)
        assert ModelServer(stub.url, model="m-1").context_length() == 8192  # cached per URL
        assert len(stub.requests) == before


def test_context_length_asks_models_then_props_and_says_none() -> None:
    with StubServer() as stub:
        assert ModelServer(stub.url, model="stub-model").context_length() is None
        assert [r["path"] for r in stub.requests] == ["/v1/models", "/props"]
    assert ModelServer(_refused_url(), model="m").context_length() is None


def test_context_length_parsing() -> None:
    assert _from_models({"data": [{"id": "m", "max_model_len": 8192}]}, "m") == 8192
    assert _from_models({"data": [{"id": "m", "meta": {"n_ctx_train": 4096}}]}, None) == 4096
    assert _from_models({"data": [{"id": "other", "max_model_len": 1}]}, "m") is None
    assert _from_props({"default_generation_settings": {"n_ctx": 2048}}) == 2048
    assert _from_props({"n_ctx": True}) is None and _from_props(None) is None


def test_embeddings_rerank_and_tokenize() -> None:
    with StubServer(embedding_dim=8, tokenize=True, max_model_len=512) as stub:
        with ModelServer(stub.url, model="stub-model") as server:
            vectors = server.embeddings(["a", "b c"], model="e")
            scores = server.rerank("gold nation", ["nation gold", "city"], model="r")
            tokens = server.tokenize("three little words")
        [embed] = [r["json"] for r in stub.requests if r["path"] == "/v1/embeddings"]
    assert vectors == [fake_embedding("a", 8), fake_embedding("b c", 8)]  # floats, not base64
    assert embed == {"model": "e", "input": ["a", "b c"], "encoding_format": "base64"}
    assert scores == pytest.approx([1.0, 0.0])
    assert tokens == Tokenized(3, 512)
    assert server_root("http://h/v1/") == "http://h" and server.root == stub.url[: -len("/v1")]


def test_base64_embeddings_and_score_endpoint_are_read() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/score"):
            return httpx.Response(200, json={"data": [{"index": 1, "score": 0.25},
                                                      {"index": 0, "score": 0.5}]})  # fmt: skip
        packed = base64.b64encode(struct.pack("<3f", 1.0, 0.5, -2.0)).decode()
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": packed}]})

    server = _mock(handler)
    assert server.embeddings(["x"], model="e") == [[1.0, 0.5, -2.0]]
    assert server.rerank("q", ["a", "b"], model="r", endpoint="score") == [0.5, 0.25]


def test_probe_says_ok_busy_or_no_answer() -> None:
    with StubServer() as stub:
        assert ModelServer(stub.url).probe(1.0) == "ok"
    with StubServer(slots=0) as stub:  # every slot taken: 503 on fail_on_no_slot
        assert ModelServer(stub.url).probe(1.0) == "busy"
    with StubServer(health_route=False) as stub:
        assert ModelServer(stub.url).probe(1.0) == "ok"
        assert [r["path"] for r in stub.requests][-1] == "/v1/models"
    with StubServer(probe_delay=5) as stub:
        assert ModelServer(stub.url).probe(0.2) == "no answer"
    assert ModelServer(_refused_url()).probe(1.0) == "no answer"


# -- failures: one mapping ---------------------------------------------------------------------
def test_failures_say_their_kind_and_cause() -> None:
    url = _refused_url()
    with pytest.raises(ModelServerError) as refused:
        ModelServer(url).first_model()
    assert refused.value.kind == "connect" and "connection refused" in refused.value.cause
    assert str(refused.value).startswith(f"cannot reach the model server {url}")
    with StubServer(rerank=False, probe_delay=5) as stub:
        server = ModelServer(stub.url)
        with pytest.raises(ModelServerError) as missing:
            server.rerank("q", ["d"], model="r")
        with pytest.raises(ModelServerError) as slow:
            server.first_model(timeout=0.2)
        with pytest.raises(ModelServerError) as no_tokenize:
            server.tokenize("x")
        server.close()
    assert (missing.value.kind, missing.value.status) == ("status", 404)
    assert str(missing.value).startswith(f"{stub.url}/rerank answered HTTP 404")
    assert slow.value.kind == "transport" and "Timeout" in slow.value.cause
    assert no_tokenize.value.status == 404 and not missing.value.retryable


def test_malformed_replies_are_one_kind() -> None:
    replies = {
        "/v1/models": httpx.Response(200, json={"data": []}),
        "/v1/embeddings": httpx.Response(200, content=b'{"data": ['),
        "/v1/rerank": httpx.Response(200, json={"results": [{"index": 0}]}),
        "/tokenize": httpx.Response(200, json={"ids": [1]}),
    }
    server = _mock(lambda request: replies[request.url.path])
    calls: list[Callable[[], object]] = [
        server.first_model,
        lambda: server.embeddings(["x"], model="e"),
        lambda: server.rerank("q", ["d"], model="r"),
        lambda: server.tokenize("x"),
    ]
    for call in calls:
        with pytest.raises(ModelServerError) as failed:
            call()
        assert failed.value.kind == "malformed" and not failed.value.retryable


def test_embeddings_are_retried_like_the_sdk_retried_them() -> None:
    statuses = [503, 429, 200]

    def handler(request: httpx.Request) -> httpx.Response:
        status = statuses.pop(0)
        if status != 200:
            return httpx.Response(status, headers={"Retry-After": "0.5"} if status == 429 else {})
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]})

    sleeps: list[float] = []
    server = _mock(handler, sleeps)
    assert server.embeddings(["x"], model="e") == [[1.0]]
    assert len(sleeps) == 2 and 0.375 <= sleeps[0] <= 0.5  # 0.5 s less up to 25 % jitter
    assert sleeps[1] == 0.5  # the server's Retry-After
    statuses[:] = [400, 200]
    with pytest.raises(ModelServerError, match="HTTP 400"):
        server.embeddings(["x"], model="e")  # a rejected request is not sent again
    statuses[:] = [500, 200]
    with pytest.raises(ModelServerError, match="HTTP 500"):
        server.embeddings(["x"], model="e", retries=0)


def test_one_client_sends_the_key_and_is_closed() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"data": [{"id": "m"}]})

    server = _mock(handler, api_key="sk-1")
    first = server.client
    assert server.first_model() == "m" and server.first_model() == "m"
    assert server.client is first and seen == ["Bearer sk-1", "Bearer sk-1"]
    server.close()
    server.close()  # idempotent
    assert first.is_closed and server.client is not first
    assert _mock(handler).headers == {}


def test_the_guard_refuses_remote_servers_before_any_request() -> None:
    server = ModelServer("https://api.example.invalid/v1", model="m")
    with pytest.raises(ModelRequestsDisallowed, match=r"api\.example\.invalid"):
        server.first_model()
    assert server.context_length() is None and server.probe(0.1) == "no answer"


# -- through the LLM object --------------------------------------------------------------------
def test_llm_context_length_goes_through_every_wrapper(tmp_path: Path) -> None:
    with StubServer(max_model_len=2048) as stub:
        base = OpenAICompatible(stub.url, "stub-model")
        assert base.server.base_url == stub.url and base.server.model == "stub-model"
        wrapped = Instrumented(CachedLLM(base, tmp_path), usage=UsageMeter())
        for llm in (wrapped, GatedLLM(wrapped), Replica(wrapped, [stub.url])):
            assert llm.context_length() == 2048
        wrapped.close()
        assert base.server._client is None  # closed with the model
        models = [r for r in stub.requests if r["path"] == "/v1/models"]
    assert len(models) == 1  # asked once, then cached
    assert Scripted(["x"]).context_length() is None
    assert json.loads(json.dumps(base.describe()))["url"] == stub.url


def test_a_url_without_a_model_takes_the_servers_first() -> None:
    from tablequest.notebook import resolve_llm

    with StubServer(model="listed-first") as stub:
        llm = resolve_llm(stub.url, cache=False)
        assert llm is not None and llm.describe()["model"] == "listed-first"
        llm.close()
