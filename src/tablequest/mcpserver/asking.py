"""`ask` and `research`: a registered method with the server's model, as ``POST /v1/ask`` runs it;
the store's conversations (`list_conversations`, `get_conversation`, `delete_conversation`).

Both go through `ServerState.start_ask`, so an MCP ask is an HTTP ask: the request may set
only the options its method allows (`refuse_server_options`: no path, URL, sandbox setting or
memory file), the server's ask limit (`Busy`) and time limit apply, the trace is framed by the
server's ``request`` and ``result`` decisions, and the result goes through the API's
`Scrubber` (no server path; ``trace`` becomes ``/v1/traces/<id>``, and the trace id is given
on its own). A client that goes away stops its ask (as an HTTP client that disconnects).

Every ask is a turn of a conversation of the store, as over HTTP: `ask`'s ``conversation_id``
(an earlier answer's, or ``latest``) asks a follow-up in that conversation, rewritten with its
history into a standalone question (`tablequest.methods.conversation`); none starts a new
one. The result carries ``conversation_id`` and ``rewritten_question``. The conversations are
the server's (`ServerState.conversations`), shown as the HTTP API shows them
(`tablequest.service.conversation_info`, `conversation_detail`).

Without a model (`ServerState.llm` is None) both refuse with `NoModel` instead of answering
with the methods' LLM-free preview: an MCP client asked for an answer.

`research` is DTR (method ``research``) on one stored table: the answer plus DTR's report
(``details.report``) and its charts as PNG bytes, read from the files DTR wrote under the
server's trace folder (a chart path outside it is never read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.errors import RunError, UsageError
from tablequest.llm import NOT_CONFIGURED_HINT
from tablequest.mcpserver.tools import NoSuchTable
from tablequest.methods import Conversation, Task, UnknownConversation
from tablequest.service import (
    AskJob,
    AskSpec,
    ServerState,
    conversation_detail,
    conversation_info,
)

__all__ = [
    "AskOutcome", "NoModel", "delete_conversation", "get_conversation", "list_conversations",
    "run_ask", "run_research",
]  # fmt: skip

OptionValue = str | int | float | bool


class NoModel(UsageError):
    """The server has no model configured, so it cannot answer."""


class AskFailed(RunError, RuntimeError):
    """The ask ended without a result (its error, scrubbed, is the message)."""


@dataclass
class AskOutcome:
    """The ``ask --json`` payload as clients get it, the trace id, and any chart images."""

    payload: dict[str, Any]
    trace_id: str | None
    charts: list[bytes] = field(default_factory=list)


def _require_model(state: ServerState, tool: str) -> None:
    if state.llm is None:
        raise NoModel(
            f"{tool} needs a model and this server has none configured. The operator "
            f"restarts `tablequest mcp STORE` with one. {NOT_CONFIGURED_HINT} "
            "Without a model, search_tables, get_table and run_pandas still work."
        )


async def _finish(state: ServerState, job: AskJob) -> tuple[dict[str, Any], dict[str, Any]]:
    """Wait for `job`; (the scrubbed payload, the raw one). Stops the ask if cancelled."""
    try:
        async for _ in job.follow():
            pass
    finally:
        if not job.done:
            job.cancel("the MCP client went away")
    scrub = state.scrubber()
    if job.result is None:
        raise AskFailed(scrub.text((job.error or {}).get("message", "the ask failed")))
    raw = job.result.to_json()
    return scrub.result(raw), raw


async def run_ask(
    state: ServerState,
    question: str,
    *,
    method: str,
    table_ids: tuple[str, ...],
    options: Mapping[str, OptionValue],
    config: str | None,
    steps: int | None,
    task: Task,
    conversation_id: str | None = None,
) -> AskOutcome:
    """Answer `question` with the registered `method` and the server's model, in the
    conversation `conversation_id` names (None: a new one).

    Raises:
        NoModel: no model configured.
        UnknownMethod, OptionError, ServerOnlyOption, SourceError, ValueError: a bad ask.
        UnknownConversation: no such conversation in the store.
        Busy: the server's ask limit is reached.
        AskFailed: the ask ended without a result.
    """
    _require_model(state, "ask")
    spec = AskSpec(
        question=question, method=method, options=_names(options), config=config,
        steps=steps, table_ids=table_ids, task=task, conversation_id=conversation_id,
    )  # fmt: skip
    job = await _start(state, spec)
    payload, _ = await _finish(state, job)
    return AskOutcome(payload, job.trace_id)


async def run_research(
    state: ServerState, table_id: str, task: str, *, options: Mapping[str, OptionValue]
) -> AskOutcome:
    """DTR on one stored table for an analytical `task`: answer, report and charts.

    Raises:
        As `run_ask`.
    """
    _require_model(state, "research")
    spec = AskSpec(question=task, method="research", options=_names(options), table_ids=(table_id,))
    job = await _start(state, spec)
    payload, raw = await _finish(state, job)
    charts = _charts(state, raw.get("details", {}).get("charts") or [])
    return AskOutcome(payload, job.trace_id, charts)


async def _start(state: ServerState, spec: AskSpec) -> AskJob:
    import anyio

    _check_ids(state, spec.table_ids)
    if spec.conversation_id is not None:
        _conversation(state, spec.conversation_id)
    return await anyio.to_thread.run_sync(state.start_ask, spec)


def _check_ids(state: ServerState, table_ids: tuple[str, ...]) -> None:
    """Refuse an unknown table id with the MCP tools that give ids (the methods' own message
    names ``tablequest tables``, a command an MCP client cannot run)."""
    with state.stores.reader() as store:
        missing = [t for t in table_ids if t not in store.snapshot.info]
    if missing:
        raise NoSuchTable(
            f"no table {missing[0]!r} in the store: list_tables and search_tables give ids"
        )


def _conversation(state: ServerState, conversation_id: str) -> Conversation:
    """The conversation `conversation_id` names; an unknown one is refused naming the MCP tool
    that lists them (the library's message names a CLI command).

    Raises:
        UnknownConversation: no such conversation in the store.
    """
    try:
        return state.conversations.get(conversation_id)
    except UnknownConversation:
        raise UnknownConversation(
            f"no conversation {conversation_id!r} with this store: list_conversations gives "
            "ids (or conversation_id latest continues the last one)"
        ) from None


def list_conversations(state: ServerState) -> dict[str, Any]:
    """The store's conversations, most recently updated first."""
    return {"conversations": [conversation_info(c) for c in state.conversations.list()]}


def get_conversation(state: ServerState, conversation_id: str) -> dict[str, Any]:
    """One conversation with its turns, scrubbed of server folders.

    Raises:
        UnknownConversation: no such conversation in the store.
    """
    detail = conversation_detail(_conversation(state, conversation_id))
    return dict(state.scrubber().value(detail))


def delete_conversation(state: ServerState, conversation_id: str) -> dict[str, Any]:
    """Remove a conversation (its answers' traces stay); ``{"removed": id}``.

    Raises:
        UnknownConversation: no such conversation in the store.
    """
    conv = _conversation(state, conversation_id)
    state.conversations.delete(conv.id)
    return {"removed": conv.id}


def _names(options: Mapping[str, OptionValue]) -> dict[str, OptionValue]:
    """Option names as ``-o`` takes them (``top-k`` or ``top_k``), as the HTTP API does."""
    return {k.strip().replace("-", "_"): v for k, v in options.items()}


def _charts(state: ServerState, paths: list[Any]) -> list[bytes]:
    """The PNGs of DTR's charts that lie under the server's trace folder."""
    root = state.trace_dir
    out = []
    for raw in paths:
        path = Path(str(raw)).resolve()
        if path.is_relative_to(root) and path.suffix == ".png" and path.is_file():
            out.append(path.read_bytes())
    return out
