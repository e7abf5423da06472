"""A short way for ``GET /v1/search``: the route's answer without FastAPI's routing and
parameter machinery.

Why (issue 38): at 32 clients the search API is bound by the server's CPU per request (a
closed loop of clients waits clients / throughput, Little's law; docs/results.md). FastAPI's
route matching (the routes are tried in turn) and its query-parameter validation took about
0.15 ms of the 1–1.5 ms of CPU a lexical search cost the server (measured in process: the
application's own layers 0.36 → 0.20 ms per request, the search stubbed).

`SearchFastPath` is the innermost of our middlewares: inside the guard and admission, so the
token, Host check, request count, security headers and access line are theirs, unchanged. It
answers a search whose query string the route would read the same way — `q` of 1 to 1,000
characters not all blank, `k` 1 to 100 in plain digits, a lexical `method` (grep or bm25),
`preview` ``true`` or ``false``, none of them given twice — and sends the route's
`JSONResponse`, so the bytes are the route's. The search runs on the event loop itself when
all it reads is in memory and small (`service.search_in_memory`; why, and the bounds:
`tablequest.service.inmemory`), and otherwise as the route runs it: `run_search` on the
route's worker threads under the route's limiter. Everything else goes to the route, which
stays the API's definition (OpenAPI, validation messages, error bodies): another method, a
value the route would refuse or parse its own way, and a search that raised a
`TablequestError` (the route then runs it again and answers the error as every route does;
only lexical methods, cheap and with no model to load, come this way, so that second run
costs little). A bug (any other exception) propagates as it does from the route: the
server's last handler logs it and answers 500.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import anyio
from fastapi.responses import JSONResponse

from tablequest.errors import TablequestError
from tablequest.service import DEFAULT_ENCODER, ServerState, run_search, search_in_memory

__all__ = ["FAST_METHODS", "SEARCH_PATH", "SearchFastPath", "plain_search_args"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SEARCH_PATH = "/v1/search"
FAST_METHODS = frozenset({"grep", "bm25"})
DEFAULTS = {"k": "5", "method": "grep", "encoder": DEFAULT_ENCODER, "preview": "false"}
"""The route's defaults (tests/serve/test_serve_fastsearch.py checks them against it)."""
NAMES = frozenset({"q", *DEFAULTS})
MAX_Q = 1000
MAX_K = 100
_K = re.compile(r"[1-9][0-9]{0,2}")
_BOOLS = {"true": True, "false": False}

SearchArgs = tuple[str, int, str, str, bool]


def plain_search_args(query_string: bytes) -> SearchArgs | None:
    """(q, k, method, encoder, preview) of a query string the route reads the same way (the
    module doc); None for any other, which the route answers. Query strings are split as
    Starlette splits them; names the route does not know are ignored, as it ignores them."""
    given: dict[str, str] = {}
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if name in NAMES:
            if name in given:
                return None
            given[name] = value
    q = given.get("q")
    if q is None or not 1 <= len(q) <= MAX_Q or not q.strip():
        return None
    args = DEFAULTS | given
    k, method, preview = args["k"], args["method"], _BOOLS.get(args["preview"])
    if _K.fullmatch(k) is None or int(k) > MAX_K or method not in FAST_METHODS:
        return None
    if preview is None:
        return None
    return q, int(k), method, args["encoder"], preview


class SearchFastPath:
    """The ASGI middleware described in the module doc."""

    def __init__(self, app: ASGIApp, *, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == SEARCH_PATH
            and scope["method"] == "GET"
            and (args := plain_search_args(scope.get("query_string", b""))) is not None
        ):
            state = self.state
            try:
                body = search_in_memory(state, *args)
                if body is None:  # it reads DuckDB or a big table: not on the event loop
                    body = await anyio.to_thread.run_sync(
                        run_search, state, *args, limiter=state.search_limiter
                    )
            except TablequestError:
                pass  # the route runs it again and answers the error (module doc)
            else:
                await JSONResponse(body)(scope, receive, send)
                return
        await self.app(scope, receive, send)
