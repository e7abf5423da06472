"""Table-prompting baselines of TableRAG (arXiv:2410.04739) §4.2, all with the same PyReAct solver.

- ReadTable: the whole table in the prompt. As in the official code, a table of more than
  ``context_tokens / 3`` cells (3 tokens a cell) is refused before any prompt is built, and a
  prompt over the budget is refused too: the run ends with status "failed" and the reason.
- ReadSchema: column names and dtypes only, as ``df.info(verbose=True)`` prints them.
- RandRowSampling: K random rows (paper K = 30; seeded), in table order.
- RowColRetrieval (Sui et al., TAP4LM): the table is truncated to B / (2M) rows so that at
  most B cells are encoded; rows (cells joined by "|") and columns (their cells joined by
  "|", no header, as in the official code) are encoded; the top-K rows and top-K columns by
  similarity to the question form the sub-table shown.

Tables are rendered as Markdown by the project serializer (cell text as read; the official
code renders the dtype-converted frame with ``to_markdown``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tablequest.corpus import Encoder, Store
from tablequest.methods.rag.retrieval import (
    RetrievalKind,
    build_retriever,
    cache_key,
    multi_query_retrieve,
)
from tablequest.table import Table, serialize

TOKENS_PER_CELL = 3


@dataclass
class BaselineContext:
    """The table information a baseline puts in the prompt, or why it cannot."""

    text: str | None
    reason: str | None = None
    rows: list[int] = field(default_factory=list)  # body positions shown
    columns: list[str] = field(default_factory=list)  # column names shown
    details: dict[str, Any] = field(default_factory=dict)


def too_large(n_cells: int, context_tokens: int) -> str | None:
    """The official size gate: 3 tokens per cell must fit the context budget."""
    estimate = TOKENS_PER_CELL * n_cells
    if estimate > context_tokens:
        return (
            f"the table has {n_cells} cells (~{estimate} tokens at {TOKENS_PER_CELL} a "
            f"cell), over the context budget of {context_tokens} tokens"
        )
    return None


def read_table(table: Table, *, context_tokens: int) -> BaselineContext:
    """ReadTable: the whole table, or a refusal when it cannot fit."""
    reason = too_large(table.n_rows * table.n_cols, context_tokens)
    if reason is not None:
        return BaselineContext(None, reason)
    return BaselineContext(
        serialize(table, "markdown"), rows=list(range(table.n_rows)), columns=list(table.columns)
    )


def read_schema(frame: pd.DataFrame) -> BaselineContext:
    """ReadSchema: ``df.info(verbose=True)`` of the typed frame (names and dtypes)."""
    buffer = io.StringIO()
    frame.info(verbose=True, buf=buffer, show_counts=False, memory_usage=False)
    return BaselineContext(buffer.getvalue().strip(), columns=[str(c) for c in frame.columns])


def sample_rows(n_rows: int, k: int, seed: int) -> list[int]:
    """K distinct body positions, uniformly at random (seeded), in table order."""
    if n_rows <= k:
        return list(range(n_rows))
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n_rows, size=k, replace=False))


def rand_rows(table: Table, *, k: int, seed: int, context_tokens: int) -> BaselineContext:
    """RandRowSampling: K random rows (all rows when the table has at most K)."""
    reason = too_large(min(k, table.n_rows) * table.n_cols, context_tokens)
    if reason is not None:
        return BaselineContext(None, reason)
    rows = sample_rows(table.n_rows, k, seed)
    sub = table.sub_table(rows=[table.row_ids[i] for i in rows])
    return BaselineContext(serialize(sub, "markdown"), rows=rows, columns=list(table.columns))


def row_col_docs(table: Table, budget: int) -> tuple[int, list[str], list[str]]:
    """(rows kept = max(1, B // 2 // M), row texts, column texts) of the truncated table."""
    n_keep = min(table.n_rows, max(1, budget // 2 // max(1, table.n_cols)))
    body = table.body[:n_keep]
    rows = ["|".join(row) for row in body]
    columns = ["|".join(col) for col in zip(*body, strict=True)] if body else []
    return n_keep, rows, columns


def rowcol(
    table: Table,
    question: str,
    *,
    k: int,
    budget: int,
    kind: RetrievalKind,
    encoder: Encoder | None,
    store: Store | None,
    content_hash: str,
    weight: float = 0.5,
) -> BaselineContext:
    """RowColRetrieval: top-K rows and top-K columns of the truncated table for the question."""
    n_keep, row_texts, col_texts = row_col_docs(table, budget)
    row_index, row_hit = build_retriever(
        kind,
        row_texts,
        encoder=encoder,
        store=store,
        weight=weight,
        key=cache_key("row", budget, content_hash),
    )
    col_index, col_hit = build_retriever(
        kind,
        col_texts,
        encoder=encoder,
        store=store,
        weight=weight,
        key=cache_key("column", budget, content_hash),
    )
    rows = sorted(r.index for r in multi_query_retrieve(row_index, [question], k))
    cols = sorted(r.index for r in multi_query_retrieve(col_index, [question], k))
    names = list(table.columns)
    details = {"rows_encoded": n_keep, "cache_hits": {"row": row_hit, "column": col_hit}}
    if not rows or not cols:
        return BaselineContext(
            "(no rows or columns retrieved)",
            rows=rows,
            columns=[names[c] for c in cols],
            details=details,
        )
    sub = table.sub_table(
        rows=[table.row_ids[i] for i in rows], cols=[table.col_ids[c] for c in cols]
    )
    return BaselineContext(
        serialize(sub, "markdown"), rows=rows, columns=[names[c] for c in cols], details=details
    )


def shown_cells(table: Table, rows: Sequence[int], columns: Sequence[str]) -> set[tuple[str, str]]:
    """The distinct (column, value) pairs of a row/column selection (for retrieval metrics)."""
    names = list(table.columns)
    wanted = {names.index(c) for c in columns if c in names}
    out: set[tuple[str, str]] = set()
    for r in rows:
        row = table.body[r]
        for j in wanted:
            if row[j].strip():
                out.add((names[j], row[j]))
    return out
