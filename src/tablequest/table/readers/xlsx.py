"""XLSX/XLSM workbooks: every sheet, merged cells, multi-row headers.

The parts are read as a stream within the file's reading budget (`xlsxparts`: zip limits
per member and in all, every `<c>` element a cell, every value's text decoded bytes, the
clock); building a sheet's grid spends the cells merges fill and the empty cells that pad
it, before they are made.

Layout heuristics (ours; the papers are silent):
- Cells come from the sheet's stored cells (not its declared dimensions). Merged ranges are
  clipped to the data's bounding box; their top-left value is copied into every covered cell.
  Fully empty rows and columns (spacers) are dropped; merges are remapped.
- Title rows: leading rows holding a single distinct text value (e.g. a merged banner, or
  "[Numbers in thousands]") while the sheet has at least two columns; they become the title,
  joined by newlines (at most `MAX_TITLE_ROWS`).
- Header rows: the first remaining row, then each next row (at most `MAX_HEADER_ROWS`) that
  holds no body-like cell (a number that is not a year, or a numeric-looking string) and is
  (a) covered by a vertical merge starting in the header, (b) crossed by a horizontal merge,
  (c) just under a row crossed by a horizontal merge and has two distinct labels (the labels
  of a merged group), or (d) the second row under a first row with blank cells, above a
  numeric row (an unmerged two-level header). Horizontal spans repeated in three or more
  rows are row labels (e.g. "Parameter" / "Body" merged over A:B) and do not count.
- Header columns: the leading columns (fewer than half) whose body has a vertical merge and
  no body-like cell (left label trees such as Region > Country).
- Numbers render without float noise; dates at midnight render as ISO dates; text is stripped.
- Formula cells without a saved value show their formula (`xlsxparts`); the table gets a note
  and the read a warning saying how many.
"""

from __future__ import annotations

import bisect
import io
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from lxml import etree

from tablequest.table.budget import Meter
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Merge, Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import looks_numeric, value_text
from tablequest.table.readers.xlsxparts import Parts, Sheet, check_zip, read_book, read_sheet

__all__ = ["check_zip", "read_xlsx", "sheet_table"]

MAX_SHEET_CELLS = 5_000_000
MAX_HEADER_ROWS = 8
MAX_TITLE_ROWS = 5
_YEAR = re.compile(r"^(1[5-9]|20)\d\d$")
Box = tuple[int, int, int, int]  # top, left, bottom, right (1-based, inclusive)


