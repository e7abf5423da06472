"""Request and response bodies of the ``/v1`` API (pydantic: validated, in the OpenAPI schema)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tablequest.corpus.retrieval.retrievers import RetrieverSettings

OptionValue = str | int | float | bool | None
TABLE_ID = r"^t[0-9a-f]{15}$"
DEFAULT_METHOD = "auto"
"""The method an ask runs unless it names one: the CLI's and the library's default."""
DEFAULT_ENCODER = RetrieverSettings().encoder
"""The encoder of dense, hybrid and rerank unless a request names one (the CLI's `search`)."""


SOURCE = (
    "The table's file relative to the corpus root (an upload: its `stored_as`), with "
    "`#sheet` when it has one; never a server path."
)


class ErrorDetail(BaseModel):
    code: str = Field(description="A short machine-readable kind, e.g. unknown_method.")
    message: str = Field(description="What was wrong and how to fix it.")


class ErrorBody(BaseModel):
    error: ErrorDetail


class AskRequest(BaseModel):
    """One question for a registered method, with the options the CLI takes."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4000, description="The question (or claim).")
    method: str = Field(
        DEFAULT_METHOD, max_length=64, description="A registered method (/v1/methods)."
    )
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="Method options, as `-o NAME VALUE` on the CLI."
    )
    config: str | None = Field(None, max_length=200, description="A named paper configuration.")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value

    steps: int | None = Field(None, ge=1, le=1000, description="Cap on LLM calls (the budget).")
    table_ids: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="Answer from these tables only (every method; ids from /v1/tables).",
    )
    task: Literal["tableqa", "fact_verification"] = "tableqa"
    stream: bool = Field(True, description="Server-sent events (else one JSON result).")


class AskStarted(BaseModel):
    id: str
    events: str = Field(description="Server-sent events of the ask (trace events, result).")
    result: str = Field(description="The ask's state and result as JSON.")
    trace_id: str | None


class AskState(BaseModel):
    id: str
    question: str
    method: str
    done: bool
    events: int
    trace_id: str | None
    result: dict[str, Any] | None = Field(description="`ask --json` once done.")
    error: ErrorDetail | None


class SearchHit(BaseModel):
    table_id: str
    score: float
    source: str = Field(description=SOURCE)
    format: str | None
    title: str | None
    matched_rows: list[int]
    preview: str | None = None


class SearchResponse(BaseModel):
    question: str
    method: str
    hits: list[SearchHit]


class TableSummary(BaseModel):
    table_id: str
    source: str = Field(description=SOURCE)
    format: str | None
    sheet: str | None
    title: str | None
    n_rows: int
    n_cols: int


class TableList(BaseModel):
    total: int
    offset: int
    tables: list[TableSummary]


class MergeModel(BaseModel):
    top: int
    left: int
    bottom: int
    right: int


class TableDetail(BaseModel):
    """A table with its structure; `rows` is a window of body rows (`offset`, `limit`)."""

    table_id: str
    source: str = Field(description=SOURCE)
    format: str | None
    title: str | None
    n_rows: int
    n_cols: int
    n_header_rows: int
    n_header_cols: int
    header_rows: list[list[str]]
    header_paths: list[list[str]] = Field(description="Per column, its header path, top first.")
    columns: list[str] = Field(description="Flat unique names ('Parent / Child').")
    merges: list[MergeModel]
    col_ids: list[int]
    row_ids: list[int]
    rows: list[list[str]]
    offset: int


class FileResult(BaseModel):
    name: str
    stored_as: str
    size: int


class IngestFailure(BaseModel):
    name: str
    reason: str


class IngestWarning(BaseModel):
    name: str
    warning: str = Field(description="What the reader repaired or skipped in that file.")


class IngestResponse(BaseModel):
    files: list[FileResult]
    tables_stored: int
    tables_unchanged: int
    files_failed: list[IngestFailure]
    files_warned: list[IngestWarning]
    tables: int = Field(description="Tables in the store now.")


class OptionModel(BaseModel):
    name: str
    type: str
    default: Any
    help: str
    paper: str | None
    settable: bool = Field(
        description="False for server-side options: paths, URLs, sandbox settings, memory "
        "files (set in tablequest.toml)."
    )


class MethodInfo(BaseModel):
    name: str
    input: str
    description: str
    paper: str | None
    needs_llm: bool
    configs: list[str]
    options: list[OptionModel]


class TraceInfo(BaseModel):
    id: str
    size: int
    modified: float


class TraceDetail(BaseModel):
    id: str
    events: list[dict[str, Any]]
    summary: dict[str, Any]


class Health(BaseModel):
    status: Literal["ok"]
    tables: int
    generation: int
    asks_running: int
    llm: bool


class Version(BaseModel):
    tablequest: str
    api: str


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
