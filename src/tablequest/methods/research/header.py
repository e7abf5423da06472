"""Header regions of a sheet: header rows and stub columns (DTR §3.1, header identification).

DTR §3.1 ("Bi-directional Header Identification") asks to "identify header regions along each
axis" without saying how. A reader gives a first guess (one header row from a CSV reader,
rows from merges from the xlsx reader, HiTab's layout annotation from its JSON when the file
has one); the meta graph extends a guess that stops short and infers the stub when the reader
gives none. Every rule below is our choice (the paper is silent); all read the grid alone
(merges, blank cells, numbers against labels), no LLM, no dataset-specific words. They were
chosen on HiTab's train split (benchmarks/dtr_header_paths.py).

Cells: a number followed by a word ("48 kg", "95% ci", "800 m") is a label, not a data value
(the word names what the number measures); "none", "null", "nan" and "n/a" in a header or
stub cell are blanks an exporter wrote out.

1. **Header rows** (`extend_header`). The reader's header rows, extended downward (at most
   `MAX_HEADER_ROWS`) while the next row is one more header level:
   - it continues the header's *top-left block* (its first cell is blank, repeats the label
     above it, or lies under a merge from above) and holds labels outside the first column;
     numbers there are allowed when it holds at least twice as many labels ("2pt", "+20"
     among "yds", "avg") or when they label columns: each sits under a merged cell that ends
     right above it, and within each column group they are different whole numbers (weeks
     "1", "2", "3") or rise (bar heights "1.60", "1.70");
   - or its first cell holds the stub's own name ("county" under a blank corner) and the row
     holds no number, with at least half of its labels under horizontal merges that end right
     above it (the sub-labels of merged column groups: a merged group always has some).
   A first cell with a label of its own otherwise starts the body (a row label or a section
   row), so a one-row header followed by rows of text stays one row.
2. **Stub (row-header) columns** (`stub_columns`). The table's header columns; when it has
   none, the first column is a stub when most of its body cells are text or temporal labels
   (a "Year" column is a row header), when it holds small whole numbers that mostly ascend
   (a rank or "No." column: `ordinal`), when a header of two or more rows holds one label
   only in it (over blank or merged levels, or under a blank corner), or when its header is
   blank (the empty top-left block of a cross table). With two or more header rows, the stub
   extends to each next column that is mostly text (or ordinal), is not part of a column
   group (its top label does not head the next column, unless that label is a merge of its
   own that ends at it), and whose header holds one label only (a header row that one merged
   label spans from the first column on is a section row, not a level, and is ignored).
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise

from tablequest.methods.research.markers import (
    clean_label,
    is_missing,
    parse_number,
    temporal_kind,
)
from tablequest.table import Merge, Table

__all__ = [
    "MAX_HEADER_ROWS",
    "MAX_STUB_SHARE",
    "cell_kind",
    "extend_header",
    "ordinal",
    "stub_columns",
]

MAX_HEADER_ROWS = 8
MAX_STUB_SHARE = 0.5
ORDINAL_MAX = 1000
"""Ranks and "No." columns hold numbers below this."""

_WORD_AFTER = re.compile(r"\d%?\s+[^\W\d_]+\.?$")
_PLACEHOLDERS = frozenset({"none", "null", "nan", "n/a"})


def cell_kind(text: str) -> str:
    """ "empty", "number", "missing" (placeholders), "time" or "text"."""
    s = text.strip()
    if not s:
        return "empty"
    if temporal_kind(s) is not None:
        return "time"
    if parse_number(s) is not None:
        return "number"
    if is_missing(s):
        return "missing"
    return "text"


def _kind(text: str) -> str:
    """`cell_kind`, but a number followed by a word ("48 kg", "95% ci") is a label."""
    kind = cell_kind(text)
    return "text" if kind == "number" and _WORD_AFTER.search(text.strip()) else kind


def _label(text: str) -> str:
    """The cell's label; "" for a blank cell or a placeholder an exporter wrote for one."""
    label = clean_label(text)
    return "" if label.lower() in _PLACEHOLDERS else label


# -- rule 1: header rows ----------------------------------------------------------------


def _covering(merges: list[Merge], col: int, *, across: bool = False) -> list[Merge]:
    """The merges of `merges` over column `col` (`across`: only those spanning columns)."""
    return [m for m in merges if m.left <= col <= m.right and (m.right > m.left or not across)]


def _number_labels(table: Table, row: int, cols: list[int], ending: list[Merge]) -> bool:
    """Numbers that label columns: each under a merged cell that ends right above it
    (`ending`), and per column group different whole numbers ("1", "2", "3") or rising ones
    ("1.60", "1.70")."""
    if not all(_covering(ending, c) for c in cols):
        return False
    spans = [m for m in table.merges if m.bottom < row and m.right > m.left]
    groups: dict[Merge | None, list[float]] = {}
    for c in cols:
        value = parse_number(table.cells[row][c])
        if value is None:
            return False
        group = min(_covering(spans, c), key=lambda m: m.right - m.left, default=None)
        groups.setdefault(group, []).append(value)
    for values in groups.values():
        whole = all(v == int(v) for v in values) and len(set(values)) == len(values)
        rising = all(a < b for a, b in pairwise(values))
        if not (whole or rising):
            return False
    return True


