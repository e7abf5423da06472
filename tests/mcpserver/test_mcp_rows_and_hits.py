"""Issue 39, items 10 and 11 through the MCP tools (the SDK's in-memory client, a tiny store):
`get_table` markdown carries each row's id, `search_tables` gives titles and previews, and an
`ask` answered from the LLM cache says so in its usage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.mcpserver.conftest import call_tools, text

from tablequest.corpus import Store, ingest
from tablequest.llm import CachedLLM, Scripted
from tablequest.mcpserver import McpService, open_service
from tablequest.service import ServeConfig

CITIES = "capital_city,population_2020\nAmsterdam,905234\nParis,2148000\nRome,2873000\n"
RIVERS = "<table><caption>Rivers</caption><tr><th>River</th><th>Length km</th></tr>" + "".join(
    f"<tr><td>River {i}</td><td>{i * 10}</td></tr>" for i in range(30)
) + "</table>"  # fmt: skip
REPLY = '{"status": "answered", "answer": "905234"}'


@pytest.fixture
def service(tmp_path: Path) -> Iterator[McpService]:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "cities.csv").write_text(CITIES, encoding="utf-8")
    (folder / "rivers.html").write_text(RIVERS, encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [folder]).ok
    llm = CachedLLM(Scripted(lambda messages, params: REPLY), tmp_path / "cache")
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=None)
    opened = open_service(config, llm=llm)
    yield opened
    opened.close()


def _ids(service: McpService) -> dict[str, str]:
    (listed,) = call_tools(service, [("list_tables", {})])
    return {t["source"]: t["table_id"] for t in listed.structured_content["tables"]}


def test_get_table_markdown_gives_every_row_its_id(service: McpService) -> None:
    ids = _ids(service)
    whole, page, picked = call_tools(
        service,
        [
            ("get_table", {"table_id": ids["cities.csv"]}),
            ("get_table", {"table_id": ids["rivers.html"], "offset": 10, "limit": 3}),
            ("get_table", {"table_id": ids["cities.csv"], "rows": [2, 0], "columns": [1]}),
        ],
    )
    assert text(whole).splitlines()[:3] == [
        "| _row | capital_city | population_2020 |",
        "| --- | --- | --- |",
        "| 0 | Amsterdam | 905234 |",
    ]
    assert "| 2 | Rome | 2873000 |" in text(whole)
    lines = text(page).splitlines()
    assert lines[0] == "### Rivers" and lines[2] == "| _row | River | Length km |"
    assert lines[4:7] == ["| 10 | River 10 | 100 |", "| 11 | River 11 | 110 |",
                          "| 12 | River 12 | 120 |"]  # fmt: skip
    assert text(picked).splitlines()[2:4] == ["| 0 | 905234 |", "| 2 | 2873000 |"]


def test_search_tables_gives_titles_and_previews(service: McpService) -> None:
    (found,) = call_tools(
        service, [("search_tables", {"question": "population of the capital city Amsterdam"})]
    )
    hits = found.structured_content["hits"]
    assert hits[0]["source"] == "cities.csv"  # the compound headers are found (item 9)
    assert hits[0]["title"] == "cities.csv"  # untitled: its file name, never null
    assert "Amsterdam" in hits[0]["preview"] and "capital_city" in hits[0]["preview"]
    (rivers,) = call_tools(service, [("search_tables", {"question": "River 12 length"})])
    first = rivers.structured_content["hits"][0]
    assert first["title"] == "Rivers" and "River" in first["preview"]


def test_an_ask_answered_from_the_cache_says_so(service: McpService) -> None:
    ask: dict[str, Any] = {"question": "What is the population of Amsterdam?", "method": "bm25"}
    first, second = call_tools(service, [("ask", ask), ("ask", ask)])
    assert not first.is_error, text(first)
    assert first.structured_content["answer"] == "905234"
    assert first.structured_content["usage"]["cache_hits"] == 0
    assert second.structured_content["usage"]["cache_hits"] == 1
    assert second.structured_content["usage"]["calls"] == 1
    assert '"cache_hits": 1' in text(second)  # the text block says it too
