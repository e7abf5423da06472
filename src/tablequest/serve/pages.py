"""The web pages: corpus browser, table, SQL, ask (live trajectory), results, traces (the
search page is `tablequest.serve.searchpage`).

Server-rendered Jinja templates (autoescaped); the little JavaScript there is lives in
``static/app.js`` (the CSP forbids inline script). Pages read the same `ServerState` as the
API. Login: ``/login?token=TOKEN`` (the link `tablequest serve` prints) or the form sets an
HttpOnly, SameSite=Strict cookie holding the token; the login page says where the token file
is without naming a server folder (`shown_token_file`: anyone who reaches the server sees it).

A page that names something that is not there (a table id, an ask, a trace) is a 404 page
saying so ("No such table"), whatever the id looks like: never a validation error.

The table page pages through the table's relation (`tablequest.corpus.storage.browse`):
``?offset=&limit=`` (a page is at most the server's `max_table_rows`, fewer for wide tables
so the view shows it whole), ``?sort=COLUMN&desc=1`` (a click on a column's header), repeatable
``?where=COLUMN OP VALUE`` filters, ``?facet=COLUMN`` (its most frequent values among the
matching rows, each a link that adds its filter) and download links for the rows it selects
(``/v1/tables/ID/rows?format=…``). A filter or column that is not there is said above the
table, which is then shown unfiltered; a store of format 1 pages in row order only. The SQL
page (``/sql?q=…``: bookmarkable) runs the query as ``/v1/sql`` does and lists the store's
relations with their columns and types.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path as FilePath
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import anyio
from fastapi import APIRouter, Form, HTTPException, Path, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from tablequest.corpus import (
    Relation,
    SqlError,
    SqlResult,
    StoreError,
    StoreOutdated,
    browse,
    json_value,
    sql_quote,
)
from tablequest.errors import UsageError
from tablequest.methods import Result, list_methods
from tablequest.serve.answer import answer_context, short_name
from tablequest.serve.api import method_info, state_of, store_relations
from tablequest.serve.events import render_markdown
from tablequest.serve.render import environment, trace_context
from tablequest.serve.rows import facet_filter, parse_where
from tablequest.serve.tables import MAX_CELLS, MAX_COLS, TableView, table_view
from tablequest.serve.tracelist import trace_row
from tablequest.service import (
    COOKIE,
    DEFAULT_METHOD,
    ReadStore,
    ServerState,
    shown_token_file,
    token_matches,
)
from tablequest.table import Table
from tablequest.trace import UnreadableTrace, read_trace

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

BIG_CELLS = 200_000  # above this a table page reads only the rows it shows


def render(name: str, status_code: int = 200, headers: Any = None, **context: Any) -> HTMLResponse:
    html = environment().get_template(name).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=headers)


HEADINGS = {404: "Not found", 401: "Not logged in", 429: "Busy"}


def error_page(
    request: Request, status: int, message: str, headers: Any = None, heading: str | None = None
) -> HTMLResponse:
    """An error as a page (the API answers JSON instead)."""
    heading = heading or HEADINGS.get(status, f"Error {status}")
    return render(
        "error.html", status, headers, status=status, message=message, page="", heading=heading
    )


def _login_page(request: Request, status: int = 200, message: str | None = None) -> HTMLResponse:
    token_file = state_of(request).config.token_file
    shown = shown_token_file(token_file) if token_file else None
    return render(
        "login.html", status, message=message, page="login", token_file=shown,
        token_file_given=token_file is not None and shown == token_file.name,  # --token-file
    )  # fmt: skip


def _login(request: Request, token: str) -> Response:
    expected = state_of(request).config.token
    if expected is None or token_matches(token, expected):
        response = RedirectResponse("/", status_code=303)
        secure = request.url.scheme == "https"
        response.set_cookie(
            COOKIE, token, httponly=True, samesite="strict", secure=secure, path="/"
        )
        return response
    return _login_page(request, 401, "wrong token")


@router.get("/login")
def login(request: Request, token: Annotated[str | None, Query(max_length=256)] = None) -> Response:
    if token is not None:
        return _login(request, token)
    return _login_page(request)


@router.post("/login")
def login_form(request: Request, token: Annotated[str, Form(max_length=256)]) -> Response:
    return _login(request, token)


@router.get("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def _listed(state: ServerState, infos: list[Any]) -> list[dict[str, Any]]:
    """Corpus rows: the table's short name and where it came from (its folder, or
    "uploaded" for a file uploaded to this server)."""
    uploads = str(state.uploads) + "/"
    rows = []
    for info in infos:
        uploaded = info.path.startswith(uploads)
        folder = FilePath(info.shown or info.path).parent  # relative to the corpus root
        where = "uploaded" if uploaded else ("" if str(folder) == "." else str(folder))
        rows.append({"info": info, "name": short_name(info.name), "where": where})
    return rows


@router.get("/")
def corpus(
    request: Request,
    q: Annotated[str | None, Query(max_length=200)] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> HTMLResponse:
    state = state_of(request)
    with state.stores.reader() as store:
        infos = list(store.snapshot.info.values())
    stored = len(infos)
    if q:
        needle = q.lower()
        infos = [i for i in infos if needle in i.name.lower() or needle in (i.title or "").lower()]
    return render(
        "corpus.html",
        page="corpus",
        tables=_listed(state, infos[offset : offset + PAGE_SIZE]),
        total=len(infos),
        stored=stored,
        offset=offset,
        page_size=PAGE_SIZE,
        q=q or "",
        limits=state.config.limits,
    )


DOWNLOADS = (("CSV", "csv"), ("XLSX", "xlsx"), ("Parquet", "parquet"), ("JSON", "json"))
FACET_VALUES = 20
RELATIONS_LISTED = 500
PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass
class Browse:
    """What the table page selected: its rows, and the links that change the selection."""

    table_id: str
    offset: int
    size: int  # rows a page holds
    limit: int | None  # as the request gave it (kept in links)
    sort: str | None
    desc: bool
    where: list[str]
    facet: str | None
    relation: Relation | None = None
    total: int = 0
    row_ids: list[int] = field(default_factory=list)
    error: str | None = None
    note: str | None = None
    facet_values: list[tuple[str, int, str]] = field(default_factory=list)

    def url(self, **changes: Any) -> str:
        """This page's address with `changes` (offset, sort, desc, where, facet)."""
        now = {"offset": self.offset, "limit": self.limit, "sort": self.sort, "desc": self.desc,
               "where": self.where, "facet": self.facet, **changes}  # fmt: skip
        params: list[tuple[str, str]] = []
        if now["offset"]:
            params.append(("offset", str(now["offset"])))
        if now["limit"]:
            params.append(("limit", str(now["limit"])))
        if now["sort"]:
            params.append(("sort", now["sort"]))
            if now["desc"]:
                params.append(("desc", "1"))
        params += [("where", w) for w in now["where"]]
        if now["facet"]:
            params.append(("facet", now["facet"]))
        query = urlencode(params, quote_via=quote)
        return f"/tables/{quote(self.table_id, safe='')}" + (f"?{query}" if query else "")

    def download(self, fmt: str) -> str:
        """The API address of the selected rows (all pages) as a `fmt` file."""
        params = [("format", fmt)]
        if self.sort and not self.error:
            params += [("sort", self.sort)] + ([("desc", "1")] if self.desc else [])
        if not self.error:
            params += [("where", w) for w in self.where]
        query = urlencode(params, quote_via=quote)
        return f"/v1/tables/{quote(self.table_id, safe='')}/rows?{query}"

    @property
    def first(self) -> int:
        return self.offset + 1 if self.row_ids else self.offset

    @property
    def last(self) -> int:
        return self.offset + len(self.row_ids)

    @property
    def previous(self) -> str | None:
        if self.offset == 0:
            return None
        return self.url(offset=max(0, min(self.offset, self.total) - self.size))

    @property
    def next(self) -> str | None:
        return self.url(offset=self.last) if self.last < self.total else None

    def sorting(self) -> dict[int, dict[str, str]]:
        """Per column id: the address that sorts by it (again: the other way) and its state."""
        if self.relation is None:
            return {}
        out = {}
        for col in self.relation.columns:
            on = col.name == self.sort
            state = ("descending" if self.desc else "ascending") if on else "none"
            href = self.url(offset=0, sort=col.name, desc=on and not self.desc)
            out[col.col_id] = {"href": href, "state": state, "name": col.name}
        return out


