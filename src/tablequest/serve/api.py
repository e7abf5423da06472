"""The ``/v1`` HTTP API: tables (rows paged, sorted, filtered, downloaded), SQL, search,
traces, ingest, methods; asks (server-sent events) are `tablequest.serve.asks`'s.

Every route is a thin call into `ServerState` or the library. Errors are JSON
``{"error": {"code", "message"}}`` with a 4xx status (see `tablequest.serve.app` for the
exception handlers); nothing a client sends reaches the filesystem as a path, and no
response names a server path: table sources are relative to the corpus root
(`tablequest.service.snapshot`), and results, trace events and ingest reports go through
`tablequest.service.public.Scrubber`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, File, HTTPException, Path, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

import tablequest
from tablequest.corpus import RETRIEVERS, Relation, SqlError, StoreError, StoreOutdated, browse
from tablequest.errors import UsageError
from tablequest.methods import MethodSpec, describe_options, get_method, list_methods
from tablequest.serve import models as m
from tablequest.serve.rows import (
    EXPORT_TYPES,
    MAX_FACETS,
    SQL_TYPES,
    attachment,
    facet_json,
    parse_where,
    sql_file,
)
from tablequest.serve.tables import API_CELLS, stored_structure
from tablequest.serve.uploads import discard, save_uploads
from tablequest.service import (
    DEFAULT_ENCODER,
    TABLE_ID,
    ReadStore,
    ServerState,
    run_search,
)
from tablequest.trace import UnreadableTrace, read_trace, summarize

router = APIRouter(
    prefix="/v1", responses={400: {"model": m.ErrorBody}, 401: {"model": m.ErrorBody}}
)

TableId = Annotated[str, Path(pattern=TABLE_ID, description="An id from /v1/tables.")]


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.tq
    return state


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@router.get("/health", response_model=m.Health)
def health(request: Request) -> dict[str, Any]:
    """Liveness and what the server holds."""
    state = state_of(request)
    with state.stores.reader() as store:
        tables = len(store)
    return {
        "status": "ok",
        "tables": tables,
        "generation": state.stores.generation,
        "asks_running": state.asks.running,
        "llm": state.llm is not None,
    }


@router.get("/version", response_model=m.Version)
def version() -> dict[str, str]:
    """The tablequest version and the API version."""
    return {"tablequest": tablequest.__version__, "api": "v1"}


@router.get("/tables", response_model=m.TableList)
def tables(
    request: Request,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    q: Annotated[
        str | None, Query(max_length=200, description="Substring of name or title.")
    ] = None,
) -> dict[str, Any]:
    """The stored tables (by file and position), optionally filtered by a substring."""
    with state_of(request).stores.reader() as store:
        infos = list(store.snapshot.info.values())
        sql_names = store.snapshot.sql_names
    if q:
        needle = q.lower()
        infos = [i for i in infos if needle in i.name.lower() or needle in (i.title or "").lower()]
    return {
        "total": len(infos),
        "offset": offset,
        "tables": [
            {"table_id": i.table_id, "source": i.name, "format": i.format, "sheet": i.sheet,
             "title": i.title, "n_rows": i.n_rows, "n_cols": i.n_cols,
             "sql_name": sql_names.get(i.table_id), "ingested_at": i.ingested_at}
            for i in infos[offset : offset + limit]
        ],
    }  # fmt: skip


@router.get("/relations", response_model=list[m.RelationInfo])
def relations(request: Request) -> list[dict[str, Any]]:
    """Every table's relation, by SQL name: what `/v1/sql` queries, with column types."""
    state = state_of(request)
    with state.stores.reader() as store:
        found = store_relations(store)
        shown = {tid: info.name for tid, info in store.snapshot.info.items()}
    return [{**r.to_json(), "source": shown.get(r.table_id, "")} for r in found]


