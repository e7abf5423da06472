"""The /v1 API through a real uvicorn server and httpx: auth, tables, search, ask (SSE),
asks, traces, methods, health."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tablequest.trace import read_trace

TOKEN = "test-token-0123456789abcdef"
LAKES_Q = "How deep is Quillsee?"


def lakes_id(server: Any) -> str:
    with server.client() as client:
        tables = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"]
    assert len(tables) == 1
    return str(tables[0]["table_id"])


# -- auth and headers ----------------------------------------------------------------------
def test_every_api_call_and_page_needs_the_token(server: Any) -> None:
    with server.client(token=None) as anon:
        for path in ("/v1/health", "/v1/tables", "/v1/search?q=x", "/openapi.json"):
            response = anon.get(path)
            assert response.status_code == 401, path
            assert "Bearer" in response.json()["error"]["message"]
            assert response.headers["www-authenticate"] == "Bearer"
        page = anon.get("/", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/login"
        assert anon.get("/static/app.css").status_code == 200
        assert anon.post("/v1/asks", json={"question": "q"}).status_code == 401
    with server.client(token="wrong-token-0123456789") as wrong:
        response = wrong.get("/v1/health")
        assert response.status_code == 401 and "wrong token" in response.json()["error"]["message"]


def test_login_sets_a_strict_httponly_cookie(server: Any) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        bad = browser.get("/login", params={"token": "nope"})
        assert bad.status_code == 401 and "wrong token" in bad.text
        response = browser.get("/login", params={"token": TOKEN}, follow_redirects=False)
        assert response.status_code == 303
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert browser.get("/").status_code == 200
        assert browser.get("/v1/health").status_code == 200
        # a cookie alone cannot change data: cross-site forms cannot add the header
        refused = browser.post("/v1/asks", json={"question": LAKES_Q})
        assert refused.status_code == 403 and "X-Requested-With" in refused.text
        assert browser.get("/logout", follow_redirects=False).status_code == 303
    with httpx.Client(base_url=server.url, timeout=30) as form:
        posted = form.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert posted.status_code == 303 and "tq_token" in posted.headers["set-cookie"]


def test_security_headers_and_host_check(server: Any) -> None:
    with server.client() as client:
        response = client.get("/v1/health")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        rebound = client.get("/v1/health", headers={"Host": "attacker.example"})
        assert rebound.status_code == 400 and "loopback" in rebound.json()["error"]["message"]


def test_openapi_schema_documents_the_api(server: Any) -> None:
    with server.client() as client:
        schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    for path in ("/v1/ask", "/v1/asks", "/v1/search", "/v1/tables/{table_id}", "/v1/ingest",
                 "/v1/traces/{trace_id}", "/v1/methods", "/v1/health", "/v1/version"):  # fmt: skip
        assert path in paths, path
    assert not any(p.startswith(("/login", "/tables", "/asks/")) for p in paths)
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "AskRequest" in schema["components"]["schemas"]


# -- reading -------------------------------------------------------------------------------
def test_health_version_methods(server: Any) -> None:
    with server.client() as client:
        health = client.get("/v1/health").json()
        assert health["status"] == "ok" and health["tables"] >= 16 and health["llm"] is True
        assert client.get("/v1/version").json()["api"] == "v1"
        methods = {m["name"]: m for m in client.get("/v1/methods").json()}
        assert {"seek", "rag", "direct", "bm25"} <= set(methods)
        seek = client.get("/v1/methods/seek").json()
        assert "10step-5s1-small" in " ".join(seek["configs"]) or seek["configs"] == []
        names = {o["name"]: o for o in seek["options"]}
        assert names["max_steps"]["type"] == "int" and names["max_steps"]["help"]
        rerank = {o["name"]: o for o in methods["rerank"]["options"]}
        assert rerank["rerank_url"]["settable"] is False
        assert rerank["rerank_pool"]["settable"] is True
        research = {o["name"]: o for o in methods["research"]["options"]}
        server_side = {n for n, o in research.items() if not o["settable"]}
        assert server_side == {"memory", "memory_path", "exec_timeout", "charts_dir"}
        missing = client.get("/v1/methods/nope")
        assert missing.status_code == 400 and "unknown method 'nope'" in missing.text


def test_tables_list_and_structure(server: Any) -> None:
    tid = lakes_id(server)
    with server.client() as client:
        listing = client.get("/v1/tables", params={"limit": 5}).json()
        assert listing["total"] >= 16 and len(listing["tables"]) == 5
        table = client.get(f"/v1/tables/{tid}").json()
        assert table["title"] == "Lakes of Varnholm" and table["n_header_rows"] == 2
        assert table["header_paths"][2] == ["Size", "Depth m"]
        assert {"top": 0, "left": 1, "bottom": 0, "right": 2} in table["merges"]
        assert table["rows"][2][0] == "Quillsee" and table["row_ids"] == [0, 1, 2]
        window = client.get(f"/v1/tables/{tid}", params={"offset": 1, "limit": 1}).json()
        assert window["rows"] == [["Tarnel", "95", "12", "North"]] and window["row_ids"] == [1]
        assert client.get("/v1/tables/t000000000000000").status_code == 404
        bad = client.get("/v1/tables/..%2F..%2Fetc")
        assert bad.status_code in (404, 422)


@pytest.mark.parametrize("method", ["grep", "bm25", "dense", "hybrid"])
def test_search_with_every_retriever(server: Any, method: str) -> None:
    tid = lakes_id(server)
    with server.client() as client:
        response = client.get(
            "/v1/search",
            params={"q": "depth of lake Quillsee", "method": method, "encoder": "hash", "k": 3},
        )
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert 1 <= len(hits) <= 3
    lakes = [h for h in hits if h["table_id"] == tid]
    if method in ("grep", "bm25"):
        assert hits[0]["table_id"] == tid
    if lakes:
        assert lakes[0]["matched_rows"] == [2] and lakes[0]["source"].endswith("lakes.html")


def test_search_preview_and_rerank_needs_a_server(server: Any) -> None:
    with server.client() as client:
        hit = client.get("/v1/search", params={"q": "Quillsee", "preview": "true"}).json()["hits"][
            0
        ]
        assert "Quillsee" in hit["preview"]
        rerank = client.get("/v1/search", params={"q": "x", "method": "rerank", "encoder": "hash"})
        assert rerank.status_code == 400 and "rerank needs a server" in rerank.text
        unknown = client.get("/v1/search", params={"q": "x", "method": "magic"})
        assert unknown.status_code == 400 and "unknown retrieval method 'magic'" in unknown.text
        empty = client.get("/v1/search", params={"q": ""})
        assert empty.status_code == 422 and "q" in empty.json()["error"]["message"]


def test_fast_search_answers_what_the_route_answers(server: Any, monkeypatch: Any) -> None:
    """`serve.fastsearch` takes plain searches; its bytes are the route's (k=05 and
    preview=False go to the route: it reads them, the short way declines them). With the
    index loaded and the tables in memory it searches on the event loop, no thread."""
    from tablequest.errors import BadValue
    from tablequest.serve import fastsearch

    taken: list[str] = []

    def counted(*args: Any) -> Any:
        taken.append(args[1])
        if args[1] == "fails":
            raise BadValue("refused here; the route answers")
        return real(*args)

    def on_a_thread(*args: Any) -> Any:
        raise AssertionError("the short way ran a search on a thread")

    server.state.stores.warm(("grep", "bm25"))
    real = fastsearch.search_in_memory
    monkeypatch.setattr(fastsearch, "search_in_memory", counted)
    monkeypatch.setattr(fastsearch, "run_search", on_a_thread)
    with server.client() as client:
        for fast, route in (
            ({"q": "depth of lake Quillsee", "k": "5"}, {"q": "depth of lake Quillsee", "k": "05"}),
            ({"q": "Quillsee", "preview": "false", "method": "bm25"},
             {"q": "Quillsee", "preview": "False", "method": "bm25"}),
        ):  # fmt: skip
            a, b = client.get("/v1/search", params=fast), client.get("/v1/search", params=route)
            assert a.status_code == b.status_code == 200
            assert a.content == b.content
            assert {k: v for k, v in a.headers.items() if k != "date"} == {
                k: v for k, v in b.headers.items() if k != "date"
            }
        failed = client.get("/v1/search", params={"q": "fails"})
    assert taken == ["depth of lake Quillsee", "Quillsee", "fails"]
    assert failed.status_code == 200 and failed.json()["question"] == "fails"


# -- asking --------------------------------------------------------------------------------
def test_ask_streams_trace_events_then_the_result(server: Any) -> None:
    events = server.ask_stream({"question": LAKES_Q, "method": "seek"})
    names = [name for name, _ in events]
    assert names[-1] == "result" and names.count("trace") == len(names) - 1
    kinds = [data["kind"] for name, data in events if name == "trace"]
    assert {"llm_call", "rank", "preview", "decision", "qa"} <= set(kinds)
    result = events[-1][1]
    assert result["answer"] == "61" and result["status"] == "answered"
    [cell] = result["evidence"]
    assert cell == {
        "table_id": lakes_id(server),
        "row": 2,
        "col": 2,
        "value": "61",
        "how": cell["how"],
    }
    assert cell["how"] in {"cited", "matched"} and "verified" in result and "verification" in result
    trace_id = result["trace"].rsplit("/", 1)[1].removesuffix(".jsonl")
    with server.client() as client:
        listed = [t["id"] for t in client.get("/v1/traces").json()]
        assert trace_id in listed
        stored = client.get(f"/v1/traces/{trace_id}").json()
    assert stored["events"] == read_trace(server.state.trace_path(trace_id))
    assert [e["kind"] for e in stored["events"]] == kinds
    assert stored["summary"]["calls"] == kinds.count("llm_call")


def test_ask_json_and_the_asks_api(server: Any) -> None:
    with server.client() as client:
        plain = client.post("/v1/ask", json={"question": LAKES_Q, "stream": False})
        assert plain.status_code == 200 and plain.json()["answer"] == "61"
        assert plain.json()["method"] == "auto"  # the default, as in the CLI and the web form
        started = client.post("/v1/asks", json={"question": LAKES_Q})
        assert started.status_code == 202
        job = started.json()
        with client.stream("GET", job["events"], params={"view": "1"}) as response:
            events = server.events(response)
        views = [data["view"] for name, data in events if name == "trace"]
        assert views and all({"title", "lines", "kind"} <= set(v) for v in views)
        assert events[-1][0] == "result"
        # a reconnecting EventSource resumes after Last-Event-ID
        with client.stream("GET", job["events"], headers={"Last-Event-ID": "2"}) as response:
            resumed = server.events(response)
        assert len(resumed) == len(events) - 3
        state = client.get(job["result"]).json()
        assert state["done"] and state["result"]["answer"] == "61"
        assert client.get("/v1/asks/" + "0" * 32).status_code == 404
