"""Tables as the web pages and the API show them: header structure, spans, highlights.

`table_view` turns a `Table` (or a window of its rows) into rows of cells with their real
structure: one header row per header level, merged ranges as rowspan/colspan (a merge crossing
the header/body boundary is cut at it, as the HTML serializer does), row ids in a gutter, and
classes for evidence cells, matched rows, the question's words, numbers (``num``: a body
cell that is one number, right-aligned) and prose (``long``: `LONG_TEXT`). An evidence cell
is ``evidence`` and, when how it was found is given, ``evidence-HOW`` (`CellRef.how`); an
ambiguous, untracked or matched one is not certain evidence (`tablequest.table.display.is_certain`):
``evidence-HOW evidence-uncertain``, without ``evidence``, so it is outlined rather than
highlighted. Templates render it; every
text goes through Jinja's escaping. A view is bounded: at most `MAX_COLS` columns and
`MAX_CELLS` body cells (fewer rows for wide tables), and its spans come from the merges of
that window only (`Table.sub_table` selects them vectorised), so a page costs the cells it
shows, whatever the table's size or merges. The API's `structure` likewise returns only the
merges meeting its rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from tablequest.table import EvidenceHow, Table, compile_pattern, is_certain, span_map

if TYPE_CHECKING:
    from tablequest.corpus import Store

__all__ = ["CellView", "RowView", "TableView", "table_view"]

MAX_COLS = 100
"""Columns a table view shows at most (the first ones); the page says how many there are."""
MAX_CELLS = 15_000
"""Body cells a table view shows at most: fewer rows for wide tables. Building and rendering
a view costs about 10-25 µs a cell, so a page stays well under half a second."""
API_CELLS = 200_000
"""Body cells one API answer (`structure`) holds at most: fewer rows for wide tables."""
NUMBER = re.compile(r"^[-+−(]?[$€£¥]?\s?\d[\d,.' \u00a0\u202f]*(?:[eE][-+]?\d+)?\s?[%‰)]?$")
"""One number as tables write it: signs, currency, thousands separators, decimals, percent."""
LONG_TEXT = 30
"""A cell of prose (longer, with spaces) is ``long``: it keeps a paragraph's width, so a wide
table does not squeeze it to a word a line (cells wrap at spaces only)."""


@dataclass
class CellView:
    """One rendered cell: tag, spans, CSS classes and text split into marked parts."""

    tag: str
    text: str
    rowspan: int = 1
    colspan: int = 1
    classes: list[str] = field(default_factory=list)
    parts: list[tuple[str, bool]] = field(default_factory=list)
    col_id: int | None = None


@dataclass
class RowView:
    """One rendered row: its original id (None for header rows) and cells."""

    row_id: int | None
    cells: list[CellView]
    classes: list[str] = field(default_factory=list)


@dataclass
class TableView:
    """A table ready for the template."""

    table_id: str
    title: str | None
    header: list[RowView]
    body: list[RowView]
    n_rows: int
    n_cols: int
    shown_rows: int
    shown_cols: int = 0

    @property
    def truncated(self) -> bool:
        return self.shown_rows < self.n_rows

    @property
    def truncated_cols(self) -> bool:
        return self.shown_cols < self.n_cols


def mark(text: str, patterns: Sequence[re.Pattern[str]]) -> list[tuple[str, bool]]:
    """`text` split into (part, matched) pieces for the patterns' matches."""
    hits: list[tuple[int, int]] = []
    for rx in patterns:
        hits += [(m.start(), m.end()) for m in rx.finditer(text) if m.end() > m.start()]
    if not hits:
        return [(text, False)]
    hits.sort()
    parts: list[tuple[str, bool]] = []
    pos = 0
    for start, end in hits:
        if end <= pos:
            continue
        start = max(start, pos)
        if start > pos:
            parts.append((text[pos:start], False))
        parts.append((text[start:end], True))
        pos = end
    if pos < len(text):
        parts.append((text[pos:], False))
    return parts