@router.get(
    "/tables/{table_id}", response_model=m.TableDetail, responses={404: {"model": m.ErrorBody}}
)
def table(
    request: Request,
    table_id: TableId,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """One table with its structure: header rows and paths, merges, a window of body rows."""
    state = state_of(request)
    cap = state.config.limits.max_table_rows
    with state.stores.reader() as store:
        info = store.snapshot.info.get(table_id)
        if info is None:
            raise HTTPException(404, f"no table {table_id!r} in the store (see /v1/tables)")
        data = stored_structure(store, table_id, offset=offset, limit=min(limit or cap, cap))
    return {**data, "source": info.name, "format": info.format}


def store_relations(store: ReadStore) -> list[Relation]:
    """The store's relations by SQL name, read once per generation ([] for format 1)."""
    found: list[Relation] = store.snapshot.extras.get_or(("relations", ""), store.relations)
    return found


def api_error(
    state: ServerState, status: int, code: str, message: str, **extra: Any
) -> JSONResponse:
    """An error answer, with fields beyond code and message (a SQL error's line, column);
    the message goes through the scrubber (no server folder in it, issue 40)."""
    body = {"code": code, "message": state.scrubber().text(message), **extra}
    return JSONResponse({"error": body}, status)


def store_error(state: ServerState, exc: StoreError) -> JSONResponse:
    """A store that cannot answer: 409 for a store of format 1 (`tablequest migrate` it),
    else 503; the message names no server folder."""
    status = 409 if isinstance(exc, StoreOutdated) else 503
    code = exc.code if isinstance(exc, StoreOutdated) else "store"
    return api_error(state, status, code, str(exc))


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


ExportFormat = Literal["csv", "tsv", "json", "parquet", "xlsx"]
ROWS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": m.TableRows, "content": {t: {} for t in EXPORT_TYPES.values()},
          "description": "A page of rows as JSON, or with `format` the rows as a file."},
    404: {"model": m.ErrorBody}, 409: {"model": m.ErrorBody}, 422: {"model": m.ErrorBody},
}  # fmt: skip


@router.get("/tables/{table_id}/rows", response_model=None, responses=ROWS_RESPONSES)
def table_rows(
    request: Request,
    table_id: TableId,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[
        int | None, Query(ge=1, description="Rows at most (default and cap: the server's).")
    ] = None,
    sort: Annotated[
        str | None, Query(max_length=300, description="A column: SQL name or header.")
    ] = None,
    desc: Annotated[bool, Query(description="Sort largest first (nulls still last).")] = False,
    where: Annotated[
        list[str] | None,
        Query(
            description="`column op value` (op: = != < <= > >= ~ ^, or `column null`); "
            "repeatable, all hold."
        ),
    ] = None,
    facets: Annotated[
        list[str] | None, Query(description="Columns whose frequent values to count.")
    ] = None,
    facet_k: Annotated[int, Query(ge=1, le=100)] = 10,
    fmt: Annotated[
        ExportFormat | None,
        Query(
            alias="format",
            description="Download the rows as a file (all matching rows "
            "unless `limit`): typed values, columns named by their headers.",
        ),
    ] = None,
    raw: Annotated[bool, Query(description="With `format`: the cells' text as stored.")] = False,
) -> Response:
    """A table's rows through its relation: paged, sorted, filtered, with facets; or a file."""
    state = state_of(request)
    if len(facets or ()) > MAX_FACETS:
        raise HTTPException(422, f"at most {MAX_FACETS} facets, not {len(facets or ())}")
    with state.stores.reader() as store:
        info = store.snapshot.info.get(table_id)
        if info is None:
            raise HTTPException(404, f"no table {table_id!r} in the store (see /v1/tables)")
        try:
            filters = parse_where(where)
            if fmt is not None:
                name = f"{store.relation(table_id).sql_name}.{fmt}"
                data = browse.export(
                    store, table_id, fmt, raw=raw, offset=offset, limit=limit, sort=sort,
                    descending=desc, where=filters,
                )  # fmt: skip
                headers = {"Content-Disposition": attachment(name)}
                return Response(data, media_type=EXPORT_TYPES[fmt], headers=headers)
            cap = state.config.limits.max_table_rows
            size = min(limit or cap, cap, max(1, API_CELLS // max(1, info.n_cols)))
            page = browse.page(
                store, table_id, offset=offset, limit=size, sort=sort, descending=desc,
                where=filters,
            )  # fmt: skip
            counted = {
                page.relation.column(c).name: facet_json(
                    browse.facets(store, table_id, c, k=facet_k, where=filters)
                )
                for c in facets or ()
            }
            table = store.get(table_id)
        except StoreError as exc:
            return store_error(state, exc)
        except (KeyError, UsageError) as exc:  # a column, filter, format or page not allowed
            return api_error(state, 422, "invalid", _message(exc))
    positions = {rid: i for i, rid in enumerate(table.row_ids)}
    body = table.body
    text = [list(body[positions[rid]]) for rid in page.row_ids]
    return JSONResponse({**page.to_json(), "source": info.name, "text": text, "facets": counted})


SQL_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": m.SqlResponse, "content": {t: {} for t in SQL_TYPES.values()},
          "description": "The result as JSON, or with `format` as a CSV, TSV, Parquet or XLSX "
          "file."},
    400: {"model": m.SqlErrorBody, "description": "A refused statement (`sql_refused`) or a "
          "failed query (`sql`, with the line and column DuckDB pointed at)."},
    422: {"model": m.SqlErrorBody, "description": "The query ran past the time limit "
          "(`sql_timeout`), or the request is invalid (`invalid`: no query, or both `q` "
          "and `query`)."},
    409: {"model": m.ErrorBody, "description": "A store of format 1: `tablequest migrate` it."},
}  # fmt: skip
SqlFormat = Literal["json", "csv", "tsv", "parquet", "xlsx"]


