"""Title lines before a delimited table's header and note lines after its data.

Statistical offices and spreadsheet exports put text around the grid: a title above the
header ("Bevölkerung nach Ländern"), and sources, dates and footnotes below the data
("Quelle: Statistisches Landesamt", "Stand: 31.03.2024", "* vorläufig"). Read as rows they
become a bogus header or bogus data rows; here they become the table's title and notes.

Choices (ours), with W the number of fields of the header row:

- **Footer notes**: from the end of the file backwards, while at least one data row remains,
  blank rows (every field empty), rule lines (`-----`, `_____`, `=====`) and *note rows* are
  taken off; each note row becomes one note (its fields joined by the delimiter, trailing
  empty fields dropped, so a note split at a comma reads whole again). The first row that is
  none of these ends the footer; rows above it are data even when they look like notes. A
  note row is:
  (a) a row with fewer than half of W's fields holding three or more words
      (`Statistisches Landesamt Bayern, 2024` in a 5-column file), or
  (b) a row whose first field starts like a note — a marker (`*`, `†`, `‡`, `§`, `¹²³`,
      `(1)`, `1)`, `a)`), a note word (source(s), note(s), footnote, remark, as of, copyright,
      ©, (c), Quelle(n), Stand, Anmerkung(en), Hinweis(e), Fußnote, Erläuterung,
      Datenquelle) or a short label and a colon (`Updated: 2024`) — and that either has
      fewer fields than W or only its first field filled, or
  (c) in a table of three or more columns, a row with only its first field filled holding a
      sentence (four or more words).
  A data row with a missing value ("Bob," in a two-column file) is none of these.
- **Title lines**: leading rows before the header, the first row with two or more filled
  fields that is not a split title. A title line either has one filled field, its first, and
  fewer fields than the header row or reads as text (has a space or a colon: `Bevölkerung
  nach Ländern;;` is a title, `name;` a header with a blank second name), or is a *split
  title*: a title holding the delimiter (`Average fuel prices by country, March 2024` in a
  comma file), i.e. filled fields from the first on, fewer fields than the table's width
  (the most common row width, the wider on a tie, when at least half of the rows have it),
  three or more words in all and a field of two or more; it is rejoined at the delimiter.
  The first title line is the title; further ones are notes, before the footer's. Blank rows
  among them are dropped.
- Rows are left as they were when nothing is found.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Framed", "has_title_or_notes", "split_title_and_notes"]

_MARKER = re.compile(r"\s*(?:[*†‡§¹²³⁴⁵⁶⁷⁸⁹]|\(\d{1,2}\)|\d{1,2}\)|[a-z]\))")
_NOTE_WORD = re.compile(
    r"\s*(?:sources?|notes?|footnotes?|remarks?|as of|copyright|©|\(c\)|quellen?|stand|"
    r"anmerkung(?:en)?|hinweise?|fu(?:ß|ss)noten?|erläuterung(?:en)?|datenquellen?)"
    r"(?=$|[\s:.,;])",
    re.IGNORECASE,
)
_LABEL_COLON = re.compile(r"\s*[^\W\d][^:\d]{0,29}:\s*\S")
_RULE = re.compile(r"[-_=~]{3,}")


@dataclass(frozen=True)
class Framed:
    """The grid rows, with the title and notes taken out of them."""

    rows: list[list[str]]
    title: str | None
    notes: list[str]
    n_title_lines: int
    n_footer_lines: int


def _filled(row: list[str]) -> list[str]:
    return [c for c in row if c.strip()]


def _blank(row: list[str]) -> bool:
    filled = _filled(row)
    return not filled or all(_RULE.fullmatch(c.strip()) for c in filled)


def _looks_like_note(text: str) -> bool:
    if _MARKER.match(text) or _NOTE_WORD.match(text):
        return True
    head = text.split(":", 1)[0]
    return bool(_LABEL_COLON.match(text)) and len(head.split()) <= 3


def _note_row(row: list[str], width: int) -> bool:
    filled = _filled(row)
    if not filled:
        return False
    if 2 * len(row) < width and len(" ".join(filled).split()) >= 3:
        return True
    only_first = filled == [row[0]]
    if _looks_like_note(row[0]) and (len(row) < width or only_first):
        return True
    return width >= 3 and only_first and len(row[0].split()) >= 4


def _line(row: list[str], delimiter: str) -> str:
    cells = list(row)
    while cells and not cells[-1].strip():
        cells.pop()
    return delimiter.join(cells).strip()


def _table_width(rows: list[list[str]]) -> int:
    """The most common row width (the wider on a tie), blank rows left out; 0 when fewer
    than half of the rows have it (a ragged file has no width to compare titles with)."""
    widths = Counter(len(r) for r in rows if not _blank(r))
    width = max(widths, key=lambda w: (widths[w], w), default=0)
    return width if 2 * widths[width] >= sum(widths.values()) else 0


def _split_title(row: list[str], width: int) -> bool:
    """A title line that the delimiter split: see the module docstring."""
    filled = _filled(row)
    if len(filled) < 2 or len(row) >= width or row[: len(filled)] != filled:
        return False
    words = [len(c.split()) for c in filled]
    return sum(words) >= 3 and max(words) >= 2


def _title_lines(rows: list[list[str]], delimiter: str) -> tuple[int, list[str]]:
    """(index of the header row, the title lines before it); (0, []) when there are none."""
    width = _table_width(rows)
    header = next(
        (i for i, r in enumerate(rows) if len(_filled(r)) >= 2 and not _split_title(r, width)),
        None,
    )
    if not header:
        return 0, []
    lines = []
    for row in rows[:header]:
        if _blank(row):
            continue
        if _split_title(row, width):
            lines.append(_line(row, delimiter))
            continue
        text = row[0].strip()
        if _filled(row) != [row[0]]:
            return 0, []
        if len(row) >= len(rows[header]) and not (" " in text or ":" in text):
            return 0, []
        lines.append(text)
    return (header, lines) if lines else (0, [])


def _footer(rows: list[list[str]], start: int, delimiter: str) -> tuple[int, list[str]]:
    """(end of the data rows, the footer notes in file order); the first data row stays."""
    width = len(rows[start])
    notes: list[str] = []
    last_data = start + 1
    for i in range(len(rows) - 1, start + 1, -1):
        row = rows[i]
        if _blank(row):
            continue
        if not _note_row(row, width):
            last_data = i
            break
        notes.append(_line(row, delimiter))
    if not notes:
        return len(rows), []
    return last_data + 1, notes[::-1]


def has_title_or_notes(
    head_rows: list[list[str]], tail_rows: list[list[str]], delimiter: str
) -> bool:
    """Whether a delimited file has title lines before its header or footer notes after its
    data, judged from its first rows (`head_rows`, the header among them) and its last rows
    (`tail_rows`): the reader would take them out, so the file is not a plain grid."""
    if _title_lines(head_rows, delimiter) != (0, []):
        return True
    return bool(_footer([*head_rows[:1], *tail_rows], 0, delimiter)[1])


def split_title_and_notes(rows: list[list[str]], delimiter: str) -> Framed:
    """Take title lines and footer notes out of a delimited file's rows (module docstring)."""
    start, title_lines = _title_lines(rows, delimiter)
    end, footer = (len(rows), []) if len(rows) - start < 3 else _footer(rows, start, delimiter)
    title = title_lines[0] if title_lines else None
    notes = title_lines[1:] + footer
    grid = rows[start:end]
    return Framed(grid, title, notes, len(title_lines), len(footer))