def _continues_header(table: Table, row: int) -> bool:
    """Rule 1: `row` (the grid row right under the header) is one more header row."""
    cells = table.cells[row]
    kinds = [_kind(v) for v in cells]
    labels = [c for c in range(1, len(cells)) if kinds[c] in ("text", "time")]
    numbers = [c for c in range(1, len(cells)) if kinds[c] == "number"]
    if not labels and not numbers:
        return False
    ending = [m for m in table.merges if m.bottom == row - 1]  # merges that end right above
    first = _label(cells[0])
    from_above = any(m.top < row <= m.bottom and m.left == 0 for m in table.merges)
    if not first or first == _label(table.cells[row - 1][0]) or from_above:
        few = len(labels) >= 2 * len(numbers)
        return few or _number_labels(table, row, numbers, ending)
    if numbers:
        return False
    grouped = sum(bool(_covering(ending, c, across=True)) for c in labels)
    return grouped >= max(1, len(labels) / 2)


def extend_header(table: Table) -> Table:
    """`table` with the header rows rule 1 finds after the reader's (never fewer).

    The new header rows leave the body: its `row_ids` keep naming the same grid rows. A
    table read without any header row keeps none.
    """
    if table.n_header_rows == 0:
        return table
    n = table.n_header_rows
    limit = min(MAX_HEADER_ROWS, len(table.cells) - 1)
    while n < limit and _continues_header(table, n):
        n += 1
    if n <= table.n_header_rows:
        return table
    moved = n - table.n_header_rows
    return replace(table, n_header_rows=n, row_ids=table.row_ids[moved:])


# -- rule 2: stub columns ---------------------------------------------------------------


def _column_kinds(table: Table, col: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in table.body:
        k = _kind(row[col])
        counts[k] = counts.get(k, 0) + 1
    return counts


def _texty(counts: dict[str, int]) -> bool:
    """Mostly text or temporal labels (60% of the filled cells)."""
    filled = sum(v for k, v in counts.items() if k != "empty")
    if filled == 0:
        return False
    return (counts.get("text", 0) + counts.get("time", 0)) / filled >= 0.6


def ordinal(table: Table, col: int) -> bool:
    """Small whole numbers that mostly ascend down the body: a rank or "No." column.

    At least 3 numbers, 60% of the filled cells, all whole and below `ORDINAL_MAX`, 80% of
    the steps between them upward (ties and a restart per section are allowed).
    """
    cells = [row[col] for row in table.body]
    values = [parse_number(v) for v in cells if cell_kind(v) == "number"]
    filled = sum(1 for v in cells if cell_kind(v) not in ("empty", "missing"))
    if len(values) < 3 or len(values) < 0.6 * filled:
        return False
    whole = [int(v) for v in values if v is not None and v == int(v) and 0 <= v < ORDINAL_MAX]
    if len(whole) < len(values):
        return False
    steps = [b - a for a, b in pairwise(whole)]
    return sum(d > 0 for d in steps) >= 0.8 * len(steps)


def _grouped(table: Table, col: int) -> bool:
    """True when the column's top header label also heads the next column (a column group)."""
    if table.n_header_rows == 0 or col + 1 >= table.n_cols:
        return False
    top = _label(table.cells[0][col])
    if any(m.top == 0 and m.left <= col == m.right for m in table.merges):
        return False  # its own merged label, which ends at this column
    return (
        bool(top)
        and top == clean_label(table.cells[0][col + 1])
        and (
            table.n_header_rows > 1
            and clean_label(table.cells[1][col]) != clean_label(table.cells[1][col + 1])
        )
    )


def _stub_shaped(table: Table, col: int) -> bool:
    """The column's header rows hold one label (blank, merged or repeated levels aside)."""
    if table.n_header_rows < 2:
        return False
    spanning = {  # header rows that one label spans from the first column on (a section row)
        r
        for m in table.merges
        if m.left == 0 and m.right >= col
        for r in range(m.top, m.bottom + 1)
    }
    rows = [r for r in range(table.n_header_rows) if r == 0 or r not in spanning]
    return len({_label(table.cells[r][col]) for r in rows} - {""}) == 1


def _blank_corner(table: Table, col: int) -> bool:
    """No header label above the column (the empty top-left block of a cross table)."""
    return table.n_header_rows >= 1 and not any(
        _label(table.cells[r][col]) for r in range(table.n_header_rows)
    )


def _first_stub(table: Table, kinds: dict[str, int]) -> bool:
    return _texty(kinds) or ordinal(table, 0) or _stub_shaped(table, 0) or _blank_corner(table, 0)


def stub_columns(table: Table) -> tuple[int, ...]:
    """The row-header columns of `table` (rule 2 of the module docstring)."""
    width = table.n_cols
    if width < 2 or table.n_rows == 0:
        return tuple(range(table.n_header_cols))
    limit = max(1, int(width * MAX_STUB_SHARE))
    kinds = [_column_kinds(table, c) for c in range(min(width - 1, limit + 1))]
    if table.n_header_cols:
        stub = list(range(table.n_header_cols))
    elif _first_stub(table, kinds[0]):
        stub = [0]
    else:
        return ()
    while len(stub) < limit and stub[-1] + 1 < len(kinds):
        nxt = stub[-1] + 1
        labels = _texty(kinds[nxt]) or ordinal(table, nxt)
        if not (labels and _stub_shaped(table, nxt)) or _grouped(table, nxt):
            break
        stub.append(nxt)
    return tuple(stub)
