"""HTML tables via lxml.

Every top-level `<table>` in the document is a table. A table nested in a cell is read
separately from its parent: its rows never leak into the parent's grid, and its text stays in
the cell that holds it (as browsers and WikiTableQuestions' own CSVs show it). Nested tables
are returned as tables of their own only with `parse_html(text, nested=True)` (then their
text is left out of the holding cell): on real pages they are layout or cell content (3 of
WikiTableQuestions' 2,108 pages have any, all inside a cell), not separate evidence.
`rowspan`/`colspan` are expanded: the value is copied into every covered cell and the
range recorded as a `Merge`. Choices (ours):
- Header rows = the leading rows that sit in `<thead>` or hold only `<th>` cells; at least one
  (a table without `<th>` still has its first row as header) and, when every row qualifies,
  just the first. Header columns = the leading columns whose body cells are all `<th>`.
- Cell text: whitespace runs collapse to one space; `<br>`, `<p>`, `<div>`, `<li>` break lines.
  Dropped: `<script>`, `<style>`, hidden elements (`hidden`, `display:none`), and Wikipedia's
  sort keys (`span.sortkey`) and citation marks (`sup.reference`), which readers do not see.
- `rowspan="0"` spans to the last row; colspans are capped at `MAX_COLSPAN`.
- Reading budget (table/budget.py): one meter for the whole file, so many tables cannot
  add up past it: every cell and every cell a span covers is spent as the grid is built,
  and a table's padding (ragged rows filled to its width) before it is filled in.
- Speed: the element clean-up above only runs when the raw text mentions the tag or attribute
  (in lower or upper case); one lxml parser is reused per thread.
- Tables without any cell are skipped. The title is the caption plus any leading rows made of
  one cell spanning the full width (banner rows), which are removed from the grid.
- Names (`Source.sheet`) of the tables of a page with several: the table's caption, else the
  nearest heading (`<h1>`–`<h6>`, outside any table) above it with no other table between
  them, else "table N"; a name already taken gets " (table N)" appended. A page with one table
  leaves it unnamed, as other single-table files.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from lxml import etree

from tablequest.table.budget import Meter, ReadBudget
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Merge, Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._text import decode_text

__all__ = ["parse_html", "read_html"]

MAX_COLSPAN = 1000
MAX_NAME_CHARS = 100
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = ("p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6")
_BLOCK_TAG = re.compile(r"<(?:[pP]|div|DIV|li|LI|ul|UL|ol|OL|[hH][1-6])[\s>/]")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_SECTIONS = frozenset({"thead", "tbody", "tfoot"})
_LOCAL = threading.local()
_REMOVALS: tuple[tuple[tuple[str, ...], Any], ...] = (
    (
        ("<script", "<style", "<template", "<noscript"),
        etree.XPath("//script | //style | //template | //noscript"),
    ),
    (("hidden",), etree.XPath("//*[@hidden]")),
    (("display",), etree.XPath("//*[contains(@style, 'none')]")),
    (("sortkey",), etree.XPath("//span[contains(concat(' ', @class, ' '), ' sortkey ')]")),
    (("reference",), etree.XPath("//sup[contains(concat(' ', @class, ' '), ' reference ')]")),
)


def _remove_keep_tail(el: Any) -> None:
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _mentions(text: str, needles: tuple[str, ...]) -> bool:
    # Lower- or upper-case mentions only: lowering a whole document costs more than the rest.
    return any(n in text or n.upper() in text for n in needles)


def _display_none(style: str | None) -> bool:
    return style is not None and "display:none" in "".join(style.lower().split())


def _prepare(root: Any, text: str) -> None:
    """Drop hidden and non-text elements; turn line-breaking elements into newlines."""
    for needles, xpath in _REMOVALS:
        if _mentions(text, needles):
            for el in xpath(root):
                if needles != ("display",) or _display_none(el.get("style")):
                    _remove_keep_tail(el)
    if _mentions(text, ("<br",)):
        for el in root.iter("br"):
            el.tail = "\n" + (el.tail or "")
    if _BLOCK_TAG.search(text):
        for el in root.iter(*_BLOCKS):
            el.text = "\n" + (el.text or "")
            el.tail = "\n" + (el.tail or "")


def _normalize(text: str) -> str:
    if "\n" not in text:
        return " ".join(text.split())
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _own_text(node: Any, parts: list[str]) -> None:
    """Collect the text of `node` without the text of nested tables (and comments)."""
    if node.text:
        parts.append(node.text)
    for child in node:
        if child.tag != "table" and isinstance(child.tag, str):
            _own_text(child, parts)
        if child.tail:
            parts.append(child.tail)


def cell_text(cell: Any, nested: bool = False) -> str:
    """Text of a cell (after `_prepare`); `nested` when it holds a table to leave out."""
    if not nested:
        text = cell.text or "" if len(cell) == 0 else _text_of(cell)
        if "\n" not in text:
            return " ".join(text.split())
        return _normalize(text)
    parts: list[str] = []
    _own_text(cell, parts)
    return _normalize("".join(parts))


def _text_of(cell: Any) -> str:
    return str(etree.tostring(cell, method="text", encoding="unicode", with_tail=False))


def _rows(table: Any) -> Iterator[tuple[Any, bool]]:
    """The table's own rows (not those of nested tables) and whether each is in <thead>."""
    for child in table:
        if child.tag == "tr":
            yield child, False
        elif child.tag in _SECTIONS:
            for tr in child:
                if tr.tag == "tr":
                    yield tr, child.tag == "thead"


