"""The library side of the MCP tools that read: list, search and show tables, run SQL and pandas.

`TableTools` wraps one `tablequest.service.ServerState` — the object behind every route
of ``tablequest serve`` — so an MCP client reads exactly what an HTTP client reads: the
same read-only store generations, table sources relative to the corpus root (never a
server path), the same search code (`tablequest.service.run_search`, any registered
retriever, matched rows per hit) and the same row cap for one table request
(`Limits.max_table_rows`). Nothing a client sends is used as a path: tables are named by
their ids, which are looked up in the store.

SQL (`query_sql`) runs on `tablequest.corpus.storage.sql.SqlRunner`: its own in-memory DuckDB
that attaches the store file read-only with external access off, and refuses what is not one
SELECT over the tables' relations (the store's own tables, which hold source paths, are
never readable). One runner per store generation, made on the first query (`SqlRunners`);
when an ingest makes a new generation, the next query gets a new runner and the old one is
closed once its last query ends. `get_table`'s sort, filters and facets run on the table's
relation through `tablequest.corpus.storage.browse` and render as any window.

`run_pandas` runs on a pool of its own (`tablequest.mcpserver.pandaspool`, issue 40), each
table loaded once and within ``[serve] pandas_cells``.

Every method returns plain data (dicts, `Window`, `PandasRun`); `tablequest.mcpserver.server`
turns them into MCP results and every `TablequestError` into a tool error (any other
exception into an internal-error one).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tablequest.corpus import (
    Column,
    Relation,
    SqlError,
    SqlRunner,
    browse,
    json_value,
    streamed_rows,
)
from tablequest.errors import BadValue, UsageError
from tablequest.mcpserver.pandaspool import PandasPool
from tablequest.mcpserver.sandboxed import (
    CodeRunner,
    PandasRun,
    check_names,
    host_folders,
    scrub_run,
    timed_out,
)
from tablequest.mcpserver.window import (
    DEFAULT_CHARS,
    Body,
    Format,
    Selection,
    Window,
    WindowError,
    table_window,
    window_rows,
)
from tablequest.sandbox import Sandbox
from tablequest.service import ReadStore, ServerState, TableInfo, run_search, short_name

__all__ = ["NoSuchTable", "SqlRunners", "TableTools", "TooManyCells", "sql_overview"]

SQL_TIMEOUT = 10.0
"""Seconds one `query_sql` query may run (then it is interrupted)."""
LISTED_COLUMNS = 30
"""Columns (name and type) `list_tables` gives per table; DESCRIBE in SQL gives every one."""
FACET_VALUES = 10
"""Values (with counts) a facet of `get_table` gives."""
FACET_CHARS = 200
"""A facet value longer than this is cut (…) in the answer."""
PREVIEW_CHARS = 2_000
"""A `search_tables` hit's preview is cut after this many characters."""
_CLI_HINT = "`tablequest tables --json` lists their sql_name"


class NoSuchTable(UsageError):
    """A table id the store does not hold."""


class TooManyCells(BadValue):
    """The tables of one `run_pandas` call hold more cells than the server binds."""

    http_status = 422
    code = "over_server_limit"


