"""XLSX/XLSM workbooks via openpyxl: every sheet, merged cells, multi-row headers.

The archive is checked before openpyxl sees it (zip bomb guard): the sum of the members'
declared uncompressed sizes must stay under `MAX_UNCOMPRESSED`, and archives over
`RATIO_CHECK_FLOOR` must not expand more than `MAX_COMPRESSION_RATIO` times.

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
"""

from __future__ import annotations

import bisect
import io
import re
import warnings
import zipfile
from collections import Counter
from collections.abc import Iterable
from typing import Any

from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Merge, Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._cells import looks_numeric, value_text
from tablequest.table.readers._text import binary_kind

__all__ = ["check_zip", "read_xlsx", "sheet_table"]

MAX_UNCOMPRESSED = 200 * 1024**2
MAX_COMPRESSION_RATIO = 100
RATIO_CHECK_FLOOR = 16 * 1024**2
MAX_MEMBERS = 10_000
MAX_SHEET_CELLS = 5_000_000
MAX_HEADER_ROWS = 8
MAX_TITLE_ROWS = 5
_YEAR = re.compile(r"^(1[5-9]|20)\d\d$")
Box = tuple[int, int, int, int]  # top, left, bottom, right (1-based, inclusive)


def _size(n: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def check_zip(data: bytes, path: str) -> None:
    """Reject non-zip data, corrupt archives, zip bombs, and zips that are not workbooks."""
    if not data.startswith(b"PK\x03\x04"):
        kind = binary_kind(data[:16])
        detail = f"it is {kind}" if kind else "zip header missing"
        raise UnreadableTable(path, f"not a valid xlsx file ({detail})")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableTable(path, f"not a valid xlsx file (corrupt zip: {exc})") from None
    if len(infos) > MAX_MEMBERS:
        raise UnreadableTable(path, f"{len(infos):,} zip members exceed the {MAX_MEMBERS:,} limit")
    total = sum(i.file_size for i in infos)
    packed = max(1, sum(i.compress_size for i in infos))
    if total > MAX_UNCOMPRESSED:
        raise UnreadableTable(
            path, f"uncompressed size {_size(total)} exceeds the {_size(MAX_UNCOMPRESSED)} limit"
        )
    if total > RATIO_CHECK_FLOOR and total > MAX_COMPRESSION_RATIO * packed:
        raise UnreadableTable(
            path,
            f"compression ratio {total // packed:,}:1 exceeds {MAX_COMPRESSION_RATIO}:1 "
            "(zip bomb?)",
        )
    if not any(i.filename == "xl/workbook.xml" for i in infos):
        raise UnreadableTable(path, "not a valid xlsx file (zip archive without xl/workbook.xml)")


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
    values: dict[tuple[int, int], Any], ranges: Iterable[Box], *, sheet: str | None = None
) -> Table | None:
    """Build a table from a sheet's non-empty values {(row, col): value} and merged ranges."""
    texts = {k: value_text(v).strip() for k, v in values.items()}
    texts = {k: t for k, t in texts.items() if t}
    if not texts:
        return None
    top, bottom = min(r for r, _ in texts), max(r for r, _ in texts)
    left, right = min(c for _, c in texts), max(c for _, c in texts)
    boxes: list[Box] = []
    for t, lft, b, rgt in ranges:
        t, lft, b, rgt = max(t, top), max(lft, left), min(b, bottom), min(rgt, right)
        if t <= b and lft <= rgt and (t, lft) in texts and (t < b or lft < rgt):
            boxes.append((t, lft, b, rgt))
    if (bottom - top + 1) * (right - left + 1) > MAX_SHEET_CELLS:
        raise ValueError(f"sheet {sheet!r} spans more than {MAX_SHEET_CELLS:,} cells")
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


def read_xlsx(inp: ReadInput) -> list[Table]:
    """Read every non-empty sheet of an xlsx/xlsm workbook."""
    check_zip(inp.data, inp.path)
    import openpyxl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wb = openpyxl.load_workbook(io.BytesIO(inp.data), read_only=False, data_only=True)
    except Exception as exc:  # openpyxl raises many types for broken workbooks
        raise UnreadableTable(
            inp.path, f"not a valid xlsx file ({type(exc).__name__}: {exc})"
        ) from None
    tables = []
    try:
        for ws in wb.worksheets:
            values = {k: c.value for k, c in ws._cells.items() if c.value is not None}
            boxes = [(r.min_row, r.min_col, r.max_row, r.max_col) for r in ws.merged_cells.ranges]
            try:
                table = sheet_table(values, boxes, sheet=ws.title)
            except ValueError as exc:
                raise UnreadableTable(inp.path, str(exc)) from None
            if table is not None:
                tables.append(table)
    finally:
        wb.close()
    if not tables:
        raise UnreadableTable(inp.path, "workbook has no non-empty sheet")
    return tables