def _span(value: str | None, limit: int) -> int:
    if value is None:
        return 1
    try:
        n = int(value.strip().rstrip(";"))
    except ValueError:
        return 1
    if n == 0:
        return limit
    return max(1, min(n, limit))


def _table(el: Any, holders: dict[Any, bool], meter: Meter) -> Table | None:
    grid, th, merges, header_like = _grid(el, holders, meter)
    width = max((len(row) for row in grid), default=0)
    if width == 0:
        return None
    meter.columns(width)
    meter.spend(cells=len(grid) * width - sum(map(len, grid)))  # the padding
    banners: list[str] = []
    while len(grid) > 1 and width > 1 and Merge(0, 0, 0, width - 1) in merges:
        banners.append(grid[0][0])
        del grid[0], th[0], header_like[0]
        merges = [Merge(m.top - 1, m.left, m.bottom - 1, m.right) for m in merges if m.top > 0]
    n_rows = len(grid)
    cells = tuple(tuple(row) + ("",) * (width - len(row)) for row in grid)
    n_head = next((i for i, h in enumerate(header_like) if not h), n_rows)
    if n_head == 0 or (n_head == n_rows and n_rows > 1):
        n_head = 1
    n_head_cols = 0
    while (
        n_head < n_rows
        and n_head_cols < width - 1
        and all(len(row_th) > n_head_cols and row_th[n_head_cols] for row_th in th[n_head:])
    ):
        n_head_cols += 1
    caption = el.find("caption")
    if caption is not None:
        banners.insert(0, cell_text(caption))
    title = "\n".join(b for b in banners if b)
    return Table(
        cells=cells,
        n_header_rows=n_head,
        n_header_cols=n_head_cols,
        merges=tuple(merges),
        title=title or None,
    )


def _grid(
    el: Any, holders: dict[Any, bool], meter: Meter
) -> tuple[list[list[str]], list[list[bool]], list[Merge], list[bool]]:
    """The cell grid with row and column spans filled in: (texts, is-th flags, merges,
    whether each row looks like a header row)."""
    rows = list(_rows(el))
    n_rows = len(rows)
    pending: dict[int, dict[int, tuple[str, bool]]] = {}
    grid: list[list[str]] = []
    th: list[list[bool]] = []
    merges: list[Merge] = []
    header_like: list[bool] = []
    for r, (tr, in_head) in enumerate(rows):
        row: list[str] = []
        row_th: list[bool] = []
        covered = pending.pop(r, {})
        only_th, any_cell = True, False
        for cell in tr:
            tag = cell.tag
            if tag != "td" and tag != "th":
                continue
            any_cell = True
            while covered and len(row) in covered:
                text, is_th = covered.pop(len(row))
                row.append(text)
                row_th.append(is_th)
            if cell in holders:
                text = cell_text(cell, True) if holders[cell] else _flat_text(cell)
            else:
                text = cell_text(cell)
            is_th = tag == "th"
            only_th = only_th and is_th
            rowspan, colspan = cell.get("rowspan"), cell.get("colspan")
            if rowspan is None and colspan is None:
                row.append(text)
                row_th.append(is_th)
                meter.cells += 1  # checked once per row
                continue
            c = len(row)
            rs = _span(rowspan, n_rows - r)
            cs = _span(colspan, MAX_COLSPAN)
            row.extend([text] * cs)
            row_th.extend([is_th] * cs)
            meter.spend(cells=rs * cs)  # before the covered cells are made
            if rs > 1 or cs > 1:
                for rr in range(r + 1, r + rs):
                    below = pending.setdefault(rr, {})
                    for cc in range(c, c + cs):
                        below[cc] = (text, is_th)
                merges.append(Merge(r, c, r + rs - 1, c + cs - 1))
        while covered:
            text, is_th = covered.pop(len(row), ("", False))
            row.append(text)
            row_th.append(is_th)
        meter.spend()
        grid.append(row)
        th.append(row_th)
        header_like.append(in_head or (any_cell and only_th))
    return grid, th, merges, header_like