def run_sql(state: ServerState, query: str, limit: int | None, fmt: str) -> Response:
    """Run `query` within the server's limits and answer it (JSON, or a file)."""
    if not query.strip():
        return api_error(state, 422, "invalid", "the query is empty")
    try:
        result = state.run_sql(query, limit=limit)
        if fmt != "json":
            data = sql_file(result, fmt)
            headers = {
                "Content-Disposition": attachment(f"query.{fmt}"),
                "X-Row-Count": str(len(result.rows)),
                "X-Truncated": result.truncated_by or "",
            }
            return Response(data, media_type=SQL_TYPES[fmt], headers=headers)
    except SqlError as exc:
        status = exc.http_status  # 400; 422 for sql_timeout
        return api_error(state, status, exc.code, str(exc), line=exc.line, column=exc.column)
    except StoreError as exc:
        return store_error(state, exc)
    except UsageError as exc:  # a format the result cannot be written in
        return api_error(state, 422, "invalid", str(exc))
    return JSONResponse({**result.to_json(), "limit": state.sql_limit(limit)})


@router.get("/sql", response_model=None, responses=SQL_RESPONSES)
async def sql_get(
    request: Request,
    q: Annotated[
        str | None, Query(min_length=1, max_length=100_000, description="One SELECT.")
    ] = None,
    query: Annotated[
        str | None, Query(min_length=1, max_length=100_000, description="The same as `q`.")
    ] = None,
    limit: Annotated[int | None, Query(ge=1, description="Rows at most (capped).")] = None,
    fmt: Annotated[SqlFormat, Query(alias="format")] = "json",
) -> Response:
    """A read-only SQL query over the tables' relations (names: `sql_name` in /v1/tables);
    the statement as `q` or `query` (exactly one, as in POST)."""
    state = state_of(request)
    if (q is None) == (query is None):
        return api_error(state, 422, "invalid", "give the statement as `q` or as `query`, "
                         "exactly one of them")  # fmt: skip
    statement = q if q is not None else query or ""
    return await anyio.to_thread.run_sync(
        run_sql, state, statement, limit, fmt, limiter=state.sql_limiter
    )


@router.post("/sql", response_model=None, responses=SQL_RESPONSES)
async def sql_post(request: Request, body: m.SqlRequest) -> Response:
    """The same query in a JSON body (`{"query" or "q", "limit", "format"}`)."""
    state = state_of(request)
    return await anyio.to_thread.run_sync(
        run_sql, state, body.statement, body.limit, body.format, limiter=state.sql_limiter
    )


@router.get("/search", response_model=m.SearchResponse)
async def search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="The question.")],
    k: Annotated[int, Query(ge=1, le=100)] = 5,
    method: Annotated[str, Query(description=f"One of {', '.join(RETRIEVERS)}.")] = "grep",
    encoder: Annotated[
        str, Query(description="Encoder of dense, hybrid, rerank.")
    ] = DEFAULT_ENCODER,
    preview: Annotated[bool, Query(description="Add the text preview of each hit.")] = False,
) -> JSONResponse:
    """LLM-free ranking with any retriever; each hit with the body rows the question matches."""
    if not q.strip():
        raise HTTPException(422, "the question is empty")
    state = state_of(request)
    body = await anyio.to_thread.run_sync(
        run_search, state, q, k, method, encoder, preview, limiter=state.search_limiter
    )
    return JSONResponse(body)


