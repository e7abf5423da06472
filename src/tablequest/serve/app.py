"""`create_app`: the FastAPI application (API, pages, guard), and `run_server` for the CLI.

Errors are answered, never raised to the server: a `TablequestError` gets its class's
status and code (`tablequest.errors`: a bad request 4xx, a run that could not complete 503)
as a JSON body ``{"error": {"code", "message"}}`` (API) or an error page (pages) naming what
was wrong, and nothing is logged for it beyond the access line. Every message is passed
through the server's path scrubber first (`ServerState.scrubber`): a store error during an
upload names the store's copy, and a client gets its name, never the server's folder
(issue 40). Any other exception is a bug:
it is logged with its traceback under a short id, and the client gets a 500 with the code
``internal`` naming the exception's type and that id (not its message, which may name server
paths).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import tablequest
from tablequest.errors import INTERNAL, TablequestError, internal_message
from tablequest.llm import LLM
from tablequest.serve import asks, conversations, manage, pages, searchpage
from tablequest.serve.api import router
from tablequest.serve.fastsearch import SearchFastPath
from tablequest.serve.render import STATIC_DIR
from tablequest.service import (
    Admission,
    Busy,
    Guard,
    ServeConfig,
    ServerState,
    claim,
    uvicorn_options,
    validation_text,
)

__all__ = ["create_app", "run_server"]

log = logging.getLogger("tablequest.serve")

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    422: "unprocessable",
    429: "busy",
    500: INTERNAL,
}
"""The code of an HTTP error raised by a route or by Starlette (`HTTPException`)."""


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/v1") or request.url.path == "/openapi.json"


def error_response(
    request: Request, status: int, message: str, code: str | None = None, headers: Any = None
) -> Response:
    """A JSON error for the API, an error page for pages; every handler answers through here,
    so every message goes through the path scrubber (a store error names the store's files:
    only their names are sent, issue 40)."""
    code = code or CODES.get(status, "error")
    state: ServerState = request.app.state.tq
    message = state.scrubber().text(message)
    if _is_api(request):
        body = {"error": {"code": code, "message": message}}
        return JSONResponse(body, status_code=status, headers=headers)
    return pages.error_page(request, status, message, headers=headers)


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    errors = exc.errors()
    for error in errors[:5]:
        if error.get("type") == "json_invalid":
            return 400, f"malformed JSON body: {error.get('msg')}"
    return 422, validation_text(errors)


def _install_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        status, message = _validation_message(exc)
        return error_response(request, status, message, "invalid" if status == 422 else None)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"nothing at {request.url.path!r} (the API is listed in /openapi.json)"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path!r}"
        return error_response(request, exc.status_code, message, headers=exc.headers)

    async def answer(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, TablequestError):  # never: registered for TablequestError
            return await internal(request, exc)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
        return error_response(request, exc.http_status, str(exc), exc.code, headers=headers)

    async def internal(request: Request, exc: Exception) -> Response:
        ref = secrets.token_hex(4)
        log.error("internal error %s on %s %s", ref, request.method, request.url.path,
                  exc_info=exc)  # fmt: skip
        message = internal_message(exc, where=f"logged as {ref}", detail=False)
        return error_response(request, 500, message, INTERNAL)

    app.add_exception_handler(TablequestError, answer)
    app.add_exception_handler(Exception, internal)  # Starlette's last handler: a bug


def _openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    schema.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer"}
    }
    schema["security"] = [{"bearer": []}]
    app.openapi_schema = schema
    return schema


def create_app(config: ServeConfig, *, llm: LLM | None = None) -> FastAPI:
    """The server's application: ``/v1`` API, web pages, static files, behind the guard.

    Args:
        config: What to serve and the limits (`ServeConfig`).
        llm: A ready model (tests); default: built from ``config.llm_config``.
    """
    state = ServerState(config, llm=llm)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm = threading.Thread(target=state.warm, name="tq-warm", daemon=True)
        warm.start()
        try:
            yield
        finally:
            # a daemon thread still inside DuckDB when the interpreter exits aborts the
            # process (SIGABRT, "exception not rethrown"): let the warm-up finish first
            if warm.is_alive():
                log.info("waiting for the store's indexes to finish loading")
                await asyncio.to_thread(warm.join)
            state.close()

    app = FastAPI(
        title="tablequest",
        version=tablequest.__version__,
        description="Answer questions from tables with LLM agents, and show the evidence.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.tq = state
    app.include_router(router)
    app.include_router(asks.router)
    app.include_router(manage.router)
    app.include_router(conversations.router)
    app.include_router(pages.router)
    app.include_router(searchpage.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _install_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.add_middleware(SearchFastPath, state=state)  # innermost: GET /v1/search, same bytes
    app.add_middleware(Admission, limits=config.limits)  # inside the guard: token first
    app.add_middleware(Guard, token=config.token, host=config.host, limits=config.limits)
    return app


def run_server(config: ServeConfig, *, log_level: str = "info") -> None:
    """Serve `config` with uvicorn until interrupted (access lines without query strings).

    Listens on the sockets of ``config.claim`` (the CLI's, taken before the token), else
    takes its own claim first: the store's writer lock and the port (`claim`).

    Raises:
        StoreLocked: another server writes the store.
        CannotListen: the address is in use or cannot be bound.
    """
    import uvicorn

    held = config.claim or claim(config.store, config.host, config.port)
    try:
        _set_up_logging(log_level)
        options = uvicorn_options(config)
        server = uvicorn.Server(uvicorn.Config(create_app(config), log_level=log_level, **options))
        server.run(sockets=list(held.sockets))
    finally:
        if config.claim is None:
            held.close()


def _set_up_logging(log_level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.INFO), format="%(message)s"
    )
    # httpx logs every model request at INFO: one line per LLM call, naming the model's URL.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    _space_full_collections()
    _lighter_log_records()


def _lighter_log_records() -> None:
    """Log records in the server process without their caller, thread and process, which the
    server's format (the message alone) never shows.

    Why (issue 38): every request writes an access line, and finding the caller's frame and
    naming the thread and process were a sizeable part of a search's CPU (the switches
    Python's logging HOWTO lists under "Optimization")."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


FULL_COLLECTION_EVERY = 100
"""Generation-1 collections between full ones while serving (Python's default: 10)."""


def _space_full_collections() -> None:
    """Make full (generation-2) garbage collections ten times rarer in the server process.

    Why (issue 38): a full collection stops every request in flight; with the corpus's indexes
    frozen (`tablequest.service.stores`) it still walks the per-table caches the searches fill
    (Table, TableLines, grep plans: 20,000-26,000 objects), 18-40 ms each, and at 32 clients a
    few of those in a run are its p99. Young cycles are still collected by the generation-0/1
    collections as before; what lives long (caches) is what a full collection would only walk.
    """
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
