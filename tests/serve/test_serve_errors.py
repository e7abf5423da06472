"""Bad requests get a 4xx with a clear message and never a traceback in the server log;
limits on bodies, uploads and concurrent asks; uploads go in under server-chosen names."""

from __future__ import annotations

import io
import json
import re
import threading
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

LAKES_Q = "How deep is Quillsee?"


def error_of(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return str(body["error"]["message"])


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b'{"question": "x",', 400, "malformed JSON body"),
        (b'{"question": "x", "method": "nosuch"}', 400, "unknown method 'nosuch'"),
        (b'{"question": "x", "method": "seek", "options": {"max_stepz": 3}}', 400,
         "did you mean 'max_steps'"),
        (b'{"question": "x", "method": "seek", "options": {"max_steps": "many"}}', 400,
         "option 'max_steps'"),
        (b'{"question": "x", "config": "no-such-config"}', 400, "no-such-config"),
        (b'{"question": "x", "method": "rerank", "options": {"rerank_url": "http://10.0.0.1"}}',
         422, "option 'rerank_url' of method rerank cannot be set by a request"),
        # server-side options (issue 25): paths, URLs, sandbox settings, memory files
        (b'{"question": "x", "method": "research", "options": {"charts_dir": "/any/new/dir"}}',
         422, "option 'charts_dir' of method research cannot be set by a request"),
        (b'{"question": "x", "method": "research", "options": {"memory_path": "/tmp/m.db"}}',
         422, "'memory_path'"),
        (b'{"question": "x", "method": "research", "options": {"memory": "readwrite"}}',
         422, "'memory'"),
        (b'{"question": "x", "method": "research", "options": {"exec-timeout": 600}}',
         422, "'exec_timeout'"),
        (b'{"question": "x", "method": "rag", "options": {"action_timeout": 600}}',
         422, "'action_timeout'"),
        (b'{"question": "x", "method": "dense", "options": {"embed_url": "http://10.0.0.1"}}',
         422, "'embed_url'"),
        # cost-bearing options over the server's maximum (issue 40), named with the bound
        (b'{"question": "x", "method": "rag", "options": {"sc": 50}}', 422,
         "option 'sc' of method rag = 50 is over this server's limit for a request (8)"),
        (b'{"question": "x", "method": "rag", "options": {"max-depth": "40"}}', 422,
         "option 'max_depth' of method rag = 40"),
        (b'{"question": "x", "method": "rag", "config": "B=1000000"}', 422, "'budget'"),
        (b'{"question": "x", "method": "research", "options": {"k_paths": 20}}', 422,
         "'k_paths'"),
        (b'{"question": "x", "steps": 500}', 422, "steps = 500 is over this server's limit"),
        (b'{"question": "x", "method": "direct"}', 400, "--table-id"),
        (b'{"question": "x", "method": "direct", "table_ids": ["tffffffffffffff0"]}', 400,
         "no table 'tffffffffffffff0'"),
        (b'{"question": "x", "steps": 0}', 422, "steps"),
        (b'{"question": "", "method": "seek"}', 422, "question"),
        (b'{"question": "x", "surprise": 1}', 422, "surprise"),
        (b'[1, 2]', 422, "body"),
    ],
)  # fmt: skip
def test_bad_asks_are_refused_before_they_start(
    server: Any, body: bytes, status: int, needle: str
) -> None:
    with server.client() as client:
        response = client.post(
            "/v1/ask", content=body, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == status, response.text
    assert needle in error_of(response)


def test_request_bodies_over_the_limit_are_refused(server: Any) -> None:
    big = b'{"question": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    with server.client() as client:
        declared = client.post("/v1/ask", content=big, headers={"Content-Type": "application/json"})
        assert declared.status_code == 413 and "limit" in error_of(declared)

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
            for i in range(0, len(big), 65536):
                yield big[i : i + 65536]

        streamed = client.post(
            "/v1/ask", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert streamed.status_code == 413


def _upload(server: Any, files: list[tuple[str, bytes]]) -> httpx.Response:
    with server.client() as client:
        return client.post("/v1/ingest", files=[("files", (n, io.BytesIO(b))) for n, b in files])


def test_upload_ingests_into_the_store_without_blocking_searches(server: Any) -> None:
    before = server.state.stores.generation
    stop = threading.Event()
    statuses: list[int] = []

    def search_loop() -> None:
        with server.client() as client:
            while not stop.is_set():
                statuses.append(client.get("/v1/search", params={"q": "Quillsee"}).status_code)

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(search_loop) for _ in range(2)]
        csv = b"Comet,Period years\nHalvorsen,76\nBrisk,3.3\n"
        response = _upload(server, [("../../../../tmp/evil comets.csv", csv)])
        stop.set()
        for f in futures:
            f.result()
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["tables_stored"] == 1 and report["files_failed"] == []
    stored = report["files"][0]["stored_as"]
    folder, name = stored.split("/")
    assert re.fullmatch(r"[0-9a-f]{12}", folder) and name == "evil comets.csv"  # readable
    assert (server.state.uploads / stored).is_file()
    assert server.state.stores.generation == before + 1
    assert statuses and set(statuses) == {200}
    with server.client() as client:
        hits = client.get("/v1/search", params={"q": "Halvorsen comet"}).json()["hits"]
        assert hits[0]["source"].endswith(stored)
    again = _upload(server, [("evil comets.csv", csv)])
    assert again.json()["tables_unchanged"] == 1 and again.json()["tables_stored"] == 0


def test_upload_reports_what_the_reader_repaired(server: Any) -> None:
    nul = b"Moon,Radius km\nKelda,\x00512\nOrris,88\n"
    report = _upload(server, [("evil moons.csv", nul)]).json()
    assert report["tables_stored"] == 1 and report["files_failed"] == []
    assert [w["name"] for w in report["files_warned"]] == ["evil moons.csv"]
    assert "NUL byte removed" in report["files_warned"][0]["warning"]
    assert str(server.state.uploads) not in json.dumps(report)  # no server-side path


def zip_bomb() -> bytes:
    """A workbook-shaped zip whose central directory declares 4 GB uncompressed."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", b"<Types/>")
        zf.writestr("xl/worksheets/sheet1.xml", b"0" * 1024)
    data = bytearray(buffer.getvalue())
    at = data.rfind(b"PK\x01\x02")  # the last member's central directory entry
    data[at + 24 : at + 28] = (0xFFFFFFF0).to_bytes(4, "little")
    return bytes(data)


def test_bad_uploads_are_refused_with_reasons(server: Any) -> None:
    junk = _upload(server, [("junk.xlsx", b"\x00\x01 definitely not a workbook " * 10)])
    assert junk.status_code == 422 and "junk.xlsx" in error_of(junk)
    bombed = _upload(server, [("bomb.xlsx", zip_bomb())])
    assert bombed.status_code == 422 and "uncompressed size 4 GB" in error_of(bombed)
    too_big = _upload(server, [("big.csv", b"a,b\n" + b"1,2\n" * 90000)])
    assert too_big.status_code == 413 and "per-file limit" in error_of(too_big)
    many = _upload(server, [(f"f{i}.csv", b"a,b\n1,2\n") for i in range(20)])
    assert many.status_code == 413 and "limit is 16" in error_of(many)
    empty = _upload(server, [("empty.csv", b"")])
    assert empty.status_code == 400 and "empty" in error_of(empty)
    with server.client() as client:
        none = client.post("/v1/ingest", data={"x": "1"})
    assert none.status_code == 422 and "files" in error_of(none)
    kept = {p.name for p in server.state.uploads.rglob("*") if p.is_file()}
    assert kept <= {"evil comets.csv", "evil moons.csv", "comets.csv"}, kept


def test_concurrent_ask_cap_answers_429_with_retry_after(server: Any, stub_gate: Any) -> None:
    stub_gate.clear()
    try:
        with server.client() as client:
            started = []
            for _ in range(server.state.config.limits.max_asks):
                response = client.post("/v1/asks", json={"question": LAKES_Q})
                assert response.status_code == 202
                started.append(response.json())
            refused = client.post("/v1/asks", json={"question": LAKES_Q})
            assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
            assert "retry later" in error_of(refused)
    finally:
        stub_gate.set()
    with server.client() as client:
        deadline = time.monotonic() + 30
        while client.get("/v1/health").json()["asks_running"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/v1/health").json()["asks_running"] == 0
        assert all(client.get(s["result"]).json()["done"] for s in started)


def test_trace_ids_never_reach_the_filesystem(server: Any) -> None:
    with server.client() as client:
        for tid in ("..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "nope", ".hidden"):
            response = client.get(f"/v1/traces/{tid}")
            assert response.status_code == 404, tid
            message = error_of(response)
            assert "no trace" in message or "nothing at" in message
            assert "root:" not in response.text
        page = client.get("/traces/..%2Fstore")
        assert page.status_code == 404 and "<!doctype html>" in page.text


def test_no_traceback_was_logged(server: Any) -> None:
    assert server.log.tracebacks() == []


def test_a_client_that_leaves_its_stream_stops_its_ask(server: Any, stub_gate: Any) -> None:
    stub_gate.clear()  # the ask waits in its first LLM call
    try:
        with (
            server.client() as client,
            client.stream("POST", "/v1/ask", json={"question": LAKES_Q}) as response,
        ):
            first = next(line for line in response.iter_lines() if line.startswith("data:"))
            assert '"kind": "decision"' in first
        deadline = time.monotonic() + 10
        jobs: list[Any] = []
        while time.monotonic() < deadline and not jobs:
            jobs = [j for j in server.state.asks.jobs() if j.cancel_reason]
            time.sleep(0.05)
        assert jobs and jobs[0].cancel_reason == "the client disconnected"
    finally:
        stub_gate.set()
    job = jobs[0]
    while not job.done and time.monotonic() < deadline + 20:
        time.sleep(0.05)
    assert job.result is not None and job.result.status == "failed", (job.error, job.events)
    assert "AskCancelled" in (job.result.reason or "")


def test_a_full_disk_during_an_upload_names_no_server_folder(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: a store write that fails during an upload (the disk is full) is a 503 that
    names the store's copy by its name, not its folder: every error handler scrubs."""
    import tablequest.service.stores as stores
    from tablequest.corpus import StoreWriteError

    def disk_full(writer: Any, files: Any) -> Any:
        error = StoreWriteError(
            f"cannot write tables to store {writer.name!r}: no space left on the device"
        )
        error.code = "disk_full"
        raise error

    monkeypatch.setattr(stores, "ingest", disk_full)
    folder = str(server.store.parent)
    with server.client() as client:
        files = {"files": ("full.csv", b"a,b\n1,2\n", "text/csv")}
        response = client.post("/v1/ingest", files=files)
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "disk_full"
    message = error_of(response)
    assert f"'{server.store.name}.next-" in message and folder not in message
    assert not list(server.store.parent.glob("*.next-*"))  # the copy went with the error


def test_page_and_sql_errors_name_no_server_folder(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler of raised HTTP errors (a page) and the API's own error answers (SQL) pass
    their messages through the scrubber too (issue 40)."""
    import tablequest.serve.pages as pages
    from tablequest.corpus import SqlError
    from tablequest.trace import UnreadableTrace, store_key

    state = server.state
    state.trace_dir.mkdir(parents=True, exist_ok=True)
    trace = state.trace_dir / "leaky-trace.jsonl"
    # a trace of this server's store (others are not listed: test_serve_traces_per_store)
    mine = store_key(state.stores.path)
    trace.write_text(json.dumps({"store": mine}) + "\n", encoding="utf-8")

    def unreadable(path: Any) -> Any:
        raise UnreadableTrace(path, f"{path} is damaged")

    def failing(query: str, *, limit: int | None = None) -> Any:
        raise SqlError(f"IO Error: cannot read {server.store}")

    monkeypatch.setattr(pages, "read_trace", unreadable)
    monkeypatch.setattr(state, "run_sql", failing)
    try:
        with server.client() as client:
            page = client.get("/traces/leaky-trace")
            sql = client.get("/v1/sql", params={"q": "select 1"})
    finally:
        trace.unlink()
    assert page.status_code == 422 and "leaky-trace.jsonl is damaged" in page.text
    assert str(state.trace_dir) not in page.text
    assert sql.status_code == 400
    assert sql.json()["error"]["message"] == f"IO Error: cannot read {server.store.name}"
