"""What ``tablequest serve`` and ``tablequest mcp`` share, below both: the server's state
(store generations, asks, model, retrievers), its settings and limits, the bearer token and
bind check, the guard and connection protections of its HTTP side, search, and the path
scrubber. Web pages and routes stay in `tablequest.serve`, MCP tools in
`tablequest.mcpserver`; neither imports the other.

This module is the package's public surface: code outside `tablequest.service` imports from
here, never from its modules (tests/test_layers.py). Names are imported on first use, so
``from tablequest.service import default_token_file`` loads neither DuckDB nor uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablequest.lazy import lazy_exports

if TYPE_CHECKING:
    from tablequest.service.admission import Admission
    from tablequest.service.asks import AskCancelled, AskJob, AskManager, Busy, CpuTurns
    from tablequest.service.claims import CannotListen, Claim, claim
    from tablequest.service.config import (
        Limits,
        ServeConfig,
        ServeError,
        check_bind,
        default_token_file,
        is_loopback,
        load_or_create_token,
        normalize_origin,
        shown_token_file,
    )
    from tablequest.service.connections import ConnectionBudget, uvicorn_options
    from tablequest.service.conversations import (
        CONVERSATION_REF,
        conversation_detail,
        conversation_info,
    )
    from tablequest.service.inputs import (
        DEFAULT_ENCODER,
        DEFAULT_METHOD,
        TABLE_ID,
        validation_text,
    )
    from tablequest.service.names import short_name
    from tablequest.service.public import Scrubber
    from tablequest.service.search import matched_rows_fast, run_search, search_in_memory
    from tablequest.service.security import COOKIE, CSP, Guard, token_matches
    from tablequest.service.snapshot import ReadStore, TableInfo, public_sources
    from tablequest.service.state import AskSpec, CostlyOption, ServerOnlyOption, ServerState
    from tablequest.service.stores import StoreManager

#: public name → the module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "Admission": "tablequest.service.admission",
    "AskCancelled": "tablequest.service.asks",
    "AskJob": "tablequest.service.asks",
    "AskManager": "tablequest.service.asks",
    "Busy": "tablequest.service.asks",
    "CpuTurns": "tablequest.service.asks",
    "CannotListen": "tablequest.service.claims",
    "Claim": "tablequest.service.claims",
    "claim": "tablequest.service.claims",
    "Limits": "tablequest.service.config",
    "ServeConfig": "tablequest.service.config",
    "ServeError": "tablequest.service.config",
    "check_bind": "tablequest.service.config",
    "default_token_file": "tablequest.service.config",
    "is_loopback": "tablequest.service.config",
    "load_or_create_token": "tablequest.service.config",
    "normalize_origin": "tablequest.service.config",
    "shown_token_file": "tablequest.service.config",
    "ConnectionBudget": "tablequest.service.connections",
    "uvicorn_options": "tablequest.service.connections",
    "CONVERSATION_REF": "tablequest.service.conversations",
    "conversation_detail": "tablequest.service.conversations",
    "conversation_info": "tablequest.service.conversations",
    "DEFAULT_ENCODER": "tablequest.service.inputs",
    "DEFAULT_METHOD": "tablequest.service.inputs",
    "TABLE_ID": "tablequest.service.inputs",
    "validation_text": "tablequest.service.inputs",
    "short_name": "tablequest.service.names",
    "Scrubber": "tablequest.service.public",
    "matched_rows_fast": "tablequest.service.search",
    "search_in_memory": "tablequest.service.search",
    "run_search": "tablequest.service.search",
    "COOKIE": "tablequest.service.security",
    "CSP": "tablequest.service.security",
    "Guard": "tablequest.service.security",
    "token_matches": "tablequest.service.security",
    "ReadStore": "tablequest.service.snapshot",
    "TableInfo": "tablequest.service.snapshot",
    "public_sources": "tablequest.service.snapshot",
    "AskSpec": "tablequest.service.state",
    "CostlyOption": "tablequest.service.state",
    "ServerOnlyOption": "tablequest.service.state",
    "ServerState": "tablequest.service.state",
    "StoreManager": "tablequest.service.stores",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "CONVERSATION_REF",
    "COOKIE",
    "CSP",
    "DEFAULT_ENCODER",
    "DEFAULT_METHOD",
    "TABLE_ID",
    "Admission",
    "AskCancelled",
    "AskJob",
    "AskManager",
    "AskSpec",
    "Busy",
    "CannotListen",
    "Claim",
    "ConnectionBudget",
    "CostlyOption",
    "CpuTurns",
    "Guard",
    "Limits",
    "ReadStore",
    "Scrubber",
    "ServeConfig",
    "ServeError",
    "ServerOnlyOption",
    "ServerState",
    "StoreManager",
    "TableInfo",
    "check_bind",
    "claim",
    "conversation_detail",
    "conversation_info",
    "default_token_file",
    "is_loopback",
    "load_or_create_token",
    "matched_rows_fast",
    "normalize_origin",
    "public_sources",
    "run_search",
    "search_in_memory",
    "short_name",
    "shown_token_file",
    "token_matches",
    "uvicorn_options",
    "validation_text",
]