def _flat_text(cell: Any) -> str:
    """A holding cell's text with its nested table's cells separated by spaces."""
    return " ".join(" ".join(t.split()) for t in cell.itertext() if t.strip())


def _holders(root: Any, *, separate: bool) -> dict[Any, bool]:
    """Cells that contain a nested table → whether that table is read separately."""
    holders: dict[Any, bool] = {}
    for table in root.iter("table"):
        for anc in table.iterancestors("td", "th"):
            holders.setdefault(anc, separate)
            break
    return holders


def _parser() -> Any:
    """One lxml parser per thread (parsers are not thread-safe; building one costs time)."""
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = etree.HTMLParser(huge_tree=True)
    return parser


def _headings_above(root: Any, elements: list[Any]) -> dict[Any, str]:
    """Each table element → the text of the nearest heading above it, outside any table and
    with no other table between them (module docstring)."""
    wanted = set(elements)
    found: dict[Any, str] = {}
    last: str | None = None
    for el in root.iter(*_HEADINGS, "table"):
        if next(el.iterancestors("table"), None) is not None:
            continue  # in a cell: part of that table, not a heading of the page
        if el.tag != "table":
            last = " ".join(_text_of(el).split()) or last
            continue
        if last and el in wanted:
            found[el] = last
        last = None
    return found


def parse_html(
    text: str,
    *,
    nested: bool = False,
    warn: Callable[[str], None] | None = None,
    meter: Meter | None = None,
    named: bool = False,
) -> list[Table]:
    """Every non-empty top-level table of an HTML document (and nested ones if asked).

    `meter` spends the reading budget for the whole document (default: a fresh one of
    `ReadBudget()`). `named`: set each table's `Source.sheet` to its caption or the heading
    above it, where it has one.

    `warn` is told when nested tables were kept as the text of the cells holding them.
    """
    text = _XML_DECL.sub("", text, count=1)
    root = etree.fromstring(text, _parser())
    if root is None:
        return []
    _prepare(root, text)
    holders = _holders(root, separate=nested)
    if holders and not nested and warn is not None:
        cells = f"{len(holders)} cell{'s' if len(holders) > 1 else ''}"
        warn(
            f"tables nested in {cells} were kept as cell text (their rows are not rows of "
            "the outer table)"
        )
    elements = [
        el for el in root.iter("table") if nested or next(el.iterancestors("table"), None) is None
    ]
    if meter is None:
        meter = ReadBudget().meter("<html>")
    headings = _headings_above(root, elements) if named and len(elements) > 1 else {}
    tables = []
    for el in elements:
        table = _table(el, holders, meter)
        if table is None:
            continue
        caption = el.find("caption")
        name = cell_text(caption) if caption is not None else headings.get(el)
        if name:
            table = replace(table, source=Source(sheet=" ".join(name.split())[:MAX_NAME_CHARS]))
        tables.append(table)
    return tables


def _name_tables(tables: list[Table]) -> list[Table]:
    """A page's tables named as the module docstring says (one table: unnamed)."""
    if len(tables) < 2:
        return [replace(t, source=Source()) for t in tables]
    taken: set[str] = set()
    named = []
    for i, table in enumerate(tables, 1):
        name = table.source.sheet or f"table {i}"
        if name in taken:
            name = f"{name} (table {i})"
        taken.add(name)
        named.append(replace(table, source=Source(sheet=name)))
    return named


def read_html(inp: ReadInput) -> list[Table]:
    """Read every table of an HTML file."""
    text = decode_text(inp.data, inp.path, inp.warn)
    try:
        tables = parse_html(text, warn=inp.warn, meter=inp.meter, named=True)
    except (etree.ParserError, ValueError) as exc:
        raise UnreadableTable(inp.path, f"unparseable HTML ({exc})") from None
    if not tables:
        raise UnreadableTable(inp.path, "no table found in HTML")
    return _name_tables(tables)
