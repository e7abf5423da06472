"""The search page (``/search``): LLM-free ranking with any registered retriever.

The form offers every retriever of the registry (`RETRIEVERS`, plugins included) and every
encoder (`ENCODERS`). A retriever that cannot run here with the chosen encoder is offered
disabled, with the reason beside the form: whether it runs is asked of the registry by
building it (`retriever_problems`), so what the form says is what a search would meet — a
dense one needs the ``[dense]`` extra for the MiniLM encoders (their factories refuse at
once without it), ``rerank`` a rerank server, none a lexical encoder (``bm25``). Building is
cheap: encoders load their model on first use, not when built. A search with a retriever
that cannot run (an old bookmark) shows the reason on the page, with the form, as a 400.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from tablequest.corpus import (
    ENCODERS,
    RETRIEVERS,
    EncoderSettings,
    RetrieverSettings,
    make_retriever,
    question_patterns,
)
from tablequest.errors import UsageError
from tablequest.serve.answer import short_name
from tablequest.serve.api import state_of
from tablequest.serve.render import environment
from tablequest.serve.tables import TableView, table_view
from tablequest.service import DEFAULT_ENCODER, ServerState, run_search

__all__ = ["retriever_problems", "router"]

router = APIRouter(include_in_schema=False)


def retriever_problems(state: ServerState, encoder: str) -> dict[str, str | None]:
    """Each registered retriever's name → why it cannot run here with `encoder` (the
    registry's own error message), or None when it can."""
    embeddings = EncoderSettings.from_settings(state.settings, state.llm_config)
    settings = RetrieverSettings(encoder=encoder, embeddings=embeddings)
    scrub = state.scrubber()
    problems: dict[str, str | None] = {}
    for name in RETRIEVERS:
        problems[name] = None
        try:
            make_retriever(name, settings)  # loads no model: encoders load on first use
        except UsageError as exc:  # EncoderUnavailable, BadValue (rerank without a server)
            problems[name] = scrub.text(str(exc))
        except Exception as exc:  # a plugin's bug must not take the search page down
            problems[name] = scrub.text(f"it could not be built: {type(exc).__name__}: {exc}")
    return problems


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


def _search(state: ServerState, q: str, k: int, method: str, encoder: str) -> Any:
    found = run_search(state, q, k, method, encoder, False)
    return _hit_views(state, q, found["hits"])


@router.get("/search")
async def search_page(
    request: Request,
    q: Annotated[str, Query(max_length=1000)] = "",
    method: Annotated[str, Query(max_length=32)] = "grep",
    k: Annotated[int, Query(ge=1, le=50)] = 5,
    encoder: Annotated[str, Query(max_length=32)] = DEFAULT_ENCODER,
) -> HTMLResponse:
    state = state_of(request)
    problems = await run_in_threadpool(retriever_problems, state, encoder)
    results: list[tuple[dict[str, Any], TableView]] = []
    error = None
    if q.strip():
        try:
            results = await run_in_threadpool(_search, state, q, k, method, encoder)
        except UsageError as exc:  # an unknown or unavailable retriever or encoder
            error = state.scrubber().text(str(exc))
    html = environment().get_template("search.html").render(
        page="search", q=q, method=method, k=k, encoder=encoder, encoders=list(ENCODERS),
        methods=[(name, RETRIEVERS[name][1], problems[name]) for name in RETRIEVERS],
        unavailable=[(n, p) for n, p in problems.items() if p], results=results,
        searched=bool(q.strip()) and error is None, error=error,
    )  # fmt: skip
    return HTMLResponse(html, status_code=400 if error else 200)
