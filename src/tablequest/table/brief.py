"""A table's `repr`: bounded whatever its size (issue 39: a 100k-row table's repr was 9.4 MB).

``<Table 'Title' 100000 rows x 3 cols, csv a.csv>`` then the header rows and the first
`REPR_ROWS` body rows, each row cut at `REPR_COLS` columns and each cell at `REPR_CELL`
characters, and a last line saying how many rows and columns are not shown. The title, the
source and every cell are cut, so the whole stays under `REPR_MAX` characters (asserted by
tests/table/test_table_repr.py for a huge table and a huge cell).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["REPR_MAX", "table_repr"]

REPR_ROWS = 5
REPR_COLS = 12
REPR_CELL = 40
REPR_HEADER_ROWS = 3
REPR_MAX = 10_000


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text[: limit * 2].split())  # a 1 MB cell is not split whole
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _row(cells: tuple[str, ...]) -> str:
    shown = [repr(_cut(c, REPR_CELL)) for c in cells[:REPR_COLS]]
    more = ", …" if len(cells) > REPR_COLS else ""
    return "  [" + ", ".join(shown) + more + "]"


def table_repr(
    cells: Sequence[tuple[str, ...]],
    n_header_rows: int,
    n_cols: int,
    *,
    title: str | None,
    source: tuple[str | None, str | None],
) -> str:
    """The bounded repr of a table (module doc): its cells, header rows, width, title and
    source (format, path); `Table.__repr__` passes them (this module imports no model)."""
    n_rows = len(cells) - n_header_rows
    fmt, path = source
    shown_title = f" {_cut(title, 80)!r}" if title else ""
    where = " ".join(p for p in (fmt or "", _cut(path or "", 80)) if p)
    head = f"<Table{shown_title} {n_rows} rows x {n_cols} cols" + (f", {where}>" if where else ">")
    header = cells[: min(n_header_rows, REPR_HEADER_ROWS)]
    body = cells[n_header_rows : n_header_rows + REPR_ROWS]
    lines = [head, *(_row(r) for r in header)]
    if header and body:
        lines.append("  ---")
    lines += [_row(r) for r in body]
    left_rows = n_rows - len(body)
    left_cols = max(0, n_cols - REPR_COLS)
    if left_rows or left_cols:
        lines.append(f"  … {left_rows} more rows, {left_cols} more cols")
    return "\n".join(lines)[:REPR_MAX]
