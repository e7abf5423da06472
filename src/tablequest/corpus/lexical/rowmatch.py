"""Which body rows of a table each grep pattern matches (a row is its cells joined by ' | ').

One algorithm, used by `corpus.rank.matched_rows` (search hits, TableSeek's ranking) and by
the server (which caches a table's `TableLines` per store generation):

- a whole-word pattern of word characters only (``\\bword\\b``, the commonest form
  `corpus.rank.question_patterns` makes) is a plain search for `` word `` in the table's rows
  written once as their folded word tokens (`TableLines.word_rows`, remembered per word): a
  row holds a token whose fold is the word's exactly when ``\\bword\\b`` matches it — the
  argument and the exceptions of `corpus.lexical.tokens` (the grep index's token postings,
  per row here): a fold that changes length (ß → ss) is confirmed with the regex, and words
  of the one class mixing word and non-word characters take the next route;
- another whole-word pattern (escaped punctuation: ``\\bo\\'brien\\b``) is answered by
  finding the word's case fold in the folded rows joined by newlines (a plain substring
  search) and confirming only those rows with the regex. Exact for the reason `corpus.grep`
  gives: a literal that `re` finds case-insensitively has its fold inside the text's fold
  (`table.patterns.fold_text`);
- any other pattern runs line by line through the bounded matcher (`table.patterns`); one
  that runs past its time budget shows no rows.

Property-tested against the line-by-line route for every pattern (tests/corpus).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tablequest.corpus.lexical.lazyattr import lazy_attribute
from tablequest.corpus.lexical.tokens import WORD, token_safe
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
_ASCII_WORD = re.compile(r"\w+", re.ASCII)
"""`tokens.WORD` on ASCII text (where ``\\w`` means the same either way)."""
_NO_WORDS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableLines:
    """A table's body rows as matching sees them; their case folds are computed on first use."""

    lines: list[str]
    row_ids: tuple[int, ...]

    @lazy_attribute
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

    @lazy_attribute
    def _tokens(self) -> tuple[str, tuple[int, ...], frozenset[str]]:
        """Each row's folded word tokens as `` tok tok … `` (one space around each), the rows
        joined by newlines; where each row starts in it; the folds that changed a token's
        length (a fold holds no whitespace: checked over every code point). Tuples and
        strings, as `word_rows` keeps: a server caches this for thousands of tables, and
        tuples of numbers leave the garbage collector's lists where lists never do (full
        collections walked 66,000 such lists, 60 ms pauses, in `benchmarks/serve_load.py`)."""
        rows: list[str] = []
        inexact: set[str] = set()
        for line in self.lines:
            if line.isascii():  # the same tokens, several times faster than Unicode's \w
                keys = _ASCII_WORD.findall(line.lower())
            else:
                tokens = WORD.findall(line)
                joined = " ".join(tokens)
                folded = fold_text(joined)  # one call: the fold is per character
                if len(folded) == len(joined):
                    keys = folded.split(" ") if tokens else []
                else:  # some token's fold changed its length
                    keys = [fold_text(token) for token in tokens]
                    inexact.update(k for k, t in zip(keys, tokens, strict=True) if len(k) != len(t))
            rows.append(" " + " ".join(keys) + " ")
        starts, pos = [], 0
        for row in rows:
            starts.append(pos)
            pos += len(row) + 1
        return "\n".join(rows), tuple(starts), frozenset(inexact) if inexact else _NO_WORDS

    @lazy_attribute
    def _word_rows(self) -> dict[str, tuple[int, ...]]:
        """Rows found per folded word so far (`word_rows`)."""
        return {}

    def word_rows(self, key: str, pattern: str, *, confirm: bool = False) -> Sequence[int]:
        """Positions of the lines the whole-word `pattern` of a token-safe word matches, its
        fold being `key` (module doc). `confirm`: the word's fold changed its length, so the
        lines found are checked with the regex, as those of a token whose fold did."""
        found = self._word_rows.get(key)
        text, starts, inexact = self._tokens
        if found is None:
            rows = []
            needle = f" {key} "
            at = text.find(needle)
            while at >= 0:
                i = bisect.bisect_right(starts, at) - 1
                rows.append(i)
                at = text.find(needle, starts[i + 1]) if i + 1 < len(starts) else -1
            found = self._word_rows[key] = tuple(rows)
        if confirm or key in inexact:
            rx = compile_pattern(pattern)
            return [i for i in found if rx.search(self.lines[i])]
        return found


@functools.lru_cache(maxsize=4096)
def _whole_word(pattern: str) -> tuple[str, str, bool] | None:
    """(literal, its fold, whether it is token-safe) of a whole-word pattern; None for another
    pattern. Cached: every hit of a search asks for the same few patterns."""
    if not _ESCAPED_WORD.match(pattern):
        return None
    literal = _UNESCAPE.sub(r"\1", pattern[2:-2])
    return literal, fold_text(literal), token_safe(literal)


def table_lines(table: Table) -> TableLines:
    """The body rows of `table` as matching sees them (cells joined by ' | ', each cell up
    to `INDEX_CELL_CHARS` characters, as the grep index read it)."""
    body = index_cells(table).body
    return TableLines([" | ".join(row) for row in body], tuple(table.row_ids))


def _lines_of(data: TableLines, pattern: str) -> Sequence[int] | None:
    """Line positions `pattern` matches; None when it ran past its time budget."""
    word = _whole_word(pattern)
    if word is not None:
        literal, key, token = word
        if token:
            return data.word_rows(key, pattern, confirm=len(key) != len(literal))
        rx = compile_pattern(pattern)
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