def _select(store: ReadStore, table: Table | None, chosen: Browse) -> None:
    """Fill `chosen` with the page's rows (and the facet's values) from the relation."""
    try:
        filters = parse_where(chosen.where)
    except UsageError as exc:
        chosen.error = f"{exc}. The table is shown without filters and sorting."
        filters = []
    try:
        page = browse.page(
            store, chosen.table_id, offset=chosen.offset, limit=chosen.size,
            sort=None if chosen.error else chosen.sort, descending=chosen.desc, where=filters,
        )  # fmt: skip
    except StoreOutdated:
        chosen.note = (
            "Sorting, filters, facets and downloads need the store's SQL relations: the "
            "store was written by an older tablequest (run `tablequest migrate` on it)."
        )
        table = table if table is not None else store.get(chosen.table_id)
        chosen.row_ids = list(table.row_ids[chosen.offset : chosen.offset + chosen.size])
        chosen.total = table.n_rows
        return
    except (KeyError, UsageError) as exc:  # a column or a value the relation cannot take
        reason = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        chosen.error = f"{reason}. The table is shown without filters and sorting."
        filters = []
        page = browse.page(store, chosen.table_id, offset=chosen.offset, limit=chosen.size)
    chosen.relation, chosen.total, chosen.row_ids = page.relation, page.total, page.row_ids
    if chosen.error is None and page.sort is not None:
        chosen.sort = page.sort  # the SQL name of a column given by its header
    if chosen.facet:
        try:
            column = page.relation.column(chosen.facet).name
            counted = browse.facets(store, chosen.table_id, column, k=FACET_VALUES, where=filters)
        except KeyError as exc:
            chosen.error = str(exc.args[0]) if exc.args else str(exc)
            return
        for value, n in counted:
            shown = "(no value)" if value is None else str(json_value(value)) or "(empty)"
            href = chosen.url(offset=0, where=[*chosen.where, facet_filter(column, value)])
            chosen.facet_values.append((shown, n, href))


