"""A table as notebook HTML and Markdown (`Table._repr_html_`, `Table._repr_markdown_`).

Choices (ours; no paper covers display):

- Cell text is untrusted (any file a user opened): every string from a table goes through
  `html.escape` (quotes too); no markup from data survives. The web app's renderers live in
  ``serve/`` (Jinja templates), which the library must not import, so the grid is rendered
  here with the HTML serializer's span logic (`tablequest.table.merges.span_map`): merged
  header cells keep their rowspan/colspan.
- What is shown is bounded whatever the table's size, since a notebook saves every repr it
  shows (issue 39: a 300k-row table made a 28.6 MB notebook): at most `MAX_ROWS` body rows
  (`window` keeps the rows asked for first, a result's evidence rows, else the first rows),
  `MAX_COLS` columns (`clip`: the row-label columns, then those asked for, then the first
  ones; "… N more columns" says how many are not shown), each cell, title and source cut at
  `MAX_CELL_CHARS` characters with "…", and rows stop where a grid's HTML would pass
  `GRID_CHARS` (escaping can make a cell six times longer; the rows left out are counted
  with the others). A table's HTML is thus under 100 KB, a 300k × 300 table's included.
- Evidence cells carry ``class="tq-evidence"`` and an inline yellow background, so the
  highlight survives notebook sanitizers that drop ``<style>``; given how each was found
  (`tablequest.table.model.EvidenceHow`), a certain cell (computed, cited) adds
  ``tq-evidence-HOW`` and a ``title``, and an uncertain one (`UNCERTAIN`: ambiguous,
  untracked, matched) is not highlighted as evidence: ``class="tq-evidence-HOW"`` and a
  dashed outline only.
- This module does not import `tablequest.table.model` (the model imports it for its
  reprs): tables are typed by the `Grid` protocol.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

from tablequest.table.merges import Merge, span_map

__all__ = ["HIGHLIGHT", "MAX_ROWS", "Grid", "esc", "grid_html", "table_html", "table_markdown"]
__all__ += ["UNCERTAIN", "UNCERTAIN_STYLE", "is_certain", "source_name", "window"]
__all__ += ["GRID_CHARS", "MAX_CELL_CHARS", "MAX_COLS", "clip", "cut", "grid_rows", "left_out"]

MAX_ROWS = 30
MAX_COLS = 20
MAX_CELL_CHARS = 200
GRID_CHARS = 80_000
"""A grid's HTML (or Markdown) stops before the row that would take it past this length."""
HIGHLIGHT = "background:#fff3a3;font-weight:600"
UNCERTAIN_STYLE = "outline:1px dashed #9a6700;outline-offset:-2px"
UNCERTAIN = frozenset({"ambiguous", "untracked", "matched"})
"""Ways of finding evidence that do not make a cell certain support of the answer: one of
several cells holding the answer's value, a cell read by code that could not be traced, or a
cell found by the answer's value among those the method read (it may only coincide, so it
never verifies the answer either: `methods.evidence.verify_cells`)."""


def is_certain(how: str) -> bool:
    """Whether an evidence cell found this way is shown as certain evidence (highlighted)."""
    return how not in UNCERTAIN


class _Source(Protocol):
    @property
    def path(self) -> str | None: ...
    @property
    def sheet(self) -> str | None: ...


class Grid(Protocol):
    """What rendering reads of a `tablequest.table.Table`."""

    @property
    def cells(self) -> tuple[tuple[str, ...], ...]: ...
    @property
    def n_header_rows(self) -> int: ...
    @property
    def n_header_cols(self) -> int: ...
    @property
    def merges(self) -> tuple[Merge, ...]: ...
    @property
    def title(self) -> str | None: ...
    @property
    def source(self) -> _Source: ...
    @property
    def row_ids(self) -> tuple[int, ...]: ...
    @property
    def col_ids(self) -> tuple[int, ...]: ...
    @property
    def n_rows(self) -> int: ...
    @property
    def n_cols(self) -> int: ...
    @property
    def columns(self) -> tuple[str, ...]: ...
    @property
    def body(self) -> tuple[tuple[str, ...], ...]: ...
    def sub_table(
        self, rows: Sequence[int] | None = None, cols: Sequence[int] | None = None
    ) -> Grid: ...


def esc(value: object) -> str:
    """HTML-escaped text (quotes too), line breaks as ``<br>``."""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    return html.escape(text, quote=True).replace("\n", "<br>")


