"""No /v1 response names a server path: sources are relative to the corpus root (issue 25)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tablequest.corpus import Store, ingest
from tablequest.llm.config import resolve_config
from tablequest.llm.stub import StubServer
from tablequest.serve import ServeConfig, create_app
from tablequest.service import Scrubber, public_sources

LAKES_Q = "How deep is Quillsee?"
LAKES_HTML = """<table><caption>Lakes of Varnholm</caption>
<tr><th>Lake</th><th>Depth m</th></tr>
<tr><td>Mirrow</td><td>38</td></tr><tr><td>Tarnel</td><td>12</td></tr>
<tr><td>Quillsee</td><td>61</td></tr></table>
"""


class Served:
    """An app over a store ingested from an absolute folder; every server path (store,
    uploads, traces, corpus) lies under `tmp`."""

    def __init__(self, tmp: Path, client: TestClient) -> None:
        self.tmp = tmp
        self.client = client

    def clean(self, text: str) -> str:
        """`text`, after checking it names no server path."""
        assert str(self.tmp) not in text, text
        return text

    def ask_stream(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        with self.client.stream("POST", "/v1/ask", json=body) as response:
            assert response.status_code == 200
            return parse_sse(self.clean("\n".join(response.iter_lines())))


def parse_sse(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        lines = block.splitlines()
        name = next((x[6:].strip() for x in lines if x.startswith("event:")), "message")
        data = [x[5:].strip() for x in lines if x.startswith("data:")]
        if data:
            out.append((name, json.loads("\n".join(data))))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, stub: StubServer) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("sources")
    corpus = tmp / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "lakes.html").write_text(LAKES_HTML, encoding="utf-8")
    (corpus / "sub" / "comets.csv").write_text("Comet,Period years\nHalvorsen,76\n")
    with Store(tmp / "store.duckdb") as store:
        assert ingest(store, [corpus]).ok
    config = ServeConfig(
        store=tmp / "store.duckdb",
        trace_dir=tmp / "traces",
        token=None,
        llm_config=resolve_config(url=stub.url, model="stub-model", cache=False),
    )
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        yield Served(tmp, client)


def test_tables_search_and_table_name_sources_relative_to_the_corpus(served: Served) -> None:
    client = served.client
    listing = client.get("/v1/tables")
    sources = {t["source"] for t in json.loads(served.clean(listing.text))["tables"]}
    assert sources == {"lakes.html", "sub/comets.csv"}
    found = client.get("/v1/tables", params={"q": "sub/com"}).json()["tables"]
    assert [t["source"] for t in found] == ["sub/comets.csv"]
    tid = found[0]["table_id"]
    detail = client.get(f"/v1/tables/{tid}")
    assert json.loads(served.clean(detail.text))["source"] == "sub/comets.csv"
    for params in ({"q": "Halvorsen"}, {"q": "Halvorsen", "preview": "true"}):
        hits = client.get("/v1/search", params=params)
        assert json.loads(served.clean(hits.text))["hits"][0]["source"] == "sub/comets.csv"


def test_asks_and_traces_name_no_server_path(served: Served) -> None:
    events = served.ask_stream({"question": LAKES_Q, "method": "seek"})
    result = events[-1][1]
    assert result["answer"] == "61"
    assert [t["source"] for t in result["tables_consulted"]] == ["lakes.html"]
    trace_id = result["trace"].removeprefix("/v1/traces/")
    client = served.client
    plain = client.post("/v1/ask", json={"question": LAKES_Q, "stream": False})
    assert json.loads(served.clean(plain.text))["final_table"]["source"] == "lakes.html"
    job = client.post("/v1/asks", json={"question": LAKES_Q, "method": "seek"}).json()
    with client.stream("GET", job["events"], params={"view": "1"}) as response:
        served.clean("\n".join(response.iter_lines()))
    served.clean(client.get(job["result"]).text)
    listed = client.get("/v1/traces")
    assert trace_id in [t["id"] for t in json.loads(served.clean(listed.text))]
    stored = client.get(result["trace"])  # the result names the trace's API address
    assert stored.status_code == 200 and json.loads(served.clean(stored.text))["events"]


def test_ingest_reports_and_uploaded_sources_name_no_server_path(served: Served) -> None:
    files = [
        ("files", ("moons.csv", io.BytesIO(b"Moon,Radius km\nKelda,\x00512\n"))),
        ("files", ("junk.xlsx", io.BytesIO(b"\x00\x01 not a workbook " * 10))),
    ]
    client = served.client
    report = client.post("/v1/ingest", files=files)
    body = json.loads(served.clean(report.text))
    assert report.status_code == 200 and body["files_failed"][0]["name"] == "junk.xlsx"
    stored = body["files"][0]["stored_as"]
    hits = client.get("/v1/search", params={"q": "Kelda"})
    assert json.loads(served.clean(hits.text))["hits"][0]["source"] == stored


def test_sources_of_unrelated_trees_and_uploads(tmp_path: Path) -> None:
    uploads = tmp_path / "store.duckdb.uploads"
    paths = [
        "/data/corpus/a.csv",
        "/data/corpus/deep/b.csv",
        "/home/me/tables/c.csv",
        str(uploads / "0123456789ab" / "d.csv"),
        "relative/e.csv",
    ]
    shown, roots = public_sources(paths, uploads)
    assert shown == {
        "/data/corpus/a.csv": "a.csv",
        "/data/corpus/deep/b.csv": "deep/b.csv",
        "/home/me/tables/c.csv": "c.csv",
        str(uploads / "0123456789ab" / "d.csv"): "0123456789ab/d.csv",
        "relative/e.csv": "relative/e.csv",
    }
    assert set(roots) == {"/data/corpus", "/home/me/tables", str(uploads)}
    one, _ = public_sources(["/srv/x/t.csv"], None)
    assert one == {"/srv/x/t.csv": "t.csv"}


def test_scrubber_cuts_only_whole_folders() -> None:
    scrub = Scrubber(["/srv/data"], Path("/srv/traces"))
    assert scrub.text("cannot read '/srv/data/x/t.csv'") == "cannot read 'x/t.csv'"
    assert scrub.text("/srv/database/t.csv") == "/srv/database/t.csv"
    result = scrub.result({"trace": "/srv/traces/abc.jsonl", "details": {"charts": [
        "/srv/traces/abc-charts/chart-1.png"]}})  # fmt: skip
    assert result == {"trace": "/v1/traces/abc", "details": {"charts": ["abc-charts/chart-1.png"]}}


def test_web_pages_name_no_server_folder(served: Served) -> None:
    """The corpus page says where each table came from relative to the corpus root (it gave
    the absolute server folder), and a table page names its file the same way."""
    corpus = served.clean(served.client.get("/").text)
    assert "comets.csv" in corpus and '<div class="note path">sub</div>' in corpus
    table_id = next(
        t["table_id"] for t in served.client.get("/v1/tables").json()["tables"]
        if t["source"].endswith("comets.csv")
    )  # fmt: skip
    page = served.clean(served.client.get(f"/tables/{table_id}").text)
    assert "Halvorsen" in page


def test_answer_card_and_trace_page_name_no_server_folder(served: Served) -> None:
    """With a table id, corpus methods put the table's stored (absolute) path in the result's
    sources: the answer card showed it, and the trace page showed the trace's paths, where
    the API's JSON had them cut (a review found both)."""
    client = served.client
    tid = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]["table_id"]
    job = client.post(
        "/v1/asks", json={"question": LAKES_Q, "method": "seek", "table_ids": [tid]}
    ).json()
    state = client.get(job["result"]).json()
    for _ in range(600):
        if state["done"]:
            break
        time.sleep(0.05)
        state = client.get(job["result"]).json()
    assert state["done"] and state["result"]["answer"] == "61", state
    card = served.clean(client.get(f"/asks/{job['id']}/result").text)
    assert "lakes.html" in card
    trace_id = state["result"]["trace"].removeprefix("/v1/traces/")
    store = served.tmp / "store.duckdb"  # an event naming the store, as DTR's memory writes
    event = {"t": 0.2, "kind": "fallback", "stage": "memory", "where": f"store {store}"}
    with (served.tmp / "traces" / f"{trace_id}.jsonl").open("a") as fh:
        fh.write(json.dumps(event) + "\n")
    page = client.get(f"/traces/{trace_id}")
    assert page.status_code == 200 and "store store.duckdb" in served.clean(page.text)


def test_the_corpus_page_tells_an_empty_store_from_an_empty_filter_or_page(
    served: Served,
) -> None:
    """`/?q=zzzz` and `/?offset=100` said "No tables yet: upload some" over a store of
    tables (a review found it)."""
    stored = len(served.client.get("/v1/tables").json()["tables"])  # earlier tests upload
    none = served.client.get("/", params={"q": "zzzz"}).text
    assert f"holds “zzzz” ({stored} tables in the store)" in none
    past = served.client.get("/", params={"offset": "100"}).text
    assert f"Nothing past table {stored}" in past
    assert "No tables yet" not in none + past
