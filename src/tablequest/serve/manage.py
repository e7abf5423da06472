"""Table management over HTTP: ``DELETE /v1/tables/{table_id}``.

Like every route it needs the token (the Guard); a browser's cookie-authenticated request
also needs ``X-Requested-With`` (the web app's remove button sends it after a confirmation).
The removal is copy-on-write, as an upload (`StoreManager.remove`): requests in flight keep
reading the old generation, new ones no longer see the table in any index. An unknown id is
404 ``unknown_table`` (`UnknownTables`, answered by the app's error handler).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from tablequest.serve import models as m
from tablequest.serve.api import TableId, state_of

__all__ = ["router"]

router = APIRouter(
    prefix="/v1", responses={400: {"model": m.ErrorBody}, 401: {"model": m.ErrorBody}}
)


@router.delete(
    "/tables/{table_id}", response_model=m.TablesRemoved, responses={404: {"model": m.ErrorBody}}
)
async def remove_table(request: Request, table_id: TableId) -> dict[str, Any]:
    """Remove a table from the store: its rows, its SQL relation and every search index."""
    state = state_of(request)
    removed = await run_in_threadpool(state.stores.remove, [table_id])
    with state.stores.reader() as store:
        left = len(store)
    return {"removed": removed, "tables_left": left}
