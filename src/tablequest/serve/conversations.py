"""The store's conversations over HTTP (issue 39, "Follow-up questions"):
``GET /v1/conversations``, ``GET /v1/conversations/{id}``, ``DELETE /v1/conversations/{id}``.

Like every route they need the token (the Guard); a browser's cookie-authenticated DELETE
also needs ``X-Requested-With``. ``POST /v1/ask`` starts a conversation, or continues the
one its ``conversation_id`` names (`ServerState.start_ask`). An unknown id is 404
``unknown_conversation`` (`UnknownConversation`, answered by the app's error handler). A
turn's trace is named by its API address (``/v1/traces/<id>``), never a server path.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.concurrency import run_in_threadpool

from tablequest.serve import models as m
from tablequest.serve.api import state_of
from tablequest.service import conversation_detail, conversation_info

__all__ = ["router"]

router = APIRouter(
    prefix="/v1", responses={400: {"model": m.ErrorBody}, 401: {"model": m.ErrorBody}}
)
ConversationId = Annotated[
    str, Path(pattern=m.CONVERSATION_ID, description="An id from /v1/conversations, or latest.")
]


@router.get("/conversations", response_model=m.ConversationList)
async def conversations(request: Request) -> dict[str, Any]:
    """The store's conversations, most recently updated first."""
    found = await run_in_threadpool(state_of(request).conversations.list)
    return {"conversations": [conversation_info(c) for c in found]}


@router.get(
    "/conversations/{conversation_id}",
    response_model=m.ConversationDetail,
    responses={404: {"model": m.ErrorBody}},
)
async def conversation(request: Request, conversation_id: ConversationId) -> dict[str, Any]:
    """One conversation with its turns (each question as asked and as answered)."""
    conv = await run_in_threadpool(state_of(request).conversations.get, conversation_id)
    return conversation_detail(conv)


@router.delete(
    "/conversations/{conversation_id}",
    response_model=m.ConversationRemoved,
    responses={404: {"model": m.ErrorBody}},
)
async def remove_conversation(request: Request, conversation_id: ConversationId) -> dict[str, Any]:
    """Delete a conversation of the store (its answers' traces stay)."""
    state = state_of(request)
    conv = await run_in_threadpool(state.conversations.get, conversation_id)
    await run_in_threadpool(state.conversations.delete, conv.id)
    return {"removed": conv.id}