class TableTools:
    """`list_tables`, `search_tables`, `get_table` and `run_pandas` over a `ServerState`."""

    def __init__(self, state: ServerState, runner: CodeRunner | None = None) -> None:
        self.state = state
        # run_pandas runs in the methods' sandbox, with the server's [sandbox] isolation
        self.runner = runner or CodeRunner(lambda: Sandbox.from_settings(state.settings))
        limits = state.config.limits
        # run_pandas has threads of its own: a flood of it never holds the reads' threads
        self.pool = PandasPool(limits.pandas_workers, limits.pandas_per_session)
        self.sql = SqlRunners()

    def list_tables(self, *, filter: str | None, offset: int, limit: int) -> dict[str, Any]:
        """The stored tables in store order, those whose source, title or SQL name contain
        `filter` (case-insensitive), one page of them, each with its relation's name and
        first `LISTED_COLUMNS` columns (name, type)."""
        with self.state.stores.reader() as store:
            infos = list(store.snapshot.info.values())
            relations = _relations(store)
        if filter:
            needle = filter.lower()
            infos = [
                i for i in infos
                if needle in i.name.lower() or needle in (i.title or "").lower()
                or (i.table_id in relations and needle in relations[i.table_id].sql_name)
            ]  # fmt: skip
        page = infos[offset : offset + limit]
        return {
            "total": len(infos),
            "offset": offset,
            "next_offset": offset + limit if offset + limit < len(infos) else None,
            "tables": [
                {"table_id": i.table_id, "source": i.name, "title": i.title, "format": i.format,
                 "sheet": i.sheet, "n_rows": i.n_rows, "n_cols": i.n_cols,
                 **_relation_entry(relations.get(i.table_id))}
                for i in page
            ],
        }  # fmt: skip

    def sql_overview(self, *, max_relations: int = 30, max_chars: int = 3000) -> str:
        """The first relations with their typed columns, for `query_sql`'s description."""
        with self.state.stores.reader() as store:
            relations = sorted(_relations(store).values(), key=lambda r: r.sql_name)
        return sql_overview(relations, max_relations=max_relations, max_chars=max_chars)

    def query_sql(
        self, query: str, *, limit: int, max_chars: int = DEFAULT_CHARS
    ) -> dict[str, Any]:
        """Run one read-only SELECT (`SqlRunner.run`): columns with types, at most `limit`
        rows, cut further to `max_chars` characters of JSON (`truncated_by` says which).

        Raises:
            SqlRefused: not one SELECT over the tables' relations (nothing ran).
            SqlError: DuckDB's error (with line and column), or the time limit.
            StoreError: the store has no relations (`tablequest migrate`) or cannot be read.
        """
        stores = self.state.stores
        try:
            with self.sql.runner(stores.path, stores.generation) as runner:
                result = runner.run(query, limit=limit, timeout=SQL_TIMEOUT)
        except SqlError as exc:
            message = str(exc).replace(_CLI_HINT, "list_tables gives each table's sql_name")
            raise type(exc)(message, line=exc.line, column=exc.column) from None
        data = result.to_json()
        data.pop("seconds", None)
        return _fit_rows(data, max_chars)

    def search_tables(self, *, question: str, k: int, method: str, encoder: str) -> dict[str, Any]:
        """The `k` best tables for `question` by retriever `method`, with matched rows and
        a preview around the question's words (what ``GET /v1/search?preview=1`` answers),
        cut to `PREVIEW_CHARS`; a table without a title is titled by its file name (and
        sheet), so a client has a name for every hit.

        Raises:
            BadValue: a blank question or an unknown retriever.
            EncoderUnavailable: the retriever's encoder needs an extra.
        """
        if not question.strip():
            raise BadValue("the question is empty")
        found = run_search(self.state, question, k, method, encoder, True)
        for hit in found["hits"]:
            hit["title"] = hit["title"] or short_name(hit["source"] or hit["table_id"])
            preview = hit["preview"] or ""
            if len(preview) > PREVIEW_CHARS:
                hit["preview"] = preview[:PREVIEW_CHARS] + "\n… [preview cut; get_table reads it]"
        return found

    def get_table(
        self,
        table_id: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        rows: Sequence[int] | None = None,
        columns: Sequence[int | str] | None = None,
        fmt: Format = "markdown",
        max_chars: int,
        sort: str | None = None,
        descending: bool = False,
        where: Sequence[str] = (),
        facets: Sequence[str] = (),
    ) -> tuple[Window, str]:
        """A window of one table (`table_window`) and its source name.

        With `sort` or `where` (``column op value`` filters, all holding), the page's rows are
        chosen on the table's relation (`browse.page`: `offset` and `limit` page through the
        matching rows); `facets` adds each named column's most frequent values among them.

        Raises:
            NoSuchTable: `table_id` is not in the store.
            WindowError: a row or column the table does not have, a sort, filter or facet
                column its relation does not have, or `rows` with `sort`/`where`.
            ValueError: a filter that cannot be read, or a value of the wrong type.
            StoreOutdated: sort, filters or facets on a store without relations.
        """
        filters = [browse.parse_filter(w) for w in where]
        if rows is not None and (sort is not None or filters):
            raise WindowError(
                "rows picks body rows by id, sort and where pick them by value: give one or "
                "the other"
            )
        if descending and sort is None:
            raise WindowError("descending orders by the sort column: give sort too")
        cap = self.state.config.limits.max_table_rows
        n = min(limit or cap, cap)
        with self.state.stores.reader() as store:
            source = self._table_info(store, table_id).name
            streamed = streamed_rows(store, table_id)  # read a page at a time, never whole
            table = store.get(table_id) if streamed is None else None
            n_all = table.n_rows if table is not None else streamed or 0
            selection: Selection | None = None
            counts: dict[str, list[dict[str, Any]]] = {}
            if sort is not None or filters or facets:
                relation = store.relation(table_id)
                for name in [*([sort] if sort else []), *(f.column for f in filters), *facets]:
                    _column(relation, name)
                if sort is not None or filters:
                    page = browse.page(
                        store, table_id, offset=offset, limit=n, sort=sort,
                        descending=descending, where=filters,
                    )  # fmt: skip
                    selection = Selection(
                        tuple(page.row_ids), page.total, offset, page.sort, descending,
                        tuple(str(f) for f in filters),
                    )  # fmt: skip
                for name in dict.fromkeys(facets):
                    col = _column(relation, name).name
                    values = browse.facets(store, table_id, col, k=FACET_VALUES, where=filters)
                    counts[col] = [{"value": _short(v), "count": c} for v, c in values]
            extra = _facets_text(counts, selection, n_all) if fmt == "markdown" else ""
            room = len(extra) or (len(json.dumps(counts, ensure_ascii=False)) + 12 if counts else 0)
            whole = None if table is not None else Body(n_all, range(n_all))
            if table is None:
                table = store.get_rows(table_id, window_rows(n_all, rows, offset, n, selection))
            window = table_window(
                table, table_id, offset=offset, limit=n, rows=rows, columns=columns, fmt=fmt,
                max_chars=max(1, max_chars - room), selection=selection, whole=whole,
            )  # fmt: skip
        if counts:
            window.data["facets"] = counts
            text = window.text + extra
            if fmt == "json":
                text = json.dumps(window.data, ensure_ascii=False)
            window = Window(text, window.data)
        window.data["source"] = source
        return window, source

    async def run_pandas_in_pool(
        self, code: str, tables: Mapping[str, str], timeout: float, *, session: object
    ) -> PandasRun:
        """`run_pandas` on the sandbox pool (`PandasPool`), counted against `session`; the
        wait for a worker spends the call's timeout.

        Raises:
            TooManyRuns: `session` has its limit of calls running or waiting.
            As `run_pandas`.
        """
        started = time.monotonic()
        return await self.pool.run(
            session, lambda: self.run_pandas(code, tables, timeout, started=started)
        )

    def run_pandas(
        self,
        code: str,
        tables: Mapping[str, str],
        timeout: float,
        *,
        started: float | None = None,
    ) -> PandasRun:
        """Run `code` with each table id of `tables` bound to its name (`CodeRunner.run`):
        each table loaded once, within the cells budget, the call within `timeout` seconds
        of `started` (default now); the child's output scrubbed of server folders.

        Raises:
            NoSuchTable, BadFrameName, SandboxError: see `CodeRunner.run`.
            TooManyCells: the tables hold more than the server's ``pandas_cells``.
        """
        started = time.monotonic() if started is None else started
        check_names(tables)
        if time.monotonic() - started >= timeout:
            return timed_out(started, timeout, "waiting for one of the server's run_pandas workers")
        unique = list(dict.fromkeys(tables.values()))
        with self.state.stores.reader() as store:
            for tid in unique:
                self._table_info(store, tid)
            self._check_cells(store, unique)
            loaded = {tid: store.get(tid) for tid in unique}
        frames = {name: loaded[tid] for name, tid in tables.items()}
        run = self.runner.run(code, frames, timeout, ids=dict(tables), started=started)
        return scrub_run(run, self.state.scrubber(*host_folders()).text)

    def _check_cells(self, store: ReadStore, table_ids: Sequence[str]) -> None:
        """Refuse tables whose cells (each table once) exceed `Limits.pandas_cells`."""
        budget = self.state.config.limits.pandas_cells
        infos = [store.snapshot.info[tid] for tid in table_ids]
        cells = sum(i.n_rows * i.n_cols for i in infos)
        if cells > budget:
            shapes = ", ".join(f"{i.table_id}: {i.n_rows:,} rows × {i.n_cols:,} columns"
                               for i in infos)  # fmt: skip
            raise TooManyCells(
                f"run_pandas binds at most {budget:,} cells a call (the server's [serve] "
                f"pandas_cells); these tables hold {cells:,} ({shapes}): bind fewer or "
                "smaller tables, or select the rows you need with query_sql"
            )

    @staticmethod
    def _table_info(store: ReadStore, table_id: str) -> TableInfo:
        info = store.snapshot.info.get(table_id)
        if info is None:
            raise NoSuchTable(
                f"no table {table_id!r} in the store: list_tables and search_tables give ids"
            )
        return info

    def close(self) -> None:
        self.pool.close()
        self.runner.close()
        self.sql.close()


