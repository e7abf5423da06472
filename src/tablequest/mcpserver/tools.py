"""The library side of the MCP tools that read: list, search and show tables, run pandas.

`TableTools` wraps one `tablequest.serve.state.ServerState` — the object behind every route
of ``tablequest serve`` — so an MCP client reads exactly what an HTTP client reads: the
same read-only store generations, table sources relative to the corpus root (never a
server path), the same search code (`tablequest.serve.api.run_search`, any registered
retriever, matched rows per hit) and the same row cap for one table request
(`Limits.max_table_rows`). Nothing a client sends is used as a path: tables are named by
their ids, which are looked up in the store.

Every method returns plain data (dicts, `Window`, `PandasRun`); `tablequest.mcpserver.server`
turns them into MCP results and every `TablequestError` / `ValueError` into a tool error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tablequest.errors import TablequestError
from tablequest.mcpserver.sandboxed import CodeRunner, PandasRun, check_names
from tablequest.mcpserver.window import Format, Window, table_window
from tablequest.serve.api import run_search
from tablequest.serve.state import ServerState
from tablequest.serve.stores import ReadStore
from tablequest.table import Table

__all__ = ["NoSuchTable", "TableTools"]


class NoSuchTable(TablequestError, ValueError):
    """A table id the store does not hold."""


class TableTools:
    """`list_tables`, `search_tables`, `get_table` and `run_pandas` over a `ServerState`."""

    def __init__(self, state: ServerState, runner: CodeRunner | None = None) -> None:
        self.state = state
        self.runner = runner or CodeRunner()

    def list_tables(self, *, filter: str | None, offset: int, limit: int) -> dict[str, Any]:
        """The stored tables in store order, those whose source or title contain `filter`
        (case-insensitive), one page of them."""
        with self.state.stores.reader() as store:
            infos = list(store.snapshot.info.values())
        if filter:
            needle = filter.lower()
            infos = [
                i for i in infos if needle in i.name.lower() or needle in (i.title or "").lower()
            ]
        page = infos[offset : offset + limit]
        return {
            "total": len(infos),
            "offset": offset,
            "next_offset": offset + limit if offset + limit < len(infos) else None,
            "tables": [
                {"table_id": i.table_id, "source": i.name, "title": i.title, "format": i.format,
                 "sheet": i.sheet, "n_rows": i.n_rows, "n_cols": i.n_cols}
                for i in page
            ],
        }  # fmt: skip

    def search_tables(self, *, question: str, k: int, method: str, encoder: str) -> dict[str, Any]:
        """The `k` best tables for `question` by retriever `method`, with matched rows
        (what ``GET /v1/search`` answers).

        Raises:
            ValueError: a blank question or an unknown retriever.
            EncoderUnavailable: the retriever's encoder needs an extra.
        """
        if not question.strip():
            raise ValueError("the question is empty")
        return run_search(self.state, question, k, method, encoder, False)

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
    ) -> tuple[Window, str]:
        """A window of one table (`table_window`) and its source name.

        Raises:
            NoSuchTable: `table_id` is not in the store.
            WindowError: a row or column the table does not have.
        """
        cap = self.state.config.limits.max_table_rows
        with self.state.stores.reader() as store:
            table, source = self._table(store, table_id)
            window = table_window(
                table, table_id, offset=offset, limit=min(limit or cap, cap), rows=rows,
                columns=columns, fmt=fmt, max_chars=max_chars,
            )  # fmt: skip
        window.data["source"] = source
        return window, source

    def run_pandas(self, code: str, tables: Mapping[str, str], timeout: float) -> PandasRun:
        """Run `code` with each table id of `tables` bound to its name (`CodeRunner.run`).

        Raises:
            NoSuchTable, BadFrameName, SandboxError: see `CodeRunner.run`.
        """
        check_names(tables)
        with self.state.stores.reader() as store:
            frames = {name: self._table(store, tid)[0] for name, tid in tables.items()}
        return self.runner.run(code, frames, timeout, ids=dict(tables))

    @staticmethod
    def _table(store: ReadStore, table_id: str) -> tuple[Table, str]:
        info = store.snapshot.info.get(table_id)
        if info is None:
            raise NoSuchTable(
                f"no table {table_id!r} in the store: list_tables and search_tables give ids"
            )
        return store.get(table_id), info.name

    def close(self) -> None:
        self.runner.close()