@router.post(
    "/ingest",
    response_model=m.IngestResponse,
    responses={413: {"model": m.ErrorBody}, 422: {"model": m.ErrorBody}},
)
async def ingest_files(
    request: Request, files: Annotated[list[UploadFile], File(description="Table files.")]
) -> dict[str, Any]:
    """Upload table files into the server's store (any format `tablequest ingest` reads)."""
    state = state_of(request)
    saved = await save_uploads(list(files), state.uploads, state.config.limits)
    report = await run_in_threadpool(state.stores.ingest, [s.path for s in saved])
    by_path = {str(s.path): s for s in saved}
    scrub = state.scrubber()
    failed = []
    for failure in report.files_failed:
        item = by_path.get(failure.path)
        if item is not None:
            discard(item)
        reason = scrub.text(failure.reason.replace(failure.path, item.client_name if item else "?"))
        failed.append({"name": item.client_name if item else "?", "reason": reason})
    if not report.ok:
        reasons = "; ".join(f"{f['name']}: {f['reason']}" for f in failed)
        raise HTTPException(422, f"no table could be read ({reasons})")
    warned = []
    for warning in report.files_warned:
        item = by_path.get(warning.path)
        name = item.client_name if item else "?"
        # The reader names the file by its server-side path: show the uploaded name instead.
        text = scrub.text(warning.warning.replace(warning.path, name))
        warned.append({"name": name, "warning": text})
    with state.stores.reader() as store:
        total = len(store)
    return {
        "files": [
            {"name": s.client_name, "stored_as": s.path.relative_to(state.uploads).as_posix(),
             "size": s.size}
            for s in saved if s.path.exists()
        ],
        "tables_stored": report.tables_stored,
        "tables_unchanged": report.tables_unchanged,
        "files_failed": failed,
        "files_warned": warned,
        "tables": total,
    }  # fmt: skip


def method_info(spec: MethodSpec) -> dict[str, Any]:
    """A registered method and its options, as /v1/methods lists them."""
    options = [
        {"name": o.name, "type": o.type, "default": o.default, "help": o.help, "paper": o.paper,
         "settable": o.request}
        for o in describe_options(spec.options)
    ]  # fmt: skip
    return {
        "name": spec.name, "input": spec.input, "description": spec.description,
        "paper": spec.paper, "needs_llm": spec.needs_llm,
        "configs": list(spec.options.CONFIGS), "options": options,
    }  # fmt: skip


@router.get("/methods", response_model=list[m.MethodInfo])
def methods() -> list[dict[str, Any]]:
    """Every registered method with its options (types, defaults, help, source paper)."""
    return [method_info(s) for s in list_methods()]


@router.get("/methods/{name}", response_model=m.MethodInfo, responses={404: {"model": m.ErrorBody}})
def method(name: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    """One method and its options."""
    return method_info(get_method(name))


@router.get("/traces", response_model=list[m.TraceInfo])
def traces(
    request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> list[dict[str, Any]]:
    """The trace files in the server's trace folder, newest first."""
    files = state_of(request).trace_files()
    stats = sorted(((tid, p.stat()) for tid, p in files.items()), key=lambda x: -x[1].st_mtime)
    return [{"id": tid, "size": st.st_size, "modified": st.st_mtime} for tid, st in stats[:limit]]


@router.get(
    "/traces/{trace_id}",
    response_model=m.TraceDetail,
    responses={404: {"model": m.ErrorBody}, 422: {"model": m.ErrorBody}},
)
def trace(
    request: Request, trace_id: Annotated[str, Path(max_length=128)]
) -> dict[str, Any] | JSONResponse:
    """The events of one trace (ids as /v1/traces lists them); an unreadable one is answered
    with its class's status and code (`UnreadableTrace`: 422 ``trace``), as the CLI's."""
    state = state_of(request)
    path = state.trace_path(trace_id)
    if path is None:
        raise HTTPException(404, f"no trace {trace_id!r} (see /v1/traces)")
    scrub = state.scrubber()
    try:
        events = read_trace(path)
    except UnreadableTrace as exc:
        reason = exc.reason.replace(str(path), path.name)
        message = f"trace {trace_id!r} is unreadable: {reason}"
        return api_error(state, exc.http_status, exc.code, message)
    return {"id": trace_id, "events": scrub.value(events), "summary": summarize(events)}