def _window(table: Table, rows: Iterable[int] | None, limit: int) -> Table:
    """At most `limit` body rows (those in `rows`, or the first ones) and `MAX_COLS` columns,
    within `MAX_CELLS` body cells; spans are then computed on this window only."""
    cols = list(table.col_ids[:MAX_COLS]) if table.n_cols > MAX_COLS else None
    limit = max(1, min(limit, MAX_CELLS // max(1, min(table.n_cols, MAX_COLS))))
    if rows is None:
        if table.n_rows <= limit and cols is None:
            return table
        return table.sub_table(rows=list(table.row_ids[:limit]), cols=cols)
    known = set(table.row_ids)
    wanted = sorted({r for r in rows if r in known})[:limit]
    return table.sub_table(rows=wanted, cols=cols)


HOWS = frozenset(get_args(EvidenceHow))


def _evidence_classes(how: str) -> list[str]:
    """An evidence cell's classes by how it was found ("" when not said; module doc)."""
    if how not in HOWS:
        return ["evidence"]
    if is_certain(how):
        return ["evidence", f"evidence-{how}"]
    return [f"evidence-{how}", "evidence-uncertain"]


def _classes(cell: CellView, row_id: int | None, cited: Mapping[tuple[int, int], str]) -> list[str]:
    classes = []
    if row_id is not None and cell.col_id is not None and (row_id, cell.col_id) in cited:
        classes += _evidence_classes(cited[row_id, cell.col_id])
    if cell.tag == "td" and NUMBER.match(cell.text.strip()):
        classes.append("num")
    elif len(cell.text) > LONG_TEXT and " " in cell.text.strip():
        classes.append("long")
    return classes


def _row_classes(row_id: int, previous: int | None, hit_rows: set[int]) -> list[str]:
    """``matched`` for a row a search matched, ``gap`` after rows left out."""
    classes = ["matched"] if row_id in hit_rows else []
    if previous is not None and row_id != previous + 1:
        classes.append("gap")
    return classes


def table_view(
    table: Table,
    table_id: str,
    *,
    rows: Iterable[int] | None = None,
    limit: int = 200,
    evidence: Iterable[tuple[int, int]] | Mapping[tuple[int, int], str] = (),
    matched: Iterable[int] = (),
    patterns: Sequence[str] = (),
) -> TableView:
    """The view of `table` (only the body rows with ids in `rows`, at most `limit`; wide
    tables show fewer rows and at most `MAX_COLS` columns: `_window`).

    Args:
        evidence: (row id, column id) cells to highlight as evidence, or mapped to how
            each was found (`CellRef.how`: classes by how, see the module doc).
        matched: Row ids to highlight as matched by a search.
        patterns: Regexes whose matches are marked inside cells.
    """
    part = _window(table, rows, limit)
    starts, covered = span_map(part.merges, part.n_header_rows)
    cited = dict(evidence) if isinstance(evidence, Mapping) else dict.fromkeys(evidence, "")
    hit_rows = set(matched)
    compiled = [compile_pattern(p) for p in patterns]
    h = part.n_header_rows
    out_rows: list[RowView] = []
    previous: int | None = None
    for r, values in enumerate(part.cells):
        row_id = part.row_ids[r - h] if r >= h else None
        cells = []
        for c, value in enumerate(values):
            if (r, c) in covered:
                continue
            rs, cs = starts.get((r, c), (1, 1))
            cell = CellView(
                tag="th" if r < h or c < part.n_header_cols else "td",
                text=value,
                rowspan=rs,
                colspan=cs,
                col_id=part.col_ids[c],
                parts=mark(value, compiled) if compiled and value else [(value, False)],
            )
            cell.classes = _classes(cell, row_id, cited)
            cells.append(cell)
        classes = [] if row_id is None else _row_classes(row_id, previous, hit_rows)
        previous = row_id  # header rows (None) come first
        out_rows.append(RowView(row_id, cells, classes))
    return TableView(
        table_id=table_id,
        title=table.title,
        header=out_rows[:h],
        body=out_rows[h:],
        n_rows=table.n_rows,
        n_cols=table.n_cols,
        shown_rows=part.n_rows,
        shown_cols=part.n_cols,
    )


def structure(table: Table, table_id: str, *, offset: int, limit: int) -> dict[str, Any]:
    """A table as the API returns it: header rows and paths, a window of body rows, and the
    merges that meet the header rows or that window (as stored: not cut at the window), so
    the answer grows with the rows returned, not with the table's merges. A wide table gets
    fewer rows than `limit` (at most `API_CELLS` body cells); `offset` pages on."""
    limit = max(1, min(limit, API_CELLS // max(1, table.n_cols)))
    body_ids = list(table.row_ids[offset : offset + limit])
    h = table.n_header_rows
    shown = [(0, h - 1), (h + offset, h + offset + len(body_ids) - 1)]
    return {
        "table_id": table_id,
        "title": table.title,
        "n_rows": table.n_rows,
        "n_cols": table.n_cols,
        "n_header_rows": table.n_header_rows,
        "n_header_cols": table.n_header_cols,
        "header_rows": [list(r) for r in table.header_rows],
        "header_paths": [list(table.header_path(j)) for j in range(table.n_cols)],
        "columns": list(table.columns),
        "merges": [
            {"top": m.top, "left": m.left, "bottom": m.bottom, "right": m.right}
            for m in table.merges_meeting([(a, b) for a, b in shown if a <= b])
        ],
        "col_ids": list(table.col_ids),
        "row_ids": body_ids,
        "rows": [list(r) for r in table.body[offset : offset + limit]],
        "offset": offset,
    }


def stored_structure(store: Store, table_id: str, *, offset: int, limit: int) -> dict[str, Any]:
    """`structure` of a stored table; a streamed one (`streamed_rows`: a big plain file, no
    merges, one header row) reads only the window's rows, never the table whole.

    Raises:
        KeyError: no such table.
    """
    from tablequest.corpus import streamed_rows

    n_rows = streamed_rows(store, table_id)
    if n_rows is None:
        return structure(store.get(table_id), table_id, offset=offset, limit=limit)
    limit = max(1, min(limit, API_CELLS // max(1, store.shape(table_id)[1])))
    part = store.get_rows(table_id, list(range(n_rows)[offset : offset + limit]))
    return {**structure(part, table_id, offset=0, limit=limit), "n_rows": n_rows, "offset": offset}