@router.get("/tables/{table_id:path}")
def table_page(
    request: Request,
    table_id: Annotated[str, Path(max_length=200)],
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int | None, Query(ge=1)] = None,
    sort: Annotated[str | None, Query(max_length=300)] = None,
    desc: Annotated[bool, Query()] = False,
    where: Annotated[list[str] | None, Query()] = None,
    facet: Annotated[str | None, Query(max_length=300)] = None,
) -> HTMLResponse:
    state = state_of(request)
    cap = state.config.limits.max_table_rows
    with state.stores.reader() as store:
        info = store.snapshot.info.get(table_id)
        if info is None:
            message = f"There is no table {table_id!r} in this store."
            return error_page(request, 404, message, heading="No such table")
        n_rows, n_cols = store.shape(table_id)
        # a big table (a streamed one above all) is read a page at a time, never whole
        big = n_rows * n_cols > BIG_CELLS and store.format_version >= 2
        table = None if big else store.get(table_id)
        # a page the view shows whole (wide tables: fewer rows, as `table_view` would cut)
        fits = MAX_CELLS // max(1, min(n_cols, MAX_COLS))
        chosen = Browse(
            table_id, offset, max(1, min(limit or cap, cap, fits)), limit, sort or None, desc,
            [w for w in where or () if w.strip()], facet or None,
        )  # fmt: skip
        _select(store, table, chosen)
        if table is None:
            table = store.get_rows(table_id, chosen.row_ids)
    whole = chosen.row_ids == list(table.row_ids)
    shown = table if whole else table.take_rows(chosen.row_ids)
    view = table_view(shown, table_id, limit=chosen.size)
    view.n_rows = chosen.total  # "N of TOTAL rows shown" when the page is not all of them
    if chosen.sort:  # rows out of the table's order: no gap marks between them
        for row in view.body:
            row.classes = [c for c in row.classes if c != "gap"]
    sql_name = chosen.relation.sql_name if chosen.relation is not None else None
    sql_href = None
    if sql_name is not None:
        sql_href = _query_href(sql_name)
    return render(
        "table.html", page="corpus", info=info, view=view, table=table,
        table_name=short_name(info.name), chosen=chosen, sorting=chosen.sorting(),
        downloads=DOWNLOADS, sql_href=sql_href, sql_name=sql_name,
    )  # fmt: skip


