"""The web pages: corpus browser, table, search, ask (live trajectory), results, traces.

Server-rendered Jinja templates (autoescaped); the little JavaScript there is lives in
``static/app.js`` (the CSP forbids inline script). Pages read the same `ServerState` as the
API. Login: ``/login?token=TOKEN`` (the link `tablequest serve` prints) or the form sets an
HttpOnly, SameSite=Strict cookie holding the token; the login page says where the token file
is.

A page that names something that is not there (a table id, an ask, a trace) is a 404 page
saying so ("No such table"), whatever the id looks like: never a validation error.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Path, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from tablequest.corpus.dense.encoders import ENCODERS
from tablequest.corpus.lexical.rank import question_patterns
from tablequest.corpus.retrieval.retrievers import RETRIEVERS
from tablequest.methods.base import Result
from tablequest.methods.registry import list_methods
from tablequest.serve.answer import answer_context, short_name
from tablequest.serve.api import method_info, run_search, state_of
from tablequest.serve.events import render_markdown
from tablequest.serve.models import DEFAULT_ENCODER, DEFAULT_METHOD
from tablequest.serve.render import environment, trace_context
from tablequest.serve.security import COOKIE, token_matches
from tablequest.serve.state import ServerState
from tablequest.serve.tables import TableView, table_view
from tablequest.serve.tracelist import trace_row
from tablequest.trace import UnreadableTrace, read_trace

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
    return render(
        "login.html", status, message=message, page="login",
        token_file=str(token_file) if token_file else None,
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
    if q:
        needle = q.lower()
        infos = [i for i in infos if needle in i.name.lower() or needle in (i.title or "").lower()]
    return render(
        "corpus.html",
        page="corpus",
        tables=_listed(state, infos[offset : offset + PAGE_SIZE]),
        total=len(infos),
        offset=offset,
        page_size=PAGE_SIZE,
        q=q or "",
        limits=state.config.limits,
    )


@router.get("/tables/{table_id:path}")
def table_page(request: Request, table_id: Annotated[str, Path(max_length=200)]) -> HTMLResponse:
    state = state_of(request)
    with state.stores.reader() as store:
        info = store.snapshot.info.get(table_id)
        if info is None:
            message = f"There is no table {table_id!r} in this store."
            return error_page(request, 404, message, heading="No such table")
        table = store.get(table_id)
    view = table_view(table, table_id, limit=state.config.limits.max_table_rows)
    return render(
        "table.html", page="corpus", info=info, view=view, table=table,
        table_name=short_name(info.name),
    )  # fmt: skip


@router.get("/search")
async def search_page(
    request: Request,
    q: Annotated[str, Query(max_length=1000)] = "",
    method: Annotated[str, Query(max_length=32)] = "grep",
    k: Annotated[int, Query(ge=1, le=50)] = 5,
    encoder: Annotated[str, Query(max_length=32)] = DEFAULT_ENCODER,
) -> HTMLResponse:
    state = state_of(request)
    results: list[tuple[dict[str, Any], TableView]] = []
    if q.strip():
        found = await run_in_threadpool(run_search, state, q, k, method, encoder, False)
        results = await run_in_threadpool(_hit_views, state, q, found["hits"])
    return render(
        "search.html", page="search", q=q, method=method, k=k, encoder=encoder,
        methods=list(RETRIEVERS), encoders=list(ENCODERS), results=results,
        searched=bool(q.strip()),
    )  # fmt: skip


def _hit_views(
    state: ServerState, q: str, hits: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], TableView]]:
    patterns = question_patterns(q)
    out = []
    with state.stores.reader() as store:
        for hit in hits:
            table = store.get(hit["table_id"])
            rows = hit["matched_rows"][:10] or list(table.row_ids[:3])
            view = table_view(
                table, hit["table_id"], rows=rows, limit=10,
                matched=hit["matched_rows"], patterns=patterns,
            )  # fmt: skip
            out.append(({**hit, "name": short_name(hit["source"])}, view))
    return out


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
    state, question, result = _result(request, ask_id)
    data = result.to_json()
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
    context = trace_context(events, trace_id, state.table_name)
    return render("trace.html", page="traces", **context)