@dataclass
class _Slot:
    key: tuple[str, int]
    runner: SqlRunner
    refs: int = 0
    retired: bool = False


class SqlRunners:
    """One `SqlRunner` per store generation: made on the first query of a generation, closed
    once a newer generation replaced it and its last query ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slot: _Slot | None = None

    @contextmanager
    def runner(self, path: Path, generation: int) -> Iterator[SqlRunner]:
        """The runner of the store file `path` at `generation` for the block.

        Raises:
            StoreError: the store cannot be opened for SQL (outdated, sharded, unreadable).
        """
        key = (str(path), generation)
        with self._lock:
            slot = self._slot
            if slot is None or slot.key[0] != key[0] or slot.key[1] < generation:
                slot = _Slot(key, SqlRunner(path))
                old, self._slot = self._slot, slot
                if old is not None:
                    self._retire(old)
            slot.refs += 1
        try:
            yield slot.runner
        finally:
            with self._lock:
                slot.refs -= 1
                close = slot.retired and slot.refs == 0
            if close:
                slot.runner.close()

    @staticmethod
    def _retire(slot: _Slot) -> None:
        """Mark `slot` replaced (the lock held); close it now when no query uses it."""
        slot.retired = True
        if slot.refs == 0:
            slot.runner.close()

    def close(self) -> None:
        with self._lock:
            slot, self._slot = self._slot, None
            if slot is not None:
                self._retire(slot)


def _relations(store: ReadStore) -> dict[str, Relation]:
    """table id → relation of the reader's generation (empty for a store of format 1)."""

    def load() -> dict[str, Relation]:
        return {r.table_id: r for r in store.relations()}

    return cast(dict[str, Relation], store.snapshot.extras.get_or(("", "mcp:relations"), load))