def cut(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """`text` cut at `limit` characters, "…" marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rows(table: Grid, wanted: Sequence[int]) -> list[int] | None:
    """The body row ids to show (None: all): `wanted` first, else the first MAX_ROWS."""
    if table.n_rows <= MAX_ROWS:
        return None
    known = set(table.row_ids)
    ids = [r for r in dict.fromkeys(wanted) if r in known][:MAX_ROWS]
    return ids or list(table.row_ids[:MAX_ROWS])


def _cols(table: Grid, wanted: Sequence[int]) -> list[int] | None:
    """The column ids to show (None: all): the row-label columns (the header columns, else
    the first), then `wanted`, then the first ones, MAX_COLS at most."""
    if table.n_cols <= MAX_COLS:
        return None
    known = set(table.col_ids)
    labels = table.col_ids[: max(1, table.n_header_cols)]
    chosen = [*labels, *(c for c in wanted if c in known), *table.col_ids[: 2 * MAX_COLS]]
    return list(dict.fromkeys(chosen))[:MAX_COLS]


def clip(table: Grid, rows: Sequence[int] = (), cols: Sequence[int] = ()) -> tuple[Grid, int, int]:
    """The table cut to at most MAX_ROWS body rows and MAX_COLS columns (the row and column
    ids asked for first), with the numbers of rows and of columns left out."""
    row_ids, col_ids = _rows(table, rows), _cols(table, cols)
    if row_ids is None and col_ids is None:
        return table, 0, 0
    shown = table.sub_table(rows=row_ids, cols=col_ids)
    return shown, table.n_rows - shown.n_rows, table.n_cols - shown.n_cols


def window(table: Grid, wanted: Sequence[int]) -> tuple[Grid, int]:
    """The table cut to at most MAX_ROWS body rows (`wanted` row ids first), rows left out."""
    ids = _rows(table, wanted)
    if ids is None:
        return table, 0
    return table.sub_table(rows=ids), table.n_rows - len(ids)


def _mark(how: str | None) -> str:
    """The attributes of an evidence cell found `how` ("" when not said; None: not one)."""
    if how is None:
        return ""
    if not how:
        return f' class="tq-evidence" style="{HIGHLIGHT}"'
    name = esc(how)
    if is_certain(how):
        return f' class="tq-evidence tq-evidence-{name}" title="{name}" style="{HIGHLIGHT}"'
    return f' class="tq-evidence-{name}" title="{name}: not certain" style="{UNCERTAIN_STYLE}"'


def _cell(table: Grid, r: int, c: int, span: tuple[int, int], how: str | None) -> str:
    body = r >= table.n_header_rows
    tag = "td" if body and c >= table.n_header_cols else "th"
    rs, cs = span
    attrs = (f' rowspan="{rs}"' if rs > 1 else "") + (f' colspan="{cs}"' if cs > 1 else "")
    return f"<{tag}{attrs}{_mark(how)}>{esc(cut(table.cells[r][c]))}</{tag}>"


def _how(hows: Mapping[tuple[int, int], str], row_id: int | None, col_id: int) -> str | None:
    return None if row_id is None else hows.get((row_id, col_id))


def grid_rows(
    table: Grid,
    marked: Mapping[tuple[int, int], str] | AbstractSet[tuple[int, int]],
    budget: int = GRID_CHARS,
) -> tuple[str, int]:
    """`table` as an HTML grid, every cell cut at MAX_CELL_CHARS, and the body rows left
    out: rows stop before the one that would take the HTML past `budget` characters.
    `marked` holds (row id, column id) of evidence cells, as a set (highlighted) or mapped
    to how each was found (`_mark`: uncertain ones outlined)."""
    hows = marked if isinstance(marked, Mapping) else dict.fromkeys(marked, "")
    starts, covered = span_map(table.merges, table.n_header_rows)
    h = table.n_header_rows
    caption = f"<caption>{esc(cut(table.title))}</caption>" if table.title else ""
    size = len(caption) + 64  # the table's own tags
    head: list[str] = []
    body: list[str] = []
    for r, row in enumerate(table.cells):
        row_id = table.row_ids[r - h] if r >= h else None
        line = "<tr>" + "".join(
            _cell(table, r, c, starts.get((r, c), (1, 1)), _how(hows, row_id, table.col_ids[c]))
            for c in range(len(row))
            if (r, c) not in covered
        ) + "</tr>"  # fmt: skip
        if size + len(line) > budget:
            break
        size += len(line)
        (head if r < h else body).append(line)
    out = ['<table class="tq-table">', caption]
    if head:
        out += ["<thead>", *head, "</thead>"]
    if body:
        out += ["<tbody>", *body, "</tbody>"]
    out.append("</table>")
    return "".join(out), table.n_rows - len(body)


def grid_html(
    table: Grid, marked: Mapping[tuple[int, int], str] | AbstractSet[tuple[int, int]]
) -> str:
    """`table` as an HTML grid (`grid_rows`, without the count of rows left out)."""
    return grid_rows(table, marked)[0]


def left_out(rows: int, cols: int) -> str:
    """``… 12 more rows, 280 more columns`` (nothing when nothing is left out)."""
    parts = [f"{n} more {name}" for n, name in ((rows, "rows"), (cols, "columns")) if n]
    return "… " + ", ".join(parts) if parts else ""


def source_name(table: Grid) -> str:
    name = cut(table.source.path or "table")
    return f"{name}#{cut(table.source.sheet)}" if table.source.sheet else name


def table_html(table: Grid) -> str:
    """The table with its merged headers, bounded (module doc), every cell escaped."""
    shown, rows, cols = clip(table)
    grid, dropped = grid_rows(shown, set())
    more = left_out(rows + dropped, cols)
    note = f"<br><small>{more}</small>" if more else ""
    shape = f"{table.n_rows} rows x {table.n_cols} columns"
    head = f"<small>{esc(source_name(table))} · {shape}</small>"
    return f"<div>{head}{grid}{note}</div>"


def _md_line(cells: Sequence[str]) -> str:
    clean = (cut(c).replace("\r", "").replace("|", "\\|").replace("\n", "<br>") for c in cells)
    return "| " + " | ".join(clean) + " |"


def table_markdown(table: Grid) -> str:
    """The table as a Markdown grid (flat header paths), bounded as the HTML is."""
    shown, rows, cols = clip(table)
    lines = [_md_line(shown.columns), "| " + " | ".join(["---"] * shown.n_cols) + " |"]
    size = sum(len(line) + 1 for line in lines)
    body = 0
    for row in shown.body:
        line = _md_line(row)
        if size + len(line) + 1 > GRID_CHARS:
            break
        size += len(line) + 1
        lines.append(line)
        body += 1
    more = left_out(rows + shown.n_rows - body, cols)
    return "\n".join(lines) + (f"\n\n{more}" if more else "")
