"""The store's conversations as both servers give them (issue 39, "Follow-up questions").

``GET /v1/conversations`` and the MCP tool ``list_conversations`` list `conversation_info`;
``GET /v1/conversations/{id}`` and ``get_conversation`` give `conversation_detail`, whose
turns name their trace by its API address (``/v1/traces/<id>``), never a server path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablequest.methods import Conversation

__all__ = ["CONVERSATION_REF", "conversation_detail", "conversation_info"]

CONVERSATION_REF = r"^([0-9a-f]{12}|latest)$"
"""A conversation as a request names it: its id, or ``latest`` (the most recently updated)."""


def conversation_info(conv: Conversation) -> dict[str, Any]:
    """Id, title (the first question), number of turns, created and updated."""
    return {"id": conv.id, "title": conv.title, "turns": len(conv.turns),
            "created": conv.created, "updated": conv.updated}  # fmt: skip


def conversation_detail(conv: Conversation) -> dict[str, Any]:
    """`conversation_info` with the turns: each question as asked and as answered."""
    turns = [
        {"question": t.question, "standalone": t.standalone, "answer": t.answer,
         "status": t.status, "tables": t.tables, "at": t.at,
         "trace": f"/v1/traces/{Path(t.trace).stem}" if t.trace else None}
        for t in conv.turns
    ]  # fmt: skip
    return {**conversation_info(conv), "turns": turns}
