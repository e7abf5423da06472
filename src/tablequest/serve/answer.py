"""The answer card of an ask: what people read first.

`answer_context` turns a `Result` into what ``ask_result.html`` shows, in this order: the
status and answer (and, when it did not answer, `Result.reason`: one line naming the cause),
whether the answer is verified against its evidence (`Result.verified` as a badge, with
`Result.verification`'s line), the evidence cells named by their column (the header path,
"Size / Depth m") and their row (the row header, else the first column's value, else
"row N"), each saying how it was found (`HOW_WORDS`), the tables by name, the
routes ``auto`` took, then (without a model) the tables the LLM-free search found, shown as
the CLI shows them: ranked, with their score and name, the rows the question's words match
(marked) — as rendered tables rather than the CLI's text previews — and last the tables with
the evidence highlighted.

Every text here is plain and reaches the page through Jinja's escaping (table content is
untrusted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tablequest.corpus import all_matched_rows, question_patterns
from tablequest.methods import Result
from tablequest.serve.tables import TableView, table_view
from tablequest.service import ServerState, matched_rows_fast, short_name
from tablequest.table import Table

__all__ = ["HOW_WORDS", "EvidenceLine", "answer_context", "cell_names", "short_name"]

HOW_WORDS = {
    "computed": "computed: the code's result came from it",
    "cited": "cited by the model",
    "matched": "matched: it holds the answer's value",
    "ambiguous": "ambiguous: one of several cells holding the answer's value",
    "untracked": "untracked: read by code that could not be traced",
}
"""How an evidence cell was found, as the card's evidence list says it (`CellRef.how`)."""
MAX_EVIDENCE_LINES = 50
"""Evidence cells the card lists by name (a computed mean may have thousands); the rest are
counted, and the API's result lists them all."""


@dataclass(frozen=True)
class EvidenceLine:
    """One evidence cell as people name it, and how it was found (`CellRef.how`)."""

    table_id: str
    table: str
    column: str
    row: str
    value: str
    how: str = "matched"

    @property
    def how_words(self) -> str:
        return HOW_WORDS.get(self.how, self.how)


@dataclass(frozen=True)
class TableRef:
    """A table the method consulted: its id, short name, full source and title."""

    table_id: str
    name: str
    source: str
    title: str | None


def cell_names(table: Table, row_id: int, col_id: int) -> tuple[str, str]:
    """(column name, row label) of a body cell, by ids (see the module doc)."""
    col = table.col_ids.index(col_id) if col_id in table.col_ids else None
    column = table.columns[col] if col is not None else f"column {col_id}"
    if row_id not in table.row_ids:
        return column, f"row {row_id}"
    pos = table.row_ids.index(row_id)
    if table.n_header_cols and col is not None and col >= table.n_header_cols:
        label = " / ".join(table.row_header_path(pos))
        if label:
            return column, label
    first = table.body[pos][0].strip() if table.n_cols else ""
    if first and col not in (None, 0):
        return column, first
    return column, f"row {row_id}"


def _table(state: ServerState, result: Result, table_id: str) -> Table | None:
    table = result.tables.get(table_id)
    if table is not None:
        return table
    with state.stores.reader() as store:
        try:
            return store.get(table_id)
        except KeyError:
            return None


def _evidence(state: ServerState, result: Result) -> list[EvidenceLine]:
    lines = []
    for cell in result.evidence[:MAX_EVIDENCE_LINES]:
        table = _table(state, result, cell.table_id)
        column, row = (
            cell_names(table, cell.row, cell.col)
            if table is not None
            else (f"column {cell.col}", f"row {cell.row}")
        )
        name = short_name(result.sources.get(cell.table_id, cell.table_id))
        lines.append(EvidenceLine(cell.table_id, name, column, row, cell.value, cell.how))
    return lines


def _tables(state: ServerState, result: Result) -> list[TableRef]:
    ids = [*([result.final_table] if result.final_table else []), *result.tables_consulted]
    with state.stores.reader() as store:
        info = store.snapshot.info
        refs = []
        for tid in dict.fromkeys(ids):
            source = result.sources.get(tid) or (info[tid].name if tid in info else tid)
            title = info[tid].title if tid in info else None
            refs.append(TableRef(tid, short_name(source), source, title))
    return refs


def _candidates(
    state: ServerState, question: str, result: Result
) -> list[tuple[dict[str, Any], TableView]]:
    raw = result.typed_details.get("candidates") or []
    patterns = question_patterns(question)
    out = []
    with state.stores.reader() as store:
        for item in raw if isinstance(raw, list) else []:
            tid = str(item.get("table_id", ""))
            try:
                table = store.get(tid)
            except KeyError:
                continue
            matched = [int(r) for r in item.get("matched_rows") or []] or all_matched_rows(
                matched_rows_fast(store, tid, patterns)
            )
            rows = matched[:10] or list(table.row_ids[:5])
            view = table_view(table, tid, rows=rows, limit=10, matched=matched, patterns=patterns)
            source = result.sources.get(tid) or store.snapshot.info[tid].name
            hit = {"table_id": tid, "score": float(item.get("score") or 0), "source": source,
                   "name": short_name(source), "matched": len(matched)}  # fmt: skip
            out.append((hit, view))
    return out


def _routes(result: Result) -> list[dict[str, str]]:
    raw = result.typed_details.get("routes") or []
    routes = []
    for route in raw if isinstance(raw, list) else []:
        tid = str(route.get("table_id", ""))
        routes.append(
            {"table": short_name(result.sources.get(tid, tid)), "method": str(route.get("method")),
             "why": str(route.get("reason") or ""), "status": str(route.get("status") or "")}
        )  # fmt: skip
    return routes


def answer_context(state: ServerState, question: str, result: Result) -> dict[str, Any]:
    """What the answer card shows (see the module doc), for ``ask_result.html``."""
    return {
        "question": question,
        "evidence_lines": _evidence(state, result),
        "evidence_more": max(0, len(result.evidence) - MAX_EVIDENCE_LINES),
        "table_refs": _tables(state, result),
        "candidates": _candidates(state, question, result),
        "routes": _routes(result),
    }
