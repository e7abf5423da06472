"""Which body rows of a table each grep pattern matches (a row is its cells joined by ' | ').

One algorithm, used by `corpus.rank.matched_rows` (search hits, TableSeek's ranking) and by
the server (which caches a table's `TableLines` per store generation):

- a whole-word pattern as `corpus.rank.question_patterns` makes it (``\\bword\\b``, word
  characters and escaped punctuation) is answered by finding the word's case fold in the
  folded rows joined by newlines (a plain substring search) and confirming only those rows
  with the regex. Exact for the reason `corpus.grep` gives: a literal that `re` finds
  case-insensitively has its fold inside the text's fold (`table.patterns.fold_text`);
- any other pattern runs line by line through the bounded matcher (`table.patterns`); one
  that runs past its time budget shows no rows.

Property-tested against the line-by-line route for every pattern (tests/corpus).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from tablequest.table import (
    PatternDropped,
    Table,
    compile_pattern,
    fold_text,
    index_cells,
    matching_lines,
)

__all__ = ["TableLines", "rows_matching", "table_lines"]

_ESCAPED_WORD = re.compile(r"^\\b(?:\\[^\w\s]|\w)+\\b$")
"""``\b`` + word characters and escaped punctuation + ``\b``: what `question_patterns` makes."""
_UNESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class TableLines:
    """A table's body rows as matching sees them; their case folds are computed on first use."""

    lines: list[str]
    row_ids: tuple[int, ...]

    @cached_property
    def _folds(self) -> tuple[str, list[int]]:
        """The rows' case folds joined by newlines, and where each row starts in it."""
        folds = [fold_text(line) for line in self.lines]
        starts, pos = [], 0
        for fold in folds:
            starts.append(pos)
            pos += len(fold) + 1
        return "\n".join(folds), starts

    def candidates(self, literal: str) -> list[int]:
        """Positions of the lines whose fold contains `literal`'s fold (a superset of the
        lines the whole-word pattern of `literal` matches)."""
        folded, starts = self._folds
        needle = fold_text(literal)
        found: list[int] = []
        at = folded.find(needle)
        while at >= 0:
            i = bisect.bisect_right(starts, at) - 1
            if not found or found[-1] != i:
                found.append(i)
            nxt = starts[i + 1] if i + 1 < len(starts) else len(folded)
            at = folded.find(needle, max(nxt, at + 1))
        return found


def table_lines(table: Table) -> TableLines:
    """The body rows of `table` as matching sees them (cells joined by ' | ', each cell up
    to `INDEX_CELL_CHARS` characters, as the grep index read it)."""
    body = index_cells(table).body
    return TableLines([" | ".join(row) for row in body], tuple(table.row_ids))


def _lines_of(data: TableLines, pattern: str) -> list[int] | None:
    """Line positions `pattern` matches; None when it ran past its time budget."""
    if _ESCAPED_WORD.match(pattern):
        rx = compile_pattern(pattern)
        literal = _UNESCAPE.sub(r"\1", pattern[2:-2])
        return [i for i in data.candidates(literal) if rx.search(data.lines[i])]
    try:
        return matching_lines(pattern, data.lines)
    except PatternDropped:
        return None


def rows_matching(
    data: TableLines, patterns: Sequence[str], *, limit: int | None = None
) -> dict[str, list[int]]:
    """Body row ids each pattern matches (patterns matching no row are left out; at most
    `limit` rows each when given)."""
    out: dict[str, list[int]] = {}
    for p in dict.fromkeys(patterns):
        found = _lines_of(data, p)
        rows = [data.row_ids[i] for i in found or ()]
        if rows:
            out[p] = rows if limit is None else rows[:limit]
    return out
