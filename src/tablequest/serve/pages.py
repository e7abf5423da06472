"""The web pages: corpus browser, table, search, ask (live trajectory), results, traces.

Server-rendered Jinja templates (autoescaped); the little JavaScript there is lives in
``static/app.js`` (the CSP forbids inline script). Pages read the same `ServerState` as the
API. Login: ``/login?token=TOKEN`` (the link `tablequest serve` prints) or the form sets an
HttpOnly, SameSite=Strict cookie holding the token.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Path, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from tablequest.corpus.rank import question_patterns
from tablequest.corpus.retrievers import RETRIEVERS
from tablequest.methods.base import Result
from tablequest.methods.registry import list_methods
from tablequest.serve.api import method_info, run_search, state_of
from tablequest.serve.events import render_markdown
from tablequest.serve.models import TABLE_ID
from tablequest.serve.render import environment, trace_context
from tablequest.serve.security import COOKIE, token_matches
from tablequest.serve.state import ServerState
from tablequest.serve.tables import TableView, table_view
from tablequest.trace import UnreadableTrace, read_trace

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def render(name: str, status_code: int = 200, headers: Any = None, **context: Any) -> HTMLResponse:
    html = environment().get_template(name).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=headers)


def error_page(request: Request, status: int, message: str, headers: Any = None) -> HTMLResponse:
    """An error as a page (the API answers JSON instead)."""
    return render("error.html", status, headers, status=status, message=message, page="")


def _login(request: Request, token: str) -> Response:
    expected = state_of(request).config.token
    if expected is None or token_matches(token, expected):
        response = RedirectResponse("/", status_code=303)
        secure = request.url.scheme == "https"
        response.set_cookie(
            COOKIE, token, httponly=True, samesite="strict", secure=secure, path="/"
        )
        return response
    return render("login.html", 401, message="wrong token", page="login")


@router.get("/login")
def login(request: Request, token: Annotated[str | None, Query(max_length=256)] = None) -> Response:
    if token is not None:
        return _login(request, token)
    return render("login.html", message=None, page="login")


@router.post("/login")
def login_form(request: Request, token: Annotated[str, Form(max_length=256)]) -> Response:
    return _login(request, token)


@router.get("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


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
        tables=infos[offset : offset + PAGE_SIZE],
        total=len(infos),
        offset=offset,
        page_size=PAGE_SIZE,
        q=q or "",
        limits=state.config.limits,
    )


@router.get("/tables/{table_id}")
def table_page(request: Request, table_id: Annotated[str, Path(pattern=TABLE_ID)]) -> HTMLResponse:
    state = state_of(request)
    with state.stores.reader() as store:
        info = store.snapshot.info.get(table_id)
        if info is None:
            raise HTTPException(404, f"no table {table_id!r} in the store")
        table = store.get(table_id)
    view = table_view(table, table_id, limit=state.config.limits.max_table_rows)
    return render("table.html", page="corpus", info=info, view=view, table=table)


@router.get("/search")
async def search_page(
    request: Request,
    q: Annotated[str, Query(max_length=1000)] = "",
    method: Annotated[str, Query(max_length=32)] = "grep",
    k: Annotated[int, Query(ge=1, le=50)] = 5,
    encoder: Annotated[str, Query(max_length=32)] = "hash",
) -> HTMLResponse:
    state = state_of(request)
    results: list[tuple[dict[str, Any], TableView]] = []
    if q.strip():
        found = await run_in_threadpool(run_search, state, q, k, method, encoder, False)
        results = await run_in_threadpool(_hit_views, state, q, found["hits"])
    return render(
        "search.html", page="search", q=q, method=method, k=k, encoder=encoder,
        methods=list(RETRIEVERS), results=results, searched=bool(q.strip()),
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
            out.append((hit, view))
    return out


@router.get("/ask")
def ask_page(request: Request) -> HTMLResponse:
    state = state_of(request)
    methods = [method_info(s) for s in list_methods()]
    return render("ask.html", page="ask", methods=methods, llm=state.llm is not None)


def _result(request: Request, ask_id: str) -> tuple[ServerState, Result]:
    state = state_of(request)
    job = state.asks.get(ask_id)
    if job is None or job.result is None:
        raise HTTPException(404, f"no finished ask {ask_id!r}")
    return state, job.result


def _evidence_views(state: ServerState, result: Result) -> list[tuple[str, TableView]]:
    by_table: dict[str, list[tuple[int, int]]] = {}
    for cell in result.evidence:
        by_table.setdefault(cell.table_id, []).append((cell.row, cell.col))
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
            cells = by_table.get(tid, [])
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
    state, result = _result(request, ask_id)
    data = result.to_json()
    report = result.details.get("report")
    charts = result.details.get("charts") or []
    return render(
        "ask_result.html",
        ask_id=ask_id,
        data=data,
        views=_evidence_views(state, result),
        report=render_markdown(report) if isinstance(report, str) and report.strip() else None,
        charts=range(len(charts)) if isinstance(charts, list) else range(0),
    )


@router.get("/asks/{ask_id}/charts/{n}")
def ask_chart(
    request: Request,
    ask_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")],
    n: Annotated[int, Path(ge=0, le=1000)],
) -> Response:
    """The n-th chart (PNG) of a finished ask: a path from the method's result, never the
    request; it must be a PNG file."""
    _, result = _result(request, ask_id)
    charts = result.details.get("charts") or []
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
    stats = sorted(((tid, p.stat()) for tid, p in files.items()), key=lambda x: -x[1].st_mtime)
    return render("traces.html", page="traces", traces=stats[:500])


@router.get("/traces/{trace_id}")
def trace_page(request: Request, trace_id: Annotated[str, Path(max_length=128)]) -> HTMLResponse:
    path = state_of(request).trace_path(trace_id)
    if path is None:
        raise HTTPException(404, f"no trace {trace_id!r}")
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        raise HTTPException(422, f"trace {trace_id!r} is unreadable: {exc.reason}") from None
    return render("trace.html", page="traces", **trace_context(events, trace_id))
