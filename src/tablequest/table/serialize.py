"""Serializers: Markdown, CSV, TSV, HTML, JSON and a linearized form with row ids.

Every format renders as head lines, one line per body row and tail lines (`render`), so the
preview can tell which rows a cut head still shows and render a single row on its own.

Choices (ours):
- Markdown and CSV/TSV have one header line: the raw header cells for one header level, the
  flattened paths ("Parent / Child") for several. Markdown escapes `|` as `\\|` and writes
  line breaks as `<br>`; cells are not padded (previews are measured in characters).
- HTML writes one `<tr>` per header level in `<thead>`, merges as colspan/rowspan (a merge
  crossing the header/body boundary is cut at it; `table.merges.span_map`), `<th>` for header
  columns, the title as `<caption>`.
- JSON keeps everything `read_tables` needs to rebuild the same table: title, header rows,
  merges, header columns, notes (when any), and non-default row/column ids.
- Linearized: `[TITLE] ...`, `[HEADER] a | b`, then `[ROW id] v | v` using the table's row ids,
  so a sub-table shows its original ids, then one `[NOTE] ...` line per note.
- Markdown, CSV, TSV and HTML are the grid only: a table's notes are not written there.
"""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass
from typing import Literal

from tablequest.table.merges import span_map
from tablequest.table.model import HEADER_SEP, Table

__all__ = ["SERIAL_FORMATS", "Rendered", "SerialFormat", "render", "row_line", "serialize"]

SerialFormat = Literal["markdown", "csv", "tsv", "html", "json", "linearized"]
SERIAL_FORMATS: tuple[SerialFormat, ...] = ("markdown", "csv", "tsv", "html", "json", "linearized")


@dataclass(frozen=True, slots=True)
class Rendered:
    """A serialized table in parts: `text` = head, the rows joined by `row_sep`, tail."""

    head: tuple[str, ...]
    rows: tuple[str, ...]
    tail: tuple[str, ...]
    row_sep: str = "\n"

    @property
    def text(self) -> str:
        parts = []
        if self.head:
            parts.append("\n".join(self.head))
        if self.rows:
            parts.append(self.row_sep.join(self.rows))
        if self.tail:
            parts.append("\n".join(self.tail))
        return "\n".join(parts)

    def row_ends(self) -> list[int]:
        """End offset in `text` (exclusive) of each row line."""
        pos = sum(len(h) + 1 for h in self.head)
        ends = []
        for row in self.rows:
            ends.append(pos + len(row))
            pos += len(row) + len(self.row_sep)
        return ends


def _flat_header(table: Table) -> list[str]:
    if table.n_header_rows == 1:
        return list(table.cells[0])
    if table.n_header_rows == 0:
        return list(table.columns)
    return [HEADER_SEP.join(table.header_path(j)) for j in range(table.n_cols)]


def _md_cell(value: str) -> str:
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return value.replace("|", "\\|").replace("\n", "<br>")


def _md_line(cells: tuple[str, ...] | list[str]) -> str:
    return "| " + " | ".join(_md_cell(c) for c in cells) + " |"


def _markdown(table: Table) -> Rendered:
    head = (_md_line(_flat_header(table)), "| " + " | ".join(["---"] * table.n_cols) + " |")
    return Rendered(head, tuple(_md_line(r) for r in table.body), ())


class _Lines:
    """csv.writer producing one string per record."""

    def __init__(self, delimiter: str) -> None:
        self._buf = io.StringIO()
        self._writer = csv.writer(self._buf, delimiter=delimiter, lineterminator="\n")

    def __call__(self, row: tuple[str, ...] | list[str]) -> str:
        self._buf.seek(0)
        self._buf.truncate()
        self._writer.writerow(row)
        return self._buf.getvalue()[:-1]


def _delimited(table: Table, delimiter: str) -> Rendered:
    line = _Lines(delimiter)
    return Rendered((line(_flat_header(table)),), tuple(line(r) for r in table.body), ())


def _html_text(value: str) -> str:
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return html.escape(value, quote=False).replace("\n", "<br>")