def _ident(name: str) -> str:
    """A relation's name as a query writes it: quoted only when it needs to be."""
    return name if PLAIN_NAME.fullmatch(name) else sql_quote(name)


def _query_href(name: str, n: int = 100) -> str:
    """The SQL page running ``SELECT * FROM name LIMIT n``."""
    return "/sql?" + urlencode({"q": f"SELECT * FROM {_ident(name)} LIMIT {n}"})


def _relation_list(state: ServerState) -> tuple[list[tuple[Relation, str, str]], int]:
    """The relations the SQL page lists (the first `RELATIONS_LISTED`) with each one's table
    name and the address of a query of it, and how many there are."""
    with state.stores.reader() as store:
        found = store_relations(store)
        info = store.snapshot.info
        listed = [
            (r, short_name(info[r.table_id].name) if r.table_id in info else "",
             _query_href(r.sql_name))
            for r in found[:RELATIONS_LISTED]
        ]  # fmt: skip
    return listed, len(found)


def _where(query: str, line: int | None, column: int | None) -> str | None:
    """The query's line that an error points at, with a caret under its column."""
    lines = query.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return None
    caret = " " * max(0, (column or 1) - 1) + "^"
    return f"{lines[line - 1]}\n{caret}"


def _cells(result: SqlResult) -> list[list[tuple[str, str]]]:
    """Each value of a result as (text, CSS class): NULL marked, numbers right-aligned."""
    numeric = [
        any(t.upper().startswith(k) for k in ("BIGINT", "INT", "DOUBLE", "FLOAT", "DECIMAL",
                                               "HUGEINT", "SMALLINT", "TINYINT", "UBIGINT",
                                               "UINTEGER", "USMALLINT", "UTINYINT", "REAL"))
        for _, t in result.columns
    ]  # fmt: skip
    out = []
    for row in result.rows:
        cells = []
        for value, is_number in zip(row, numeric, strict=True):
            shown = json_value(value)
            if shown is None:
                cells.append(("NULL", "null"))
            elif isinstance(shown, (list, dict)):
                cells.append((json.dumps(shown, ensure_ascii=False), ""))
            else:
                cells.append((str(shown), "num" if is_number else ""))
        out.append(cells)
    return out


def _positive(text: str) -> int | None:
    """`text` as a whole number above 0, else None."""
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


@router.get("/sql")
async def sql_page(
    request: Request,
    q: Annotated[str, Query(max_length=100_000)] = "",
    rows: Annotated[str, Query(alias="limit", max_length=20)] = "",
) -> HTMLResponse:
    state = state_of(request)
    relations, n_relations = await run_in_threadpool(_relation_list, state)
    result: SqlResult | None = None
    error: dict[str, Any] | None = None
    limit = _positive(rows)  # the form sends "" for no limit
    if rows.strip() and limit is None:
        error = {"message": f"rows at most must be a whole number above 0, not {rows!r}",
                 "code": "invalid", "line": None, "column": None, "where": None}  # fmt: skip
    elif q.strip():
        try:
            result = await anyio.to_thread.run_sync(
                partial(state.run_sql, q, limit=limit), limiter=state.sql_limiter
            )
        except SqlError as exc:
            error = {"message": state.scrubber().text(str(exc)), "code": exc.code, "line": exc.line,
                     "column": exc.column, "where": _where(q, exc.line, exc.column)}  # fmt: skip
        except StoreError as exc:
            error = {"message": state.scrubber().text(str(exc)), "code": "store", "line": None,
                     "column": None, "where": None}  # fmt: skip
    applied = state.sql_limit(limit)
    params = {"q": q, **({"limit": str(limit)} if limit else {})}
    return render(
        "sql.html", page="sql", q=q, limit=limit, applied=applied,
        max_rows=state.config.limits.max_sql_rows, result=result,
        cells=_cells(result) if result is not None else [], error=error,
        csv_href="/v1/sql?" + urlencode({**params, "format": "csv"}),
        parquet_href="/v1/sql?" + urlencode({**params, "format": "parquet"}),
        relations=relations, n_relations=n_relations,
        example_href=_query_href(relations[0][0].sql_name, 10) if relations else None,
    )  # fmt: skip


