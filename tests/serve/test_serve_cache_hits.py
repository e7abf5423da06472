"""Issue 39, item 10: the web answer card says how many of the ask's LLM calls the cache
answered (an in-process app over a tiny store, a scripted model behind the LLM cache)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient
from tests.serve.conftest import finished_ask

from tablequest.corpus import Store, ingest
from tablequest.llm import CachedLLM, Scripted
from tablequest.serve import ServeConfig, create_app

REPLY = '{"status": "answered", "answer": "905234"}'


def _card(client: TestClient, question: str) -> str:
    state, card = finished_ask(client, {"question": question, "method": "bm25"})
    assert state["result"]["answer"] == "905234", state
    return card


def test_the_answer_card_counts_the_calls_the_cache_answered(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "cities.csv").write_text("city,population\nAmsterdam,905234\n", encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [folder]).ok
    model = Scripted(lambda messages, params: REPLY)
    llm = CachedLLM(model, tmp_path / "cache")
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=None)
    with TestClient(create_app(config, llm=llm), base_url="http://127.0.0.1") as client:
        first = _card(client, "How many people live in Amsterdam?")
        second = _card(client, "How many people live in Amsterdam?")
    usage = re.compile(r'<span id="cache-hits">(\d+) from the LLM cache</span>')
    assert [m.group(1) for m in map(usage.search, (first, second)) if m] == ["0", "1"]
    assert len(model.calls) == 1  # the second ask made no call