def _html_row(
    table: Table,
    r: int,
    starts: dict[tuple[int, int], tuple[int, int]],
    covered: set[tuple[int, int]],
) -> str:
    out = ["<tr>"]
    for c, value in enumerate(table.cells[r]):
        if (r, c) in covered:
            continue
        tag = "th" if r < table.n_header_rows or c < table.n_header_cols else "td"
        attrs = ""
        rs, cs = starts.get((r, c), (1, 1))
        if rs > 1:
            attrs += f' rowspan="{rs}"'
        if cs > 1:
            attrs += f' colspan="{cs}"'
        out.append(f"<{tag}{attrs}>{_html_text(value)}</{tag}>")
    out.append("</tr>")
    return "".join(out)


def _html(table: Table) -> Rendered:
    starts, covered = span_map(table.merges, table.n_header_rows)
    head = ["<table>"]
    if table.title:
        head.append(f"<caption>{_html_text(table.title)}</caption>")
    if table.n_header_rows:
        head.append("<thead>")
        head += [_html_row(table, r, starts, covered) for r in range(table.n_header_rows)]
        head.append("</thead>")
    head.append("<tbody>")
    h = table.n_header_rows
    rows = tuple(_html_row(table, h + i, starts, covered) for i in range(table.n_rows))
    return Rendered(tuple(head), rows, ("</tbody>", "</table>"))


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json(table: Table) -> Rendered:
    meta: dict[str, object] = {
        "title": table.title,
        "header": [list(r) for r in table.header_rows],
        "n_header_cols": table.n_header_cols,
        "merges": [[m.top, m.left, m.bottom, m.right] for m in table.merges],
    }
    if table.notes:
        meta["notes"] = list(table.notes)
    if table.row_ids != tuple(range(table.n_rows)):
        meta["row_ids"] = list(table.row_ids)
    if table.col_ids != tuple(range(table.n_cols)):
        meta["col_ids"] = list(table.col_ids)
    opening = _dumps(meta)[:-1] + ', "rows": ['
    rows = tuple(_dumps(list(r)) for r in table.body)
    return Rendered((opening,), rows, ("]}",), row_sep=",\n")


def _lin_cell(value: str) -> str:
    return " ".join(value.split())


def _linearized(table: Table) -> Rendered:
    head = []
    if table.title:
        head.append(f"[TITLE] {_lin_cell(table.title)}")
    head.append("[HEADER] " + " | ".join(table.columns))
    rows = tuple(
        f"[ROW {rid}] " + " | ".join(_lin_cell(v) for v in row)
        for rid, row in zip(table.row_ids, table.body, strict=True)
    )
    return Rendered(tuple(head), rows, tuple(f"[NOTE] {_lin_cell(n)}" for n in table.notes))


def render(table: Table, fmt: SerialFormat) -> Rendered:
    """Serialize `table` in `fmt`, split into head, row lines and tail."""
    if fmt not in SERIAL_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(SERIAL_FORMATS)}")
    if table.n_cols == 0:
        return Rendered((), (), ())
    if fmt == "markdown":
        return _markdown(table)
    if fmt == "csv":
        return _delimited(table, ",")
    if fmt == "tsv":
        return _delimited(table, "\t")
    if fmt == "html":
        return _html(table)
    if fmt == "json":
        return _json(table)
    return _linearized(table)


def serialize(table: Table, fmt: SerialFormat) -> str:
    """The table as text in `fmt` (markdown, csv, tsv, html, json or linearized)."""
    return render(table, fmt).text


def row_line(table: Table, pos: int, fmt: SerialFormat) -> str:
    """Body row at position `pos` as one standalone line in `fmt` (HTML: every cell, no spans)."""
    row = table.body[pos]
    if fmt == "markdown":
        return _md_line(row)
    if fmt in ("csv", "tsv"):
        return _Lines("," if fmt == "csv" else "\t")(row)
    if fmt == "html":
        return _html_row(table, table.n_header_rows + pos, {}, set())
    if fmt == "json":
        return _dumps(list(row))
    if fmt == "linearized":
        return " | ".join(_lin_cell(v) for v in row)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(SERIAL_FORMATS)}")
