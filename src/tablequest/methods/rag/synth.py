"""Synthetic scale data like the paper's Synthetic TabFact (TableRAG §4.6, App. C).

`expand_table` grows a table to N rows × M columns while keeping every original cell: the
original rows and columns stay (in their order, at seeded random positions among the new
ones), new columns copy the value distribution of a randomly chosen original column, and new
cells of original columns are drawn from that column's own values. `SIZES` are the paper's
100×100, 500×500 and 1000×1000.

Choices (ours; the paper generates names, samplers and verifying programs with an LM): new
column names are the source column's name with a number suffix (``points_2``), so they are
plausible distractors; values listed in `protect` (the cells a question needs, e.g. the
entity it names) are never drawn into new cells, so a lookup of a protected value finds
exactly the original rows. Aggregates over a whole column (counts, sums) may change — as in
the paper, only questions whose answer the expansion keeps should be asked of the result;
`expand_table` reports where each original row and column went so gold cells can be followed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tablequest.table import Table, unique_names

SIZES: tuple[tuple[int, int], ...] = ((100, 100), (500, 500), (1000, 1000))


@dataclass(frozen=True)
class Expanded:
    """An expanded table and where the original rows and columns went.

    Attributes:
        table: The new table (one header row; original cells unchanged).
        row_map: Original body position → new body position.
        col_map: Original column position → new column position.
    """

    table: Table
    row_map: dict[int, int]
    col_map: dict[int, int]


def _positions(total: int, keep: int, rng: np.random.Generator) -> list[int]:
    """`keep` sorted distinct positions in range(total)."""
    return sorted(int(i) for i in rng.choice(total, size=keep, replace=False))


def expand_table(
    table: Table,
    n_rows: int,
    n_cols: int,
    *,
    seed: int = 0,
    protect: Iterable[str] = (),
) -> Expanded:
    """Grow `table` to `n_rows` × `n_cols`, keeping its rows and columns (see module doc).

    Raises:
        ValueError: the target is smaller than the table, or the table has no column.
    """
    if table.n_cols == 0:
        raise ValueError("cannot expand a table without columns")
    if n_rows < table.n_rows or n_cols < table.n_cols:
        raise ValueError(
            f"target {n_rows}x{n_cols} is smaller than the table ({table.n_rows}x{table.n_cols})"
        )
    rng = np.random.default_rng(seed)
    protected = {p.strip().lower() for p in protect if p.strip()}
    body = np.array(table.body, dtype=object).reshape(table.n_rows, table.n_cols)
    row_pos = _positions(n_rows, table.n_rows, rng)
    col_pos = _positions(n_cols, table.n_cols, rng)
    source_of: list[int] = [0] * n_cols  # which original column feeds each new column
    for j, pos in enumerate(col_pos):
        source_of[pos] = j
    extra_cols = [int(c) for c in np.setdiff1d(np.arange(n_cols), col_pos)]
    for c in extra_cols:
        source_of[c] = int(rng.integers(table.n_cols))
    grid = np.empty((n_rows, n_cols), dtype=object)
    pools: dict[int, np.ndarray] = {}
    for j in range(table.n_cols):
        values = body[:, j] if table.n_rows else np.array([""], dtype=object)
        allowed = np.array([v for v in values if v.strip().lower() not in protected] or [""],
                           dtype=object)  # fmt: skip
        pools[j] = allowed
    for c in range(n_cols):
        pool = pools[source_of[c]]
        grid[:, c] = pool[rng.integers(len(pool), size=n_rows)]
    if table.n_rows:
        grid[np.ix_(row_pos, col_pos)] = body
    names = list(table.columns)
    headers = [names[source_of[c]] for c in range(n_cols)]
    for pos, name in zip(col_pos, names, strict=True):
        headers[pos] = name
    order = col_pos + extra_cols  # originals keep their names; copies get suffixes
    unique = dict(zip(order, unique_names([headers[c] for c in order]), strict=True))
    header = tuple(unique[c] for c in range(n_cols))
    cells = (header, *(tuple(str(v) for v in row) for row in grid.tolist()))
    expanded = Table(cells=cells, n_header_rows=1, title=table.title, source=table.source)
    return Expanded(
        expanded,
        row_map={i: p for i, p in enumerate(row_pos)},
        col_map={j: p for j, p in enumerate(col_pos)},
    )


def protected_values(table: Table, question: str, *, min_chars: int = 3) -> list[str]:
    """Non-numeric cell texts that occur in the question (as whole words, case-insensitive)."""
    text = " " + " ".join(question.lower().split()) + " "
    found: dict[str, None] = {}
    for row in table.body:
        for value in row:
            v = " ".join(value.lower().split())
            if len(v) < min_chars or re.fullmatch(r"[\d.,%$\s-]+", v):
                continue
            if re.search(r"(?<!\w)" + re.escape(v) + r"(?!\w)", text):
                found[value] = None
    return list(found)
