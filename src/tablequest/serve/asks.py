"""Asks over HTTP: ``POST /v1/ask`` (server-sent events, or the result), ``POST /v1/asks``
(start one and follow it), ``GET /v1/asks/{id}/events`` and ``GET /v1/asks/{id}``.

An ask runs on the server's thread pool (`ServerState.start_ask`, `service.AskManager`);
its trace events are streamed as they happen, then the ``ask --json`` result or the error.
Every payload goes through the path scrubber (`tablequest.service.public.Scrubber`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from tablequest.errors import INTERNAL
from tablequest.serve import models as m
from tablequest.serve.api import api_error, dumps, state_of
from tablequest.service import AskJob, AskSpec, Scrubber
from tablequest.trace.describe import Names, describe_event

__all__ = ["router"]

router = APIRouter(
    prefix="/v1", responses={400: {"model": m.ErrorBody}, 401: {"model": m.ErrorBody}}
)


def _spec(body: m.AskRequest) -> AskSpec:
    options = {k.strip().replace("-", "_"): v for k, v in body.options.items()}
    return AskSpec(
        question=body.question, method=body.method, options=options, config=body.config,
        steps=body.steps, table_ids=tuple(body.table_ids), task=body.task,
        conversation_id=body.conversation_id,
    )  # fmt: skip


async def sse(
    job: AskJob,
    start: int = 0,
    *,
    view: bool = False,
    owner: bool = False,
    names: Names | None = None,
    scrub: Scrubber | None = None,
) -> AsyncIterator[str]:
    """The server-sent events of `job` from event `start` on: ``trace`` events, then
    ``result`` (``ask --json``) or ``error``. With `owner`, a client that leaves stops the ask;
    with `view`, each event comes with its display form (table ids named by `names`); with
    `scrub`, no server path is sent (`Scrubber`)."""
    clean = scrub.value if scrub is not None else (lambda value: value)
    try:
        async for item in job.follow(start):
            if item is None:
                yield ": keep-alive\n\n"
                continue
            i, event = item
            data = {"event": event, "view": describe_event(event, names)} if view else event
            yield f"id: {i}\nevent: trace\ndata: {dumps(clean(data))}\n\n"
        if job.result is not None:
            payload = job.result.to_json()
            payload = scrub.result(payload) if scrub is not None else payload
            yield f"event: result\ndata: {dumps(payload)}\n\n"
        else:
            yield f"event: error\ndata: {dumps(clean({'error': job.error}))}\n\n"
    finally:
        if owner and not job.done:
            job.cancel("the client disconnected")


def _stream(generator: AsyncIterator[str]) -> StreamingResponse:
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(generator, media_type="text/event-stream", headers=headers)


ASK_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}, "application/json": {}},
          "description": "Server-sent events (`trace` per event, then `result`), or the result."},
    429: {"model": m.ErrorBody, "description": "Too many asks running; see Retry-After."},
}  # fmt: skip


@router.post("/ask", responses=ASK_RESPONSES)
async def ask_route(request: Request, body: m.AskRequest) -> Any:
    """Ask a question; stream each trace event as it happens, then the `ask --json` result."""
    state = state_of(request)
    job = await run_in_threadpool(state.start_ask, _spec(body))
    scrub = state.scrubber()
    if body.stream:
        return _stream(sse(job, owner=True, scrub=scrub))
    async for _ in job.follow():
        pass
    if job.result is None:
        error = job.error or {}
        message = error.get("message", "the ask failed")
        return api_error(state, job.error_status, error.get("code", INTERNAL), message)
    return JSONResponse(scrub.result(job.result.to_json()))


@router.post("/asks", response_model=m.AskStarted, status_code=202, responses=ASK_RESPONSES)
async def start_ask(request: Request, body: m.AskRequest) -> dict[str, Any]:
    """Start an ask and return its id; follow it at ``events`` (EventSource-friendly GET)."""
    job = await run_in_threadpool(state_of(request).start_ask, _spec(body))
    return {
        "id": job.id,
        "events": f"/v1/asks/{job.id}/events",
        "result": f"/v1/asks/{job.id}",
        "trace_id": job.trace_id,
    }


def _job(request: Request, ask_id: str) -> AskJob:
    job = state_of(request).asks.get(ask_id)
    if job is None:
        raise HTTPException(404, f"no ask {ask_id!r} (finished asks are kept for an hour)")
    return job


AskId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]


@router.get("/asks/{ask_id}/events", responses={200: {"content": {"text/event-stream": {}}}})
async def ask_events(
    request: Request,
    ask_id: AskId,
    view: Annotated[bool, Query(description="Add a display form of each event.")] = False,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The ask's events from the start (or after Last-Event-ID), then its result."""
    job = _job(request, ask_id)
    state = state_of(request)
    start = int(last_event_id) + 1 if last_event_id and last_event_id.isdigit() else 0
    return _stream(sse(job, start, view=view, names=state.table_name, scrub=state.scrubber()))


@router.get("/asks/{ask_id}", response_model=m.AskState)
def ask_state(request: Request, ask_id: AskId) -> dict[str, Any]:
    """An ask's progress, and its result once done."""
    job = _job(request, ask_id)
    scrub = state_of(request).scrubber()
    return {
        "id": job.id, "question": job.question, "method": job.method, "done": job.done,
        "events": len(job.events), "trace_id": job.trace_id,
        "result": scrub.result(job.result.to_json()) if job.result else None,
        "error": scrub.value(job.error),
    }  # fmt: skip