@router.get("/ask")
def ask_page(request: Request) -> HTMLResponse:
    state = state_of(request)
    methods = [method_info(s) for s in list_methods()]
    return render(
        "ask.html", page="ask", methods=methods, llm=state.llm is not None,
        default_method=DEFAULT_METHOD,
    )  # fmt: skip


def _result(request: Request, ask_id: str) -> tuple[ServerState, str, Result]:
    state = state_of(request)
    job = state.asks.get(ask_id)
    if job is None or job.result is None:
        raise HTTPException(404, f"no finished ask {ask_id!r}")
    return state, job.question, job.result


def _evidence_views(state: ServerState, result: Result) -> list[tuple[str, TableView]]:
    by_table: dict[str, dict[tuple[int, int], str]] = {}
    for cell in result.evidence:
        by_table.setdefault(cell.table_id, {})[cell.row, cell.col] = cell.how
    order = [t for t in [result.final_table, *result.tables_consulted] if t]
    views = []
    with state.stores.reader() as store:
        for tid in dict.fromkeys(order + list(by_table)):
            table = result.tables.get(tid)
            if table is None:
                try:
                    table = store.get(tid)
                except KeyError:
                    continue
            cells = by_table.get(tid, {})
            rows = None
            if table.n_rows > 200:
                wanted = {r + d for r, _ in cells for d in range(-2, 3)}
                rows = sorted(wanted | set(table.row_ids[:5]))
            view = table_view(table, tid, rows=rows, evidence=cells)
            views.append((result.sources.get(tid, tid), view))
    return views


@router.get("/asks/{ask_id}/result")
def ask_result(
    request: Request, ask_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
) -> HTMLResponse:
    state, question, raw = _result(request, ask_id)
    scrub = state.scrubber()  # the page names no server folder, as the API's JSON (issue 40)
    sources = {tid: scrub.text(source) for tid, source in raw.sources.items()}
    result = replace(raw, sources=sources)
    data = scrub.result(result.to_json())
    report = result.typed_details.get("report")
    charts = result.typed_details.get("charts") or []
    return render(
        "ask_result.html",
        ask_id=ask_id,
        data=data,
        views=_evidence_views(state, result),
        report=render_markdown(report) if isinstance(report, str) and report.strip() else None,
        charts=range(len(charts)) if isinstance(charts, list) else range(0),
        **answer_context(state, question, result),
    )


@router.get("/asks/{ask_id}/charts/{n}")
def ask_chart(
    request: Request,
    ask_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")],
    n: Annotated[int, Path(ge=0, le=1000)],
) -> Response:
    """The n-th chart (PNG) of a finished ask: a path from the method's result, never the
    request; it must be a PNG file."""
    _, _, result = _result(request, ask_id)
    charts = result.typed_details.get("charts") or []
    if not isinstance(charts, list) or n >= len(charts):
        raise HTTPException(404, f"ask {ask_id!r} has no chart {n}")
    path = FilePath(str(charts[n]))
    try:
        with path.open("rb") as fh:
            ok = fh.read(8) == PNG_MAGIC
    except OSError:
        ok = False
    if not ok:
        raise HTTPException(404, f"chart {n} of ask {ask_id!r} is not a readable PNG file")
    return FileResponse(path, media_type="image/png")


@router.get("/traces")
def traces_page(request: Request) -> HTMLResponse:
    files = state_of(request).trace_files()
    newest = sorted(files.items(), key=lambda item: -item[1].stat().st_mtime)[:500]
    rows = []
    for tid, path in newest:
        try:
            rows.append(trace_row(tid, path))
        except OSError:  # removed since it was listed
            continue
    return render("traces.html", page="traces", traces=rows)


@router.get("/traces/{trace_id}")
def trace_page(request: Request, trace_id: Annotated[str, Path(max_length=128)]) -> HTMLResponse:
    state = state_of(request)
    path = state.trace_path(trace_id)
    if path is None:
        return error_page(request, 404, f"There is no trace {trace_id!r}.", heading="No such trace")
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        raise HTTPException(422, f"trace {trace_id!r} is unreadable: {exc.reason}") from None
    scrubbed = state.scrubber().value(events)  # as GET /v1/traces/{id} sends them (issue 40)
    context = trace_context(scrubbed, trace_id, state.table_name)
    return render("trace.html", page="traces", **context)
