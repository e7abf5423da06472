"""What a request names, checked the same way by the HTTP API and the MCP tools: the shape of
a table id, the method and encoder used unless one is named, and pydantic's errors as one
line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tablequest.corpus import RetrieverSettings

__all__ = ["DEFAULT_ENCODER", "DEFAULT_METHOD", "TABLE_ID", "validation_text"]

TABLE_ID = r"^t[0-9a-f]{15}$"
DEFAULT_METHOD = "auto"
"""The method an ask runs unless it names one: the CLI's and the library's default."""
DEFAULT_ENCODER = RetrieverSettings().encoder
"""The encoder of dense, hybrid and rerank unless a request names one (the CLI's `search`)."""


def validation_text(errors: Sequence[Mapping[str, Any]], *, limit: int = 5) -> str:
    """Pydantic's errors as ``where: what; …`` (the first `limit`; "body" left out of the
    place): the HTTP API's and the MCP tools' message for arguments that fail their schema.
    The rejected values are not echoed (they are the caller's data)."""
    parts = []
    for error in list(errors)[:limit]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {error.get('msg')}")
    more = len(errors) - limit
    return "; ".join(parts + ([f"and {more} more"] if more > 0 else [])) or "invalid request"
