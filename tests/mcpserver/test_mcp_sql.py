"""MCP `query_sql`, `list_tables`' relation names and `get_table`'s sort, filters, facets and
paging on a table's relation, with the SDK's own client (in memory)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp import Client
from tests.mcpserver.conftest import INJECTION, Bed, call_tools, config, text

from tablequest.corpus import Store, ingest
from tablequest.corpus.storage.relations import Column, Relation
from tablequest.mcpserver import McpService, open_service
from tablequest.mcpserver.tools import sql_overview
from tablequest.service import ServeConfig


@pytest.fixture(scope="module")
def service(bed: Bed) -> Iterator[McpService]:
    opened = open_service(config(bed, llm_url=None, token=None), warm=False)
    yield opened
    opened.close()


def _call(service: McpService, name: str, args: dict[str, Any]) -> Any:
    return call_tools(service, [(name, args)])[0]


def _digest(bed: Bed) -> str:
    return hashlib.sha256(bed.store.read_bytes()).hexdigest()


def test_list_tables_and_the_description_give_sql_names_and_typed_columns(
    service: McpService,
) -> None:
    async def main() -> Any:
        async with Client(service.server) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(main)}
    listed = _call(service, "list_tables", {"filter": "big"}).structured_content
    by_sql = _call(service, "list_tables", {"filter": "lakes_of"}).structured_content
    entry = listed["tables"][0]
    assert entry["sql_name"] == "big"
    assert entry["columns"] == [
        {"name": "id", "type": "BIGINT"},
        {"name": "name", "type": "VARCHAR"},
        {"name": "value", "type": "BIGINT"},
    ]
    assert by_sql["tables"][0]["source"] == "lakes.html"  # the filter matches sql_name too
    description = tools["query_sql"].description or ""
    assert "list_tables gives every table's sql_name" in description
    assert "big(id BIGINT, name VARCHAR, value BIGINT)" in description
    assert "lakes_of_varnholm(lake VARCHAR, size_area_km2 BIGINT" in description
    assert set(tools["query_sql"].input_schema["properties"]) == {"query", "limit", "max_chars"}


def test_sql_overview_is_bounded() -> None:
    cols = tuple(Column(f"c{j}", (f"C{j}",), "BIGINT", j) for j in range(14))
    relations = [Relation(f"t{i:015x}", f"rel_{i}", cols) for i in range(40)]
    overview = sql_overview(relations, max_relations=30, max_chars=3000)
    assert overview.startswith("rel_0(c0 BIGINT, c1 BIGINT,") and "… 4 more)" in overview
    assert len(overview) < 3100 and overview.endswith(" more (list_tables)")
    assert "rel_30(" not in overview
    assert sql_overview([]) == ""


def test_query_sql_returns_typed_columns_and_rows(service: McpService) -> None:
    result = _call(
        service,
        "query_sql",
        {"query": "SELECT name, value FROM big WHERE value >= 2991 ORDER BY value DESC"},
    )
    assert not result.is_error
    data = result.structured_content
    assert data["columns"] == [
        {"name": "name", "type": "VARCHAR"},
        {"name": "value", "type": "BIGINT"},
    ]
    assert data["rows"] == [["item 999", 2997], ["item 998", 2994], ["item 997", 2991]]
    assert data["truncated"] is False and data["row_count"] == 3
    assert '"item 999"' in text(result)  # the text block carries the same JSON
    agg = _call(
        service,
        "query_sql",
        {"query": "select lake, size_depth_m from lakes_of_varnholm order by 2 desc limit 1"},
    ).structured_content
    assert agg["rows"] == [["Quillsee", 61]]


def test_query_sql_limit_and_size_budget_cut_rows_and_say_so(service: McpService) -> None:
    by_limit, by_size = call_tools(
        service,
        [
            ("query_sql", {"query": "select * from big", "limit": 7}),
            ("query_sql", {"query": "select repeat('x', 200) as w from big", "max_chars": 2000}),
        ],
    )
    assert by_limit.structured_content["row_count"] == 7
    assert by_limit.structured_content["truncated_by"] == "rows"
    assert by_limit.structured_content["rows"][0][0] == 0  # _row first
    cut = by_size.structured_content
    assert cut["truncated"] is True and cut["truncated_by"] == "max_chars"
    assert 0 < cut["row_count"] < 100 and len(text(by_size)) <= 2000


def test_query_sql_refuses_writes_files_and_the_stores_own_tables(
    service: McpService, bed: Bed
) -> None:
    before = _digest(bed)
    refused = call_tools(
        service,
        [
            ("query_sql", {"query": "DELETE FROM big"}),
            ("query_sql", {"query": "SELECT * FROM read_csv('/etc/passwd')"}),
            ("query_sql", {"query": "select * from tables"}),
            ("query_sql", {"query": "select path from tables"}),
            ("query_sql", {"query": "select 1; drop table big"}),
            ("query_sql", {"query": "select * from big, sniff_csv('/etc/hosts')"}),
            ("query_sql", {"query": "select current_setting('home_directory')"}),
        ],
    )
    assert all(r.is_error for r in refused), [text(r) for r in refused if not r.is_error]
    messages = [text(r) for r in refused]
    assert "only SELECT statements run here (DELETE refused)" in messages[0]
    assert "read_csv() is not available here" in messages[1]
    assert "list_tables gives each table's sql_name" in messages[1]  # not a CLI command
    assert "tablequest tables" not in messages[1]
    assert "no table 'tables' here" in messages[2] and "no table 'tables' here" in messages[3]
    assert "exactly one SQL statement" in messages[4]
    assert "sniff_csv() is not available" in messages[5]
    assert "current_setting() is not available" in messages[6]
    assert all(str(bed.store.parent) not in m for m in messages)
    after = _call(service, "query_sql", {"query": "select count(*) as n from big"})
    assert after.structured_content["rows"] == [[1000]]
    assert _digest(bed) == before  # the store file is untouched


def test_query_sql_errors_give_line_and_column(service: McpService) -> None:
    syntax, unknown, empty = call_tools(
        service,
        [
            ("query_sql", {"query": "select name\nfrom big\nwhere value >> = 3"}),
            ("query_sql", {"query": "select * from bigg"}),
            ("query_sql", {"query": ""}),
        ],
    )
    assert syntax.is_error and "syntax error" in text(syntax)
    assert "(line 3, column " in text(syntax)
    assert unknown.is_error and "no table 'bigg' here. Did you mean big" in text(unknown)
    assert empty.is_error and text(empty).startswith("query_sql: query: ")


def test_query_sql_reads_hostile_cells_as_data(service: McpService) -> None:
    result = _call(service, "query_sql", {"query": "select note, owner from injection"})
    assert result.structured_content["rows"][0] == [INJECTION, "mallory"]
    assert service.tools.runner.runs == 0 and service.tools.runner._sandbox is None


def test_get_table_pages_a_sorted_filtered_selection_to_its_end(
    service: McpService, bed: Bed
) -> None:
    big = bed.ids["big.csv"]
    seen: list[int] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        window = _call(
            service,
            "get_table",
            {"table_id": big, "where": ["value > 2900"], "sort": "value", "descending": True,
             "offset": offset, "limit": 10, "format": "json"},
        ).structured_content  # fmt: skip
        seen += window["row_ids"]
        offset = window["next_offset"]
        pages += 1
    assert window["total"] == 33 and pages == 4
    assert seen == list(range(999, 966, -1))
    assert window["rows"][-1] == ["967", "item 967", "2901"]  # cells as stored
    assert window["where"] == ["value > 2900"] and window["sort"] == "value"

    last = _call(service, "get_table", {"table_id": big, "offset": 995, "limit": 10})
    assert last.structured_content["row_ids"] == [995, 996, 997, 998, 999]
    assert last.structured_content["next_offset"] is None  # the old paging, unchanged
    assert text(last).endswith("_5 of 1000 body rows, row ids 995..999._")


def test_get_table_markdown_names_the_selection_and_facets(service: McpService, bed: Bed) -> None:
    lakes = bed.ids["lakes.html"]
    sorted_page, filtered, faceted, none, as_json = call_tools(
        service,
        [
            ("get_table", {"table_id": lakes, "sort": "Size / Depth m", "descending": True,
                           "limit": 2}),
            ("get_table", {"table_id": lakes, "where": ["lake ^ t"]}),
            ("get_table", {"table_id": lakes, "facets": ["region"],
                           "where": ["size_area_km2 > 100"]}),
            ("get_table", {"table_id": lakes, "where": ["lake ~ zzz"]}),
            ("get_table", {"table_id": lakes, "facets": ["region"], "format": "json"}),
        ],
    )  # fmt: skip
    assert not any(r.is_error for r in (sorted_page, filtered, faceted, none, as_json))
    md = text(sorted_page)
    assert md.index("Quillsee") < md.index("Mirrow") and "Tarnel" not in md
    assert "| Lake | Size / Area km2 | Size / Depth m | Region |" in md  # header paths kept
    assert sorted_page.structured_content["row_ids"] == [2, 0]
    assert md.endswith(
        "_2 of 3 body rows, sorted by size_depth_m descending, row ids 2, 0; next page: offset 2._"
    )
    assert filtered.structured_content["row_ids"] == [1]
    assert text(filtered).endswith("_1 of 1 body rows where lake ^ t (of 3), row ids 1._")
    assert none.structured_content["row_ids"] == [] and none.structured_content["total"] == 0
    assert text(none).endswith("_No body rows where lake ~ zzz (of 3)._")
    facets = faceted.structured_content["facets"]["region"]
    assert sum(f["count"] for f in facets) == faceted.structured_content["total"] == 2
    assert "Most frequent values among the 2 matching rows (value: count):" in text(faceted)
    everything = as_json.structured_content["facets"]["region"]
    assert sum(f["count"] for f in everything) == 3
    assert '"facets"' in text(as_json)


def test_get_table_bad_sort_filter_or_facet_is_a_tool_error_naming_columns(
    service: McpService, bed: Bed
) -> None:
    lakes = bed.ids["lakes.html"]
    bad = call_tools(
        service,
        [
            ("get_table", {"table_id": lakes, "sort": "Width"}),
            ("get_table", {"table_id": lakes, "where": ["depth > 3"]}),
            ("get_table", {"table_id": lakes, "where": ["size_depth_m > deep"]}),
            ("get_table", {"table_id": lakes, "where": ["no operator here"]}),
            ("get_table", {"table_id": lakes, "facets": ["nope"]}),
            ("get_table", {"table_id": lakes, "rows": [0], "sort": "lake"}),
            ("get_table", {"table_id": lakes, "descending": True}),
        ],
    )
    assert all(r.is_error for r in bad), [text(r) for r in bad if not r.is_error]
    messages = [text(r) for r in bad]
    assert "no column 'Width' in this table" in messages[0]
    assert "lake ('Lake')" in messages[0] and "size_depth_m ('Size / Depth m')" in messages[0]
    assert "no column 'depth'" in messages[1]
    assert "'deep' is not a bigint value" in messages[2]
    assert "cannot read the filter 'no operator here'" in messages[3]
    assert "no column 'nope'" in messages[4]
    assert "give one or the other" in messages[5]
    assert "give sort too" in messages[6]
    again = _call(service, "get_table", {"table_id": lakes, "limit": 1})
    assert not again.is_error


def test_a_new_store_generation_gets_a_new_runner_and_the_old_one_closes(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "prices.csv", tmp_path / "towns.csv"
    first.write_text("item,price\nbread,3\ntea,5\n", encoding="utf-8")
    second.write_text("town,people\nVarna,12\n", encoding="utf-8")
    store = tmp_path / "s.duckdb"
    with Store(store) as opened:
        ingest(opened, [first])
    served = open_service(
        ServeConfig(store=store, trace_dir=tmp_path / "traces", token=None), warm=False
    )
    try:
        before = _call(served, "query_sql", {"query": "select sum(price) as s from prices"})
        old = served.tools.sql._slot
        assert before.structured_content["rows"] == [[8]] and old is not None
        missing = _call(served, "query_sql", {"query": "select * from towns"})
        assert missing.is_error and "no table 'towns' here" in text(missing)
        served.state.stores.ingest([second])  # copy-on-write: generation 2
        after = _call(served, "query_sql", {"query": "select town, people from towns"})
        assert after.structured_content["rows"] == [["Varna", 12]]
        assert served.tools.sql._slot is not old and old.retired and old.refs == 0
        with pytest.raises(duckdb.Error):  # the replaced runner's connection is closed
            old.runner.con.execute("select 1")
    finally:
        served.close()
    assert served.tools.sql._slot is None
