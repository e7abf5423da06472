"""A table as notebook HTML and Markdown (`Table._repr_html_`, `Table._repr_markdown_`).

Choices (ours; no paper covers display):

- Cell text is untrusted (any file a user opened): every string from a table goes through
  `html.escape` (quotes too); no markup from data survives. The web app's renderers live in
  ``serve/`` (Jinja templates), which the library must not import, so the grid is rendered
  here with the HTML serializer's span logic (`tablequest.table.merges.span_map`): merged
  header cells keep their rowspan/colspan.
- At most `MAX_ROWS` body rows are shown (a notebook is not a spreadsheet); `window` keeps
  the rows asked for first (a result's evidence rows), else the first rows.
- Evidence cells carry ``class="tq-evidence"`` and an inline yellow background, so the
  highlight survives notebook sanitizers that drop ``<style>``; given how each was found
  (`tablequest.table.model.EvidenceHow`), a certain cell (computed, cited, matched) adds
  ``tq-evidence-HOW`` and a ``title``, and an uncertain one (`UNCERTAIN`: ambiguous, untracked)
  is not highlighted as evidence: ``class="tq-evidence-HOW"`` and a dashed outline only.
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

MAX_ROWS = 30
HIGHLIGHT = "background:#fff3a3;font-weight:600"
UNCERTAIN_STYLE = "outline:1px dashed #9a6700;outline-offset:-2px"
UNCERTAIN = frozenset({"ambiguous", "untracked"})
"""Ways of finding evidence that do not make a cell certain support of the answer: one of
several cells holding the answer's value, or a cell read by code that could not be traced."""


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


def window(table: Grid, wanted: Sequence[int]) -> tuple[Grid, int]:
    """The table cut to at most MAX_ROWS body rows (`wanted` row ids first), rows left out."""
    if table.n_rows <= MAX_ROWS:
        return table, 0
    known = set(table.row_ids)
    ids = [r for r in dict.fromkeys(wanted) if r in known][:MAX_ROWS]
    if not ids:
        ids = list(table.row_ids[:MAX_ROWS])
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
    return f"<{tag}{attrs}{_mark(how)}>{esc(table.cells[r][c])}</{tag}>"


def _how(hows: Mapping[tuple[int, int], str], row_id: int | None, col_id: int) -> str | None:
    return None if row_id is None else hows.get((row_id, col_id))


def grid_html(
    table: Grid, marked: Mapping[tuple[int, int], str] | AbstractSet[tuple[int, int]]
) -> str:
    """`table` as an HTML grid; `marked` holds (row id, column id) of evidence cells, as a
    set (highlighted) or mapped to how each was found (`_mark`: uncertain ones outlined)."""
    hows = marked if isinstance(marked, Mapping) else dict.fromkeys(marked, "")
    starts, covered = span_map(table.merges, table.n_header_rows)
    h = table.n_header_rows
    out = ['<table class="tq-table">']
    if table.title:
        out.append(f"<caption>{esc(table.title)}</caption>")
    for r, row in enumerate(table.cells):
        if r == 0 and h:
            out.append("<thead>")
        if r == h:
            out.append("<tbody>")
        row_id = table.row_ids[r - h] if r >= h else None
        out.append("<tr>")
        out += [
            _cell(table, r, c, starts.get((r, c), (1, 1)), _how(hows, row_id, table.col_ids[c]))
            for c in range(len(row))
            if (r, c) not in covered
        ]
        out.append("</tr>")
        if r == h - 1:
            out.append("</thead>")
    if table.n_rows:
        out.append("</tbody>")
    out.append("</table>")
    return "".join(out)


def source_name(table: Grid) -> str:
    name = table.source.path or "table"
    return f"{name}#{table.source.sheet}" if table.source.sheet else name


def table_html(table: Grid) -> str:
    """The table with its merged headers, at most MAX_ROWS body rows, every cell escaped."""
    shown, left = window(table, [])
    note = f"<br><small>… {left} more rows</small>" if left else ""
    shape = f"{table.n_rows} rows x {table.n_cols} columns"
    head = f"<small>{esc(source_name(table))} · {shape}</small>"
    return f"<div>{head}{grid_html(shown, set())}{note}</div>"


def _md_line(cells: Sequence[str]) -> str:
    clean = (c.replace("\r", "").replace("|", "\\|").replace("\n", "<br>") for c in cells)
    return "| " + " | ".join(clean) + " |"


def table_markdown(table: Grid) -> str:
    """The table as a Markdown grid (flat header paths), at most MAX_ROWS body rows."""
    shown, left = window(table, [])
    lines = [_md_line(shown.columns), "| " + " | ".join(["---"] * shown.n_cols) + " |"]
    lines += [_md_line(row) for row in shown.body]
    return "\n".join(lines) + (f"\n\n… {left} more rows" if left else "")
