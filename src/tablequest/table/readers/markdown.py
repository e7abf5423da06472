"""Markdown pipe tables, with or without the `|---|` separator row.

Handles GitHub-style tables and the WikiTableQuestions `.table` files (`| a | b |` lines, padded
to align, no separator row). Choices (ours):
- A table is a block of consecutive lines starting with `|`; a block of lines without outer
  pipes counts only when its second line is a separator row. Every block is one table.
- A row line that does not end with `|` continues on the next lines, blank ones included,
  until one ends with `|` or a new row starts (WTQ cells with raw newlines); the pieces are
  joined with "\\n".
- `\\|` is a literal pipe, `<br>` a line break. In column-aligned tables (WTQ), a row with an
  unescaped pipe inside a cell is split at the header's pipe positions instead.
- A `# heading` right above a table is its title.
"""

from __future__ import annotations

import itertools
import re

from tablequest.table.budget import Meter, ReadBudget
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Table
from tablequest.table.readers._base import ReadInput, number_tables
from tablequest.table.readers._text import decode_text

__all__ = ["parse_markdown", "read_markdown"]

_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"^\s*:?-+:?\s*$")
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [_BR.sub("\n", c.strip().replace("\\|", "|")) for c in _SPLIT.split(body)]


def _aligned_cells(line: str, stops: list[int]) -> list[str] | None:
    """Split `line` at the header's pipe positions, if it has pipes at all of them."""
    if len(line) != stops[-1] + 1 or any(line[p] != "|" for p in stops):
        return None
    return [line[a + 1 : b].strip() for a, b in itertools.pairwise(stops)]


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(c) for c in cells)


def _blocks(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """Group lines into (title, row lines) blocks, joining continued rows."""
    blocks: list[tuple[str | None, list[str]]] = []
    title: str | None = None
    i, n = 0, len(lines)
    while i < n:
        stripped = lines[i].strip()
        heading = _HEADING.match(stripped)
        if heading:
            title = heading.group(1)
            i += 1
            continue
        piped = stripped.startswith("|")
        bare = not piped and "|" in stripped and i + 1 < n and _is_separator(_cells(lines[i + 1]))
        if not (piped or bare):
            if stripped:
                title = None
            i += 1
            continue
        rows: list[str] = []
        while i < n:
            line = lines[i].rstrip("\r\n")
            s = line.strip()
            if not s or (piped and not s.startswith("|")) or (bare and "|" not in s):
                break
            i += 1
            if piped:
                while not s.endswith("|") and i < n and not lines[i].lstrip().startswith("|"):
                    line = line + "\n" + lines[i].rstrip("\r\n")
                    s = line.strip()
                    i += 1
            rows.append(line)
        blocks.append((title, rows))
        title = None
    return blocks


def parse_markdown(text: str, meter: Meter | None = None) -> list[Table]:
    """Every pipe table in `text`, header = first row; `meter` spends the reading budget
    (table/budget.py) on each grid before its ragged rows are padded."""
    if meter is None:
        meter = ReadBudget().meter("<markdown>")
    tables = []
    for title, lines in _blocks(text.splitlines()):
        header_line = lines[0].rstrip()
        rows = [_cells(header_line)]
        stops = [p for p, ch in enumerate(header_line) if ch == "|"]
        for k, line in enumerate(lines[1:], start=1):
            cells = _cells(line)
            if k == 1 and _is_separator(cells):
                continue
            if len(cells) != len(rows[0]) and len(stops) >= 2:
                cells = _aligned_cells(line.rstrip(), stops) or cells
            rows.append(cells)
        meter.grid(rows)
        tables.append(Table.from_rows(rows, title=title))
    return tables


def read_markdown(inp: ReadInput) -> list[Table]:
    """Read every Markdown pipe table of a file."""
    tables = parse_markdown(decode_text(inp.data, inp.path, inp.warn), inp.meter)
    if not tables:
        raise UnreadableTable(inp.path, "no Markdown table found (no lines starting with '|')")
    return number_tables(tables)
