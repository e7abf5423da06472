"""SQL and table browsing through a real server (issue 37): ``/v1/sql`` (GET and POST, JSON,
CSV and Parquet, refused statements that leave the store as it was, errors with line and
column, the server's row cap), ``/v1/tables/{id}/rows`` (paging, sorting, filters, facets,
typed downloads), the table page (pages, sort links, filters, facets, downloads), the SQL
page (results, escaping, errors), a store of format 1, and an upload that swaps the store's
generation under the SQL runner."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.sqlstores import downgrade
from tests.testdata import LAKES_HTML

from tablequest.corpus import Store, ingest
from tablequest.serve import Limits

from .conftest import TOKEN, XSS_CSV, running_server

CITIES = ("Varna", "Ruse", "Sofia", "Burgas")
N_FUEL = 250
MAX_SQL_ROWS = 100
PAGE = 100  # the server's max_table_rows


def fuel_rows() -> list[tuple[str, float, str, str]]:
    """(station, price, city, day): prices in a scrambled order, so sorting shows."""
    start = dt.date(2024, 1, 1)
    return [
        (f"s{i:03d}", round(1 + (i * 37 % N_FUEL) / 100, 2), CITIES[i % 4],
         (start + dt.timedelta(days=i)).isoformat())
        for i in range(N_FUEL)
    ]  # fmt: skip


def write_tables(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["station,price,city,day"] + [f"{s},{p},{c},{d}" for s, p, c, d in fuel_rows()]
    (folder / "fuel.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "hostile.csv").write_text(XSS_CSV, encoding="utf-8")
    (folder / "lakes.html").write_text(LAKES_HTML, encoding="utf-8")
    bell = {"header": ["name", "note"], "rows": [["bell", "a\u0007b"]]}  # no XLSX cell holds it
    (folder / "bell.json").write_text(json.dumps(bell), encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("sql")
    write_tables(tmp / "tables")
    with Store(tmp / "store.duckdb") as store:
        assert ingest(store, [tmp / "tables"]).ok
    limits = Limits(max_sql_rows=MAX_SQL_ROWS, max_table_rows=PAGE)
    with running_server(tmp, store=tmp / "store.duckdb", limits=limits) as (url, app, log):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            ids = {t["sql_name"]: t["table_id"] for t in client.get("/v1/tables").json()["tables"]}
            yield client, ids, app, log, tmp / "store.duckdb"


def sql(client: httpx.Client, query: str, **params: Any) -> httpx.Response:
    return client.get("/v1/sql", params={"q": query, **params})


# -- /v1/sql -------------------------------------------------------------------------------
def test_sql_answers_a_query_by_get_and_post(site: Any) -> None:
    client, ids, *_ = site
    assert set(ids) == {"fuel", "hostile", "lakes_of_varnholm", "bell"}
    query = "SELECT city, count(*) AS n, max(price) AS top FROM fuel GROUP BY city ORDER BY city"
    body = sql(client, query).json()
    assert body["columns"] == [
        {"name": "city", "type": "VARCHAR"},
        {"name": "n", "type": "BIGINT"},
        {"name": "top", "type": "DOUBLE"},
    ]
    expected = sorted(
        (c, sum(1 for r in fuel_rows() if r[2] == c), max(r[1] for r in fuel_rows() if r[2] == c))
        for c in CITIES
    )
    assert [tuple(r) for r in body["rows"]] == expected
    assert body["row_count"] == 4 and body["truncated"] is False
    assert body["limit"] == MAX_SQL_ROWS  # the default 1,000 within the server's cap
    posted = client.post("/v1/sql", json={"query": query, "limit": 2}).json()
    assert posted["rows"] == body["rows"][:2] and posted["truncated_by"] == "rows"
    dates = sql(client, "SELECT day FROM fuel WHERE station = 's001'").json()
    assert dates["columns"][0]["type"] == "DATE" and dates["rows"] == [["2024-01-02"]]
    lakes = sql(client, "SELECT lake FROM lakes_of_varnholm ORDER BY size_depth_m DESC").json()
    assert lakes["rows"][0] == ["Quillsee"]
    # no token, no query
    assert httpx.get(f"{client.base_url}/v1/sql", params={"q": "SELECT 1"}).status_code == 401


def test_sql_caps_the_rows_at_the_servers_limit(site: Any) -> None:
    client, *_ = site
    body = sql(client, "SELECT * FROM fuel", limit=10**6).json()
    assert body["limit"] == MAX_SQL_ROWS and body["row_count"] == MAX_SQL_ROWS
    assert body["truncated"] is True and body["truncated_by"] == "rows"
    assert sql(client, "SELECT * FROM fuel", limit=0).status_code == 422
    empty = sql(client, "   ")
    assert empty.status_code == 422 and "empty" in empty.json()["error"]["message"]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("DELETE FROM fuel", "only SELECT"),
        ("DROP TABLE fuel", "only SELECT"),
        ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
        ("SELECT * FROM tables", "no table 'tables'"),
        ("SELECT 1; DELETE FROM fuel", "exactly one"),
        ("COPY fuel TO 'out.csv'", "only SELECT"),
    ],
)
def test_sql_refuses_what_is_not_a_select_of_the_tables(site: Any, query: str, says: str) -> None:
    client, _, _, log, store = site
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    response = client.post("/v1/sql", json={"query": query})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "sql_refused" and says in error["message"]
    assert "root:" not in response.text and str(store.parent) not in response.text
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before  # the store as it was
    assert sql(client, "SELECT count(*) FROM fuel").json()["rows"] == [[N_FUEL]]
    assert log.tracebacks() == []


def test_sql_errors_name_the_line_and_column(site: Any) -> None:
    client, *_ = site
    response = sql(client, "SELECT station\nFROM fuel\nWHERE price >> 'x' AND")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "sql" and error["line"] == 3 and isinstance(error["column"], int)
    assert f"(line 3, column {error['column']})" in error["message"]
    unknown = sql(client, "SELECT nope FROM fuel").json()["error"]
    assert unknown["code"] == "sql" and "nope" in unknown["message"]
    assert unknown["line"] == 1 and unknown["column"] == 8


def test_sql_takes_q_or_query_in_get_and_post_and_a_timeout_has_its_code(
    site: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _, app, *_ = site
    query = "SELECT count(*) FROM fuel"
    answers = [
        client.get("/v1/sql", params={"query": query}),
        client.post("/v1/sql", json={"q": query}),
    ]
    assert [a.json()["rows"] for a in answers] == [[[N_FUEL]], [[N_FUEL]]]
    for bad in (
        client.get("/v1/sql", params={"q": query, "query": query}),
        client.get("/v1/sql"),
        client.post("/v1/sql", json={"q": query, "query": query}),
        client.post("/v1/sql", json={"limit": 3}),
    ):
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid", bad.text
        assert "exactly one" in bad.json()["error"]["message"], bad.text
    state = app.state.tq
    limits = dataclasses.replace(state.config.limits, sql_timeout=0.2)
    monkeypatch.setattr(state, "config", dataclasses.replace(state.config, limits=limits))
    slow = "SELECT count(*) FROM range(100000000) a, range(100000000) b"
    timed_out = sql(client, slow)
    assert timed_out.status_code == 422
    assert timed_out.json()["error"]["code"] == "sql_timeout"
    assert "time limit of 0.2 s" in timed_out.json()["error"]["message"]


def test_sql_results_as_csv_and_parquet(site: Any) -> None:
    client, *_ = site
    query = "SELECT station, price, day, price > 3 AS dear, NULL AS nothing FROM fuel ORDER BY _row"
    response = sql(client, query, format="csv", limit=3)
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert 'filename="query.csv"' in response.headers["content-disposition"]
    assert response.headers["x-truncated"] == "rows" and response.headers["x-row-count"] == "3"
    rows = list(csv.reader(io.StringIO(response.text)))
    first = fuel_rows()[0]
    assert rows[0] == ["station", "price", "day", "dear", "nothing"]
    assert rows[1] == [first[0], f"{first[1]:g}", first[3], "false", ""] and len(rows) == 4
    parquet = client.post("/v1/sql", json={"query": query, "format": "parquet"})
    assert parquet.headers["content-type"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.num_rows == MAX_SQL_ROWS and table.schema.field("price").type == pa.float64()
    assert table.schema.field("day").type == pa.date32()
    assert sql(client, "SELECT 1", format="xml").status_code == 422
    tsv = sql(client, "SELECT station, price FROM fuel ORDER BY _row", format="tsv", limit=1)
    assert tsv.text.splitlines() == ["station\tprice", f"{first[0]}\t{first[1]:g}"]
    book = sql(client, "SELECT station FROM fuel ORDER BY _row", format="xlsx", limit=2)
    assert 'filename="query.xlsx"' in book.headers["content-disposition"]
    sheet = openpyxl.load_workbook(io.BytesIO(book.content)).active
    assert list(sheet.iter_rows(values_only=True)) == [
        ("station",),
        (first[0],),
        (fuel_rows()[1][0],),
    ]


def test_relations_are_listed_with_their_types(site: Any) -> None:
    client, ids, *_ = site
    relations = {r["sql_name"]: r for r in client.get("/v1/relations").json()}
    fuel = relations["fuel"]
    assert fuel["table_id"] == ids["fuel"] and fuel["source"] == "fuel.csv"
    assert [(c["name"], c["type"]) for c in fuel["columns"]] == [
        ("station", "VARCHAR"), ("price", "DOUBLE"), ("city", "VARCHAR"), ("day", "DATE"),
    ]  # fmt: skip
    assert relations["lakes_of_varnholm"]["columns"][2]["header"] == ["Size", "Depth m"]


# -- /v1/tables/{id}/rows ------------------------------------------------------------------
def rows_of(client: httpx.Client, table_id: str, **params: Any) -> httpx.Response:
    return client.get(f"/v1/tables/{table_id}/rows", params=params)


def test_rows_page_sort_filter_and_facets(site: Any) -> None:
    client, ids, *_ = site
    fuel = fuel_rows()
    page = rows_of(client, ids["fuel"], offset=10, limit=5).json()
    assert (page["total"], page["offset"], page["limit"]) == (N_FUEL, 10, 5)
    assert page["row_ids"] == [10, 11, 12, 13, 14] and page["sql_name"] == "fuel"
    assert page["rows"][0] == [fuel[10][0], fuel[10][1], fuel[10][2], fuel[10][3]]
    assert page["text"][0] == [fuel[10][0], str(fuel[10][1]), fuel[10][2], fuel[10][3]]
    assert page["source"] == "fuel.csv" and page["columns"][1]["type"] == "DOUBLE"
    assert rows_of(client, ids["fuel"]).json()["limit"] == PAGE  # the server's cap
    assert rows_of(client, ids["fuel"], limit=10**6).json()["limit"] == PAGE

    dear = rows_of(client, ids["fuel"], sort="price", desc=1, limit=3).json()
    by_price = sorted(range(N_FUEL), key=lambda i: (-fuel[i][1], i))
    assert dear["row_ids"] == by_price[:3] and dear["sort"] == "price" and dear["descending"]

    where = ["city = Varna", "price > 2"]
    chosen = rows_of(client, ids["fuel"], where=where, facets=["city", "station"], facet_k=2)
    body = chosen.json()
    matching = [i for i, r in enumerate(fuel) if r[2] == "Varna" and r[1] > 2]
    assert body["total"] == len(matching) and body["row_ids"] == matching[:PAGE]
    assert body["where"] == where
    assert body["facets"]["city"] == [{"value": "Varna", "count": len(matching)}]
    assert len(body["facets"]["station"]) == 2
    contains = rows_of(client, ids["fuel"], where="station ~ S00", sort="station").json()
    assert contains["row_ids"] == list(range(10))  # any case; "s000" … "s009"
    # a column named by its header path
    lakes = rows_of(client, ids["lakes_of_varnholm"], sort="Size / Depth m").json()
    assert lakes["sort"] == "size_depth_m" and lakes["row_ids"] == [1, 0, 2]


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"where": "nope = 3"}, "columns: station, price, city, day"),
        ({"sort": "nope"}, "no column 'nope'"),
        ({"facets": "nope"}, "no column 'nope'"),
        ({"where": "price > cheap"}, "'cheap' is not a double value"),
        ({"where": "price"}, "COLUMN OP VALUE"),
        ({"where": "day < yesterday", "format": "csv"}, "'yesterday' is not a date value"),
        ({"where": "station = " + "x" * 1000}, "longer than 1,000 characters"),
        ({"where": [f"price > {i}" for i in range(17)]}, "at most 16 filters"),
        ({"facets": ["city"] * 9}, "at most 8 facets"),
    ],
)
def test_rows_refuse_unknown_columns_and_bad_filters(
    site: Any, params: dict[str, Any], says: str
) -> None:
    client, ids, _, log, _ = site
    response = rows_of(client, ids["fuel"], **params)
    assert response.status_code == 422, response.text
    assert says in response.json()["error"]["message"]
    assert log.tracebacks() == []


def test_rows_unknown_table(site: Any) -> None:
    client, *_ = site
    assert rows_of(client, "t000000000000000").status_code == 404


def test_rows_download_typed_files(site: Any) -> None:
    client, ids, *_ = site
    fuel = fuel_rows()
    where = {"where": "city = Ruse", "sort": "price"}
    ruse = sorted((r for r in fuel if r[2] == "Ruse"), key=lambda r: r[1])
    parquet = rows_of(client, ids["fuel"], format="parquet", **where)
    assert parquet.status_code == 200
    assert parquet.headers["content-type"] == "application/vnd.apache.parquet"
    assert 'filename="fuel.parquet"' in parquet.headers["content-disposition"]
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.column_names == ["station", "price", "city", "day"]
    assert table.schema.field("price").type == pa.float64()
    assert table.column("price").to_pylist() == [r[1] for r in ruse]  # every matching row
    as_csv = rows_of(client, ids["fuel"], format="csv", limit=2)
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert list(csv.reader(io.StringIO(as_csv.text)))[1][:2] == [fuel[0][0], "1"]  # typed
    raw = rows_of(client, ids["fuel"], format="csv", raw=1, limit=2)
    assert list(csv.reader(io.StringIO(raw.text)))[1][:2] == [fuel[0][0], "1.0"]  # as stored
    tsv = rows_of(client, ids["fuel"], format="tsv", limit=1).text
    assert tsv.splitlines()[0].split("\t") == ["station", "price", "city", "day"]
    records = json.loads(rows_of(client, ids["fuel"], format="json", **where).content)
    assert len(records) == len(ruse) and records[0]["day"] == ruse[0][3]
    book = openpyxl.load_workbook(io.BytesIO(rows_of(client, ids["fuel"], format="xlsx").content))
    cells = list(book.active.iter_rows(values_only=True))
    assert cells[0] == ("station", "price", "city", "day")
    assert len(cells) == N_FUEL + 1 and cells[1][1] == fuel[0][1]
    lakes = pq.read_table(
        io.BytesIO(rows_of(client, ids["lakes_of_varnholm"], format="parquet").content)
    )
    assert lakes.column_names == ["Lake", "Size / Area km2", "Size / Depth m", "Region"]
    assert rows_of(client, ids["fuel"], format="parquet", raw=1).status_code == 422
    bell = rows_of(client, ids["bell"], format="xlsx")  # a control character becomes U+FFFD
    assert bell.status_code == 200
    rang = list(openpyxl.load_workbook(io.BytesIO(bell.content)).active.iter_rows(values_only=True))
    assert any("\ufffd" in str(v) for row in rang for v in row)
    assert rows_of(client, ids["bell"], format="csv").status_code == 200


# -- pages ---------------------------------------------------------------------------------
def page_html(client: httpx.Client, path: str, **params: Any) -> str:
    response = client.get(path, params=params or None)  # a link's own query otherwise
    assert response.status_code == 200, response.text
    return response.text


def link(html: str, element_id: str) -> str | None:
    match = re.search(rf'id="{element_id}"[^>]*href="([^"]+)"', html)
    return match.group(1).replace("&amp;", "&") if match else None


def body_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr class="[^"]*" data-row="(\d+)">', html)]


def test_the_table_page_pages_through_a_big_table(site: Any) -> None:
    client, ids, *_ = site
    html = page_html(client, f"/tables/{ids['fuel']}")
    assert "Rows 1–100 of 250" in html and body_ids(html) == list(range(100))
    assert link(html, "page-prev") is None
    following = link(html, "page-next")
    assert following == f"/tables/{ids['fuel']}?offset=100"
    html = page_html(client, following)
    assert "Rows 101–200 of 250" in html and body_ids(html) == list(range(100, 200))
    assert link(html, "page-prev") == f"/tables/{ids['fuel']}"
    html = page_html(client, f"/tables/{ids['fuel']}", offset=200, limit=30)
    assert "Rows 201–230 of 250" in html and body_ids(html) == list(range(200, 230))
    assert link(html, "page-next") == f"/tables/{ids['fuel']}?offset=230&limit=30"
    html = page_html(client, f"/tables/{ids['fuel']}", offset=240)
    assert "Rows 241–250 of 250" in html and link(html, "page-next") is None
    past = page_html(client, f"/tables/{ids['fuel']}", offset=900)
    assert "No rows past row 250" in past and body_ids(past) == []


def test_the_table_page_sorts_filters_and_counts(site: Any) -> None:
    client, ids, *_ = site
    fuel = fuel_rows()
    html = page_html(client, f"/tables/{ids['fuel']}")
    price = re.search(r'<th data-col="1" class="sortable" data-sort-href="([^"]+)"', html)
    assert price is not None and price.group(1) == f"/tables/{ids['fuel']}?sort=price"
    html = page_html(client, f"/tables/{ids['fuel']}", sort="price", limit=5)
    assert body_ids(html) == sorted(range(N_FUEL), key=lambda i: (fuel[i][1], i))[:5]
    assert 'aria-sort="ascending"' in html and "gap" not in re.findall(r'<tr class="([^"]*)"', html)
    again = re.search(r'data-sort-href="([^"]+)" data-sort-column="price"', html)
    assert again is not None and "desc=1" in again.group(1)  # a second click sorts the other way
    html = page_html(
        client, f"/tables/{ids['fuel']}", where=["city = Sofia", "price >= 2"], facet="city"
    )
    sofia = [i for i, r in enumerate(fuel) if r[2] == "Sofia" and r[1] >= 2]
    assert f"Rows 1–{len(sofia)} of {len(sofia)} matching" in html and body_ids(html) == sofia
    assert '<li><code>city = Sofia</code> <a class="remove"' in html
    facets = re.search(r'<div class="facets" id="facets">(.*?)</div>', html, re.S)
    assert facets is not None and '>Sofia</a> <span class="count">' in facets.group(1)
    csv_link = link(html, "download-csv")
    assert csv_link == (
        f"/v1/tables/{ids['fuel']}/rows?format=csv&where=city%20%3D%20Sofia&where=price%20%3E%3D%202"
    )
    downloaded = list(csv.reader(io.StringIO(client.get(csv_link).text)))
    assert len(downloaded) == len(sofia) + 1
    for fmt in ("xlsx", "parquet", "json"):
        assert link(html, f"download-{fmt}") is not None
    bad = page_html(client, f"/tables/{ids['fuel']}", where="nope > 1")
    assert 'id="browse-error"' in bad and "columns: station, price, city, day" in bad
    assert "Rows 1–100 of 250" in bad  # shown without the filter


def test_a_sort_by_a_header_keeps_the_multi_level_header(site: Any) -> None:
    client, ids, *_ = site
    html = page_html(client, f"/tables/{ids['lakes_of_varnholm']}", sort="size_depth_m", desc=1)
    assert body_ids(html) == [2, 0, 1]
    assert 'colspan="2"' in html  # "Size" over its two columns
    assert 'data-sort-column="lake"' in html and 'data-sort-column="size"' not in html


def test_the_sql_page_runs_a_bookmarked_query_and_escapes_values(site: Any) -> None:
    client, *_ = site
    home = page_html(client, "/")
    assert '<a href="/sql"' in home
    empty = page_html(client, "/sql")
    assert 'id="sql-results"' not in empty and '<code class="sql-name">fuel</code>' in empty
    assert '<span class="type">DOUBLE</span>' in empty  # relations with their types
    html = page_html(client, "/sql", q="SELECT station, price FROM fuel ORDER BY price DESC")
    assert 'id="sql-results"' in html and "100 rows" in html and 'id="sql-truncated"' in html
    assert "SELECT station, price FROM fuel ORDER BY price DESC</textarea>" in html
    csv_link = link(html, "sql-csv")
    assert csv_link is not None and "format=csv" in csv_link
    assert client.get(csv_link).text.startswith("station,price\n")
    hostile = page_html(client, "/sql", q='SELECT *, 1 AS "<script>x</script>" FROM hostile')
    assert "&lt;b&gt;bold&lt;/b&gt;&lt;script&gt;window.__xss=3&lt;/script&gt;" in hostile
    assert "<script>window.__xss" not in hostile and "<script>x</script>" not in hostile
    assert "&lt;script&gt;x&lt;/script&gt;" in hostile
    assert len(re.findall(r"<script\b", hostile)) == 1  # the page's own /static/app.js


def test_the_sql_page_shows_errors_with_line_and_column(site: Any) -> None:
    client, *_ = site
    html = page_html(client, "/sql", q="SELECT station\nFRM fuel")
    assert 'id="sql-error"' in html and "Error at line 2, column 5" in html
    assert '<pre id="sql-error-where">FRM fuel\n    ^</pre>' in html
    refused = page_html(client, "/sql", q="DELETE FROM fuel")
    assert "only SELECT statements run here" in refused and 'id="sql-results"' not in refused
    # the form's empty "rows at most" is no limit; a limit that is not a number is said
    assert 'id="sql-results"' in page_html(client, "/sql", q="SELECT 1", limit="")
    capped = page_html(client, "/sql", q="SELECT * FROM fuel", limit="7")
    assert "7 rows" in capped and "cut at the limit of 7 rows" in capped
    bad = page_html(client, "/sql", q="SELECT 1", limit="²")
    assert "rows at most must be a whole number" in bad and 'id="sql-results"' not in bad


def test_an_upload_swaps_the_runner_to_the_new_store(site: Any) -> None:
    client, _, app, _, _ = site
    stores = app.state.tq.stores
    assert sql(client, "SELECT count(*) FROM fuel").status_code == 200
    old = stores._current
    assert old.has_runner
    refused = sql(client, "SELECT * FROM comets").json()["error"]
    assert refused["code"] == "sql_refused" and "no table 'comets'" in refused["message"]
    files = {"files": ("comets.csv", b"comet,period\nHalley,76\nEncke,3.3\n", "text/csv")}
    assert client.post("/v1/ingest", files=files).json()["tables_stored"] == 1
    body = sql(client, "SELECT comet FROM comets ORDER BY period").json()
    assert body["rows"] == [["Encke"], ["Halley"]]
    assert stores._current is not old and old._runner is None  # closed with its generation
    assert sql(client, "SELECT count(*) FROM fuel").json()["rows"] == [[N_FUEL]]


# -- a store of format 1 -------------------------------------------------------------------
def test_a_store_of_format_1_is_browsed_in_order_and_asks_for_migrate(
    site: Any, tmp_path: Path
) -> None:
    *_, store = site
    old = tmp_path / "old" / "store.duckdb"
    old.parent.mkdir()
    shutil.copyfile(store, old)
    downgrade(old)
    limits = Limits(max_table_rows=PAGE)
    with running_server(old.parent, store=old, limits=limits) as (url, _, log):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            tables = client.get("/v1/tables").json()["tables"]
            assert {t["sql_name"] for t in tables} == {None}
            fuel = next(t["table_id"] for t in tables if t["source"].endswith("fuel.csv"))
            response = sql(client, "SELECT 1")
            assert response.status_code == 409
            error = response.json()["error"]
            assert error["code"] == "store_outdated" and "tablequest migrate" in error["message"]
            assert str(old.parent) not in response.text  # no server folder named
            assert rows_of(client, fuel).status_code == 409
            html = page_html(client, f"/tables/{fuel}", offset=100, sort="price")
            assert 'id="browse-note"' in html and "Rows 101–200 of 250" in html
            assert body_ids(html) == list(range(100, 200)) and 'id="download-csv"' not in html
            page = page_html(client, "/sql", q="SELECT 1")
            assert "tablequest migrate" in page and 'id="no-relations"' in page
            assert log.tracebacks() == []