def _body_like(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not (isinstance(value, int) and _YEAR.match(text))
    return looks_numeric(text) and not _YEAR.match(text)


def _remap(index: list[int], lo: int, hi: int) -> tuple[int, int] | None:
    """Positions of the kept indices within [lo, hi], as (first, last) or None."""
    a, b = bisect.bisect_left(index, lo), bisect.bisect_right(index, hi) - 1
    return (a, b) if a <= b else None


def sheet_table(
    values: dict[tuple[int, int], Any],
    ranges: Iterable[Box],
    *,
    sheet: str | None = None,
    meter: Meter | None = None,
) -> Table | None:
    """Build a table from a sheet's non-empty values {(row, col): value} and merged ranges;
    `meter` is spent the cells merges fill and those padding the grid, before they are made
    (the values were spent as they were read)."""
    texts = {k: value_text(v).strip() for k, v in values.items()}
    texts = {k: t for k, t in texts.items() if t}
    if not texts:
        return None
    top, bottom = min(r for r, _ in texts), max(r for r, _ in texts)
    left, right = min(c for _, c in texts), max(c for _, c in texts)
    boxes: list[Box] = []
    for t, lft, b, rgt in dict.fromkeys(ranges):  # a copy of a merge fills nothing new
        t, lft, b, rgt = max(t, top), max(lft, left), min(b, bottom), min(rgt, right)
        if t <= b and lft <= rgt and (t, lft) in texts and (t < b or lft < rgt):
            boxes.append((t, lft, b, rgt))
    if (bottom - top + 1) * (right - left + 1) > MAX_SHEET_CELLS:
        raise ValueError(f"sheet {sheet!r} spans more than {MAX_SHEET_CELLS:,} cells")
    if meter is not None:  # overlapping merges would fill the same cells again and again
        meter.spend(cells=sum((b - t + 1) * (rgt - lft + 1) for t, lft, b, rgt in boxes))
    body_like = {k for k, t in texts.items() if _body_like(values[k], t)}
    for t, lft, b, rgt in boxes:
        value, is_num = texts[(t, lft)], (t, lft) in body_like
        for r in range(t, b + 1):
            for c in range(lft, rgt + 1):
                texts[(r, c)] = value
                if is_num:
                    body_like.add((r, c))
    rows = sorted({r for r, _ in texts})
    cols = sorted({c for _, c in texts})
    if meter is not None:
        meter.spend(cells=max(0, len(rows) * len(cols) - len(texts)))
    grid = [[texts.get((r, c), "") for c in cols] for r in rows]
    flags = [[(r, c) in body_like for c in cols] for r in rows]
    merges = []
    for t, lft, b, rgt in boxes:
        rr, cc = _remap(rows, t, b), _remap(cols, lft, rgt)
        if rr and cc and (rr[0] < rr[1] or cc[0] < cc[1]):
            merges.append(Merge(rr[0], cc[0], rr[1], cc[1]))
    return _layout(grid, flags, merges, sheet)


def _title_rows(grid: list[list[str]], numeric: list[list[bool]]) -> int:
    if len(grid[0]) < 2:
        return 0
    n = 0
    while n < min(MAX_TITLE_ROWS, len(grid) - 1):
        distinct = {v for v in grid[n] if v}
        if len(distinct) != 1 or any(numeric[n]):
            break
        n += 1
    return n


def _header_rows(grid: list[list[str]], numeric: list[list[bool]], merges: list[Merge]) -> int:
    # Row-label merges (the same horizontal span repeated down the rows, e.g. "Parameter"
    # over A:B, then "Body" over A:B) say nothing about headers.
    spans = Counter((m.left, m.right) for m in merges if m.top == m.bottom and m.left < m.right)
    labels = {span for span, count in spans.items() if count >= 3}
    header_merges = [m for m in merges if m.left < m.right and (m.left, m.right) not in labels]

    def crossed(row: int) -> bool:
        return any(m.top <= row <= m.bottom for m in header_merges)

    n = 1
    while n < min(MAX_HEADER_ROWS, len(grid) - 1):
        distinct = len({v for v in grid[n] if v})
        if any(numeric[n]) or not distinct:
            break
        vertical = any(m.top < n <= m.bottom for m in merges)
        unmerged_two_level = n == 1 and "" in grid[0] and distinct >= 2 and any(numeric[2])
        if not (vertical or crossed(n) or (crossed(n - 1) and distinct >= 2) or unmerged_two_level):
            break
        n += 1
    return n


def _header_cols(numeric: list[list[bool]], merges: list[Merge], n_head: int) -> int:
    width = len(numeric[0])
    k = 0
    while k < (width - 1) // 2:
        has_vmerge = any(m.left == k and m.top >= n_head and m.bottom > m.top for m in merges)
        if not has_vmerge or any(row[k] for row in numeric[n_head:]):
            break
        k += 1
    return k


def _layout(
    grid: list[list[str]], numeric: list[list[bool]], merges: list[Merge], sheet: str | None
) -> Table:
    n_title = _title_rows(grid, numeric)
    title = "\n".join(grid[r][next(i for i, v in enumerate(grid[r]) if v)] for r in range(n_title))
    grid, numeric = grid[n_title:], numeric[n_title:]
    shifted = []
    for m in merges:
        if m.bottom >= n_title:
            shifted.append(Merge(max(0, m.top - n_title), m.left, m.bottom - n_title, m.right))
    merges = [m for m in shifted if m.top < m.bottom or m.left < m.right]
    keep = [c for c in range(len(grid[0])) if any(row[c] for row in grid)]
    if len(keep) < len(grid[0]):  # columns that only the title rows used
        grid = [[row[c] for c in keep] for row in grid]
        numeric = [[row[c] for c in keep] for row in numeric]
        remapped = []
        for m in merges:
            span = _remap(keep, m.left, m.right)
            if span and (m.top < m.bottom or span[0] < span[1]):
                remapped.append(Merge(m.top, span[0], m.bottom, span[1]))
        merges = remapped
    n_head = _header_rows(grid, numeric, merges)
    n_cols = _header_cols(numeric, merges, n_head) if n_head < len(grid) else 0
    return Table.from_rows(
        grid,
        n_header_rows=n_head,
        n_header_cols=n_cols,
        merges=merges,
        title=title or None,
        source=Source(sheet=sheet),
    )


def _noted(table: Table, sheet: Sheet, name: str, inp: ReadInput) -> Table:
    """The table with a note (and a read warning) when formula cells had no saved value."""
    if not sheet.uncomputed:
        return table
    note = (
        f"{sheet.uncomputed} formula cell(s) had no saved value (the workbook was saved "
        f"without being calculated): they show their formula, e.g. {sheet.first_uncomputed!r}"
    )
    inp.warn(f"sheet {name!r}: {note}")
    return replace(table, notes=(*table.notes, note))


def read_xlsx(inp: ReadInput) -> list[Table]:
    """Read every non-empty sheet of an xlsx/xlsm workbook, within the file's budget."""
    check_zip(inp.data, inp.path)
    tables = []
    try:
        with zipfile.ZipFile(io.BytesIO(inp.data)) as zf:
            parts = Parts(zf, inp.meter)
            book = read_book(parts)
            for name, member in book.sheets:
                sheet = read_sheet(parts, member, book)
                try:
                    table = sheet_table(sheet.values, sheet.boxes, sheet=name, meter=inp.meter)
                except ValueError as exc:  # a sheet over MAX_SHEET_CELLS
                    raise UnreadableTable(inp.path, str(exc)) from None
                if table is not None:
                    tables.append(_noted(table, sheet, name, inp))
    except UnreadableTable:
        raise
    except (etree.LxmlError, zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            ValueError, KeyError) as exc:  # fmt: skip
        raise UnreadableTable(
            inp.path, f"not a valid xlsx file ({type(exc).__name__}: {exc})"
        ) from None
    if not tables:
        raise UnreadableTable(inp.path, "workbook has no non-empty sheet")
    return tables