def _relation_entry(relation: Relation | None) -> dict[str, Any]:
    if relation is None:
        return {"sql_name": None, "columns": None}
    cols = relation.columns[:LISTED_COLUMNS]
    return {
        "sql_name": relation.sql_name,
        "columns": [{"name": c.name, "type": c.type} for c in cols],
    }


def sql_overview(
    relations: Sequence[Relation], *, max_relations: int = 30, max_chars: int = 3000
) -> str:
    """``name(col TYPE, …)`` for the first relations, within `max_chars` (the rest counted)."""
    lines: list[str] = []
    used = 0
    for rel in relations[:max_relations]:
        cols = [f"{c.name} {c.type}" for c in rel.columns[:10]]
        if len(rel.columns) > 10:
            cols.append(f"… {len(rel.columns) - 10} more")
        line = f"{rel.sql_name}({', '.join(cols)})"
        if used + len(line) + 2 > max_chars:
            break
        lines.append(line)
        used += len(line) + 2
    rest = len(relations) - len(lines)
    return "; ".join(lines) + (f"; and {rest} more (list_tables)" if rest else "")


def _column(relation: Relation, name: str) -> Column:
    """`relation`'s column `name` (SQL name or header); WindowError naming the columns."""
    try:
        return relation.column(name)
    except KeyError:
        known = [
            c.name if " / ".join(c.header) == c.name else f"{c.name} ({' / '.join(c.header)!r})"
            for c in relation.columns
        ]
        listed = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
        raise WindowError(
            f"no column {name!r} in this table: sort, where and facets take a column's SQL "
            f"name or its header: {listed}"
        ) from None


def _short(value: Any) -> Any:
    out = json_value(value)
    if isinstance(out, str) and len(out) > FACET_CHARS:
        return out[: FACET_CHARS - 1] + "…"
    return out


def _facets_text(
    counts: dict[str, list[dict[str, Any]]], selection: Selection | None, n_rows: int
) -> str:
    """The facets as lines under a markdown window (the model reads the text)."""
    if not counts:
        return ""
    among = (
        f"the {selection.total} matching rows"
        if selection and selection.where
        else f"all {n_rows} rows"
    )
    lines = [f"\n\nMost frequent values among {among} (value: count):"]
    for col, values in counts.items():
        shown = ", ".join(
            f"{json.dumps(v['value'], ensure_ascii=False)}: {v['count']}" for v in values
        )
        lines.append(f"- {col}: {shown or '(none)'}")
    return "\n".join(lines)


def _fit_rows(data: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """`data` (a SqlResult's JSON) with rows dropped from the end until its JSON text holds
    `max_chars` characters (`truncated_by`: ``max_chars``)."""
    rows = data["rows"]
    meta = {
        **data,
        "rows": [],
        "row_count": len(rows),
        "truncated": True,
        "truncated_by": "max_chars",
    }
    used = len(json.dumps(meta, ensure_ascii=False))
    keep = 0
    for row in rows:
        used += len(json.dumps(row, ensure_ascii=False)) + 2
        if used > max_chars:
            break
        keep += 1
    if keep == len(rows):
        return data
    return {
        **data,
        "rows": rows[:keep],
        "row_count": keep,
        "truncated": True,
        "truncated_by": "max_chars",
    }
