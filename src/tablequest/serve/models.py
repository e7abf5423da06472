"""Request and response bodies of the ``/v1`` API (pydantic: validated, in the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tablequest.service import CONVERSATION_REF, DEFAULT_METHOD

OptionValue = str | int | float | bool | None
CONVERSATION_ID = CONVERSATION_REF


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
    conversation_id: str | None = Field(
        None,
        pattern=CONVERSATION_ID,
        description="Continue this conversation (the `conversation_id` of an earlier answer, "
        "or `latest`): the question is rewritten with its history and prefers the previous "
        "answer's tables. None: a new conversation.",
    )


class ConversationInfo(BaseModel):
    id: str
    title: str = Field(description="The first question.")
    turns: int
    created: str
    updated: str


class ConversationList(BaseModel):
    conversations: list[ConversationInfo]


class ConversationTurn(BaseModel):
    question: str = Field(description="As asked.")
    standalone: str = Field(description="As answered (the rewritten question of a follow-up).")
    answer: str | None
    status: str
    tables: list[str]
    trace: str | None = Field(description="The turn's trace, `/v1/traces/<id>`.")
    at: str


class ConversationDetail(BaseModel):
    id: str
    title: str = Field(description="The first question.")
    created: str
    updated: str
    turns: list[ConversationTurn]


class ConversationRemoved(BaseModel):
    removed: str


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
    sql_name: str | None = Field(
        None, description="Its relation, as /v1/sql names it (None: a store of format 1)."
    )
    ingested_at: str | None = Field(
        None, description="When its file was ingested, ISO 8601 UTC (None: not recorded)."
    )


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


class RelationColumn(BaseModel):
    name: str = Field(description="The column's SQL name in the table's relation.")
    header: list[str] = Field(description="The header path it came from, top first.")
    type: str = Field(description="Its SQL type: BIGINT, DOUBLE, DATE, TIMESTAMP or VARCHAR.")
    col_id: int


class RelationInfo(BaseModel):
    table_id: str
    sql_name: str
    source: str = Field(description=SOURCE)
    columns: list[RelationColumn]


class FacetValue(BaseModel):
    value: Any
    count: int


class TableRows(BaseModel):
    """A page of a table's rows through its relation: sorted, filtered, with facets."""

    table_id: str
    source: str = Field(description=SOURCE)
    sql_name: str = Field(description="The table's relation (what /v1/sql queries name).")
    total: int = Field(description="Rows matching the filters (all rows without filters).")
    offset: int
    limit: int
    sort: str | None = Field(description="The column sorted by (its SQL name), if any.")
    descending: bool
    where: list[str] = Field(description="The filters that hold for every row.")
    columns: list[RelationColumn]
    row_ids: list[int] = Field(description="Body row ids of the page, in order.")
    rows: list[list[Any]] = Field(
        description="Typed values (numbers, ISO dates, text, null), one list per row in "
        "`columns` order."
    )
    text: list[list[str]] = Field(description="The same cells' text as stored.")
    facets: dict[str, list[FacetValue]] = Field(
        default_factory=dict, description="Per requested column, its most frequent values."
    )


class SqlRequest(BaseModel):
    """A read-only query over the store's relations."""

    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(
        None, min_length=1, max_length=100_000, description="One SELECT statement."
    )
    q: str | None = Field(
        None, min_length=1, max_length=100_000, description="The same as `query` (as in GET)."
    )
    limit: int | None = Field(
        None, ge=1, description="Rows at most (default 1,000; the server caps it)."
    )
    format: Literal["json", "csv", "tsv", "parquet", "xlsx"] = "json"

    @model_validator(mode="after")
    def _one_query(self) -> SqlRequest:
        if (self.query is None) == (self.q is None):
            raise ValueError("give the statement as `query` or as `q`, exactly one of them")
        return self

    @property
    def statement(self) -> str:
        """The query, from whichever field gave it."""
        return self.query if self.query is not None else self.q or ""


class SqlColumn(BaseModel):
    name: str
    type: str = Field(description="DuckDB's type of the column.")


class SqlResponse(BaseModel):
    columns: list[SqlColumn]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    truncated_by: Literal["rows", "bytes"] | None = Field(
        description="What cut the result: the row limit or the size limit."
    )
    seconds: float
    limit: int = Field(description="The row limit the query ran with.")


class SqlErrorDetail(ErrorDetail):
    line: int | None = Field(None, description="Where in the query DuckDB pointed, if it did.")
    column: int | None = None


class SqlErrorBody(BaseModel):
    error: SqlErrorDetail


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


class TablesRemoved(BaseModel):
    """What `DELETE /v1/tables/{table_id}` removed."""

    removed: list[str] = Field(description="The table ids removed from every index.")
    tables_left: int
