"""TableSeek's structure-preserving preview (TableSeek paper §3.2, App. C, Table 7).

A candidate is shown as its head, the table serialized in its own format and cut at
`head_chars` (paper: preview_chars = 800), followed by the rows matched by the current grep
patterns: at most `rows_per_pattern` per pattern (max_rows_per_pattern = 1) and `max_rows` in
all (max_matched_rows = 5), each cut at `line_chars` (max_line_chars = 400). `match_only`
drops the head (the paper's "match-only" ablation, Table 6).

Choices (ours, the paper is silent):
- A cut head ends with "…"; so does a cut row line.
- Patterns are matched case-insensitively against a row's cells joined by " | ", so format
  markup (`<td>`, quotes) never matches. Matching is bounded (`patterns.bounded`): a pattern
  that runs past its time budget shows no rows and is listed in `Preview.dropped`.
- A cell is shown and matched up to `INDEX_CELL_CHARS` characters, as the search indexes
  read it (`table.indexcap`): one 20 MB cell no longer costs a 20 MB render and match.
- Rows already fully visible in the head are skipped and do not count against the limits.
  A row matched by several patterns is shown once and listed under each of them.
- Matched rows appear in table order under a `[MATCHED ROWS]` line, each prefixed by
  `[ROW id]` (original row ids, so sub-tables keep their coordinates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tablequest.table.indexcap import index_cells
from tablequest.table.model import Table
from tablequest.table.patterns import (
    PATTERN_BUDGET,
    DroppedPattern,
    PatternBudget,
    PatternDropped,
    bounded,
)
from tablequest.table.serialize import SerialFormat, render, row_line

__all__ = ["ELLIPSIS", "Preview", "preview"]

ELLIPSIS = "…"
MATCHED_HEADER = "[MATCHED ROWS]"


@dataclass(frozen=True)
class Preview:
    """A preview's text, the row ids shown per pattern, the rows the head shows fully, and
    the patterns dropped for running past their time budget."""

    text: str
    matched_rows: dict[str, list[int]] = field(default_factory=dict)
    head_rows: tuple[int, ...] = ()
    dropped: tuple[DroppedPattern, ...] = ()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit)] + ELLIPSIS


def preview(
    table: Table,
    patterns: Sequence[str],
    *,
    fmt: SerialFormat = "markdown",
    head_chars: int = 800,
    max_rows: int = 5,
    rows_per_pattern: int = 1,
    line_chars: int = 400,
    match_only: bool = False,
    pattern_budget: float = PATTERN_BUDGET,
) -> Preview:
    """Build TableSeek's preview of `table` for `patterns` (see the module docstring).

    `pattern_budget`: seconds each pattern may spend in the backtracking regex fallback.
    Each cell is read up to `INDEX_CELL_CHARS` (`table.indexcap`), as search reads it.
    """
    table = index_cells(table)
    rendered = render(table, fmt)
    head = ""
    inside: set[int] = set()
    if not match_only:
        full = rendered.text
        head = _cut(full, head_chars)
        if len(full) <= head_chars:
            inside = set(range(table.n_rows))
        else:
            inside = {i for i, end in enumerate(rendered.row_ends()) if end <= head_chars}
    joined = [" | ".join(row) for row in table.body]
    shown: set[int] = set()
    matched: dict[str, list[int]] = {}
    dropped: list[DroppedPattern] = []
    for pattern in dict.fromkeys(patterns):
        try:
            clock = PatternBudget(pattern_budget)
            limits = (rows_per_pattern, max_rows)
            hits, shown = _pattern_rows(pattern, clock, joined, inside, shown, limits)
        except PatternDropped as exc:
            dropped.append(exc.record)
            continue
        matched[pattern] = [table.row_ids[p] for p in hits]
    lines = []
    for pos in sorted(shown):
        line = _cut(row_line(table, pos, fmt), line_chars)
        lines.append(f"[ROW {table.row_ids[pos]}] {line}")
    parts = [head] if head else []
    if lines:
        parts += ([MATCHED_HEADER] if head else []) + lines
    head_rows = tuple(table.row_ids[p] for p in sorted(inside))
    return Preview(
        text="\n".join(parts), matched_rows=matched, head_rows=head_rows, dropped=tuple(dropped)
    )


def _pattern_rows(
    pattern: str,
    clock: PatternBudget,
    joined: list[str],
    inside: set[int],
    shown: set[int],
    limits: tuple[int, int],
) -> tuple[list[int], set[int]]:
    """Positions `pattern` shows and the shown set after it (unchanged if it is dropped);
    `limits` is (rows per pattern, rows in all)."""
    matcher = bounded(pattern)
    rows_per_pattern, max_rows = limits
    taken = set(shown)
    hits: list[int] = []
    for pos, text in enumerate(joined):
        if len(hits) >= rows_per_pattern:
            break
        if pos in inside or not matcher.search(text, clock):
            continue
        if pos not in taken:
            if len(taken) >= max_rows:
                continue
            taken.add(pos)
        hits.append(pos)
    return hits, taken
