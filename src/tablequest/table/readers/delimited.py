"""CSV and TSV via the csv module.

Choices (ours):
- Everything is read as text; the first row is the header; ragged rows are padded.
- Delimiter sniffing among `,` `;` tab `|`: each candidate parses a sample of the file and is
  ranked by: at least two columns, then whether its first row (the header) has the width of
  most rows, then whether 90% of the rows have that width, then that share and the width.
  The extension's own delimiter (`,` for .csv, tab for .tsv) wins ties and, giving two or
  more columns, whenever it ranks first on the first three. The header test is what tells
  `Land;Preis` over `Deutschland;1,79` rows from a comma file: split at commas every row but
  the header has two fields, a share the 90% rule alone lets pass once there are more than
  ten rows.
- Quoting: a strict parse first. Files that use backslash-escaped quotes (`\\"`, as in the
  WikiTableQuestions CSVs) fail the strict parse and are read with `\\` as escape character;
  other broken quoting is recovered by the lenient parser, or, when an unterminated quote
  swallows the rest of the file (fewer rows than half the lines), by reading quotes as
  plain characters unless that splits rows less consistently.
- Reading budget (table/budget.py): rows × the widest row is spent before the grid is
  padded, so one very wide line cannot make a small file a huge table.
- Every recovery from broken quoting is reported as a warning (`ReadInput.warn`), naming the
  line where the strict parse failed and what was done.
- Title lines above the header and note lines below the data ("Quelle: …", "Stand: …",
  "* provisional") become `Table.title` and `Table.notes`, not header or data rows, each with a
  warning (`_notes.py` has the rule).
"""

from __future__ import annotations

import csv
import io
import sys
from collections import Counter

from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Format, Source, Table
from tablequest.table.readers._base import ReadInput
from tablequest.table.readers._notes import Framed, split_title_and_notes
from tablequest.table.readers._text import decode_text

__all__ = ["parse_delimited", "parse_delimited_report", "read_csv", "read_tsv", "sniff_delimiter"]

DELIMITERS: tuple[str, ...] = (",", "\t", ";", "|")
_SAMPLE_CHARS = 64 * 1024
_SAMPLE_ROWS = 200


def _rows(text: str, delimiter: str, **fmt: object) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, **fmt)  # type: ignore[arg-type]
    return list(reader)


def _sample_rows(text: str, delimiter: str) -> list[list[str]]:
    sample = text[:_SAMPLE_CHARS]
    if len(text) > _SAMPLE_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    return [r for r in parse_delimited(sample, delimiter)[:_SAMPLE_ROWS] if r]


def _consistency(text: str, delimiter: str) -> tuple[float, int]:
    """(share of sampled rows with the modal width, modal width) for one delimiter."""
    share, width, _ = _split_quality(text, delimiter)
    return share, width


def _split_quality(text: str, delimiter: str) -> tuple[float, int, bool]:
    """`_consistency` and whether the first sampled row has the modal width."""
    rows = _sample_rows(text, delimiter)
    widths = Counter(len(r) for r in rows)
    if not widths:
        return (0.0, 0, False)
    width, count = widths.most_common(1)[0]
    return (count / sum(widths.values()), width, len(rows[0]) == width)


def sniff_delimiter(text: str, preferred: str = ",") -> str:
    """Pick the delimiter (`,` tab `;` `|`) that splits the sample most consistently."""
    _ensure_field_limit()
    keys = {}
    for delim in (preferred, *(d for d in DELIMITERS if d != preferred)):
        share, width, header_fits = _split_quality(text, delim)
        keys[delim] = (width >= 2, header_fits, share >= 0.9, share, width)
        if delim == preferred and keys[delim][:3] == (True, True, True):
            return preferred  # nothing can rank above it on what decides
    best = max(keys, key=lambda d: keys[d])  # the first of equals: the preferred
    if keys[preferred][0] and keys[preferred][2] and keys[preferred][:3] == keys[best][:3]:
        return preferred
    return best


def _ensure_field_limit() -> None:
    # The csv default (128 KiB per field) rejects large cells; a 5 MB cell must load.
    if csv.field_size_limit() < sys.maxsize // 2:
        csv.field_size_limit(sys.maxsize // 2)


def _width_score(rows: list[list[str]]) -> float:
    widths = Counter(len(r) for r in rows if r)
    return widths.most_common(1)[0][1] / max(1, sum(widths.values())) if widths else 0.0


def parse_delimited(text: str, delimiter: str) -> list[list[str]]:
    """Parse delimited text into rows, recovering from backslash escapes and broken quotes."""
    return parse_delimited_report(text, delimiter)[0]


def parse_delimited_report(text: str, delimiter: str) -> tuple[list[list[str]], str | None]:
    """`parse_delimited`'s rows and, when broken quoting was recovered, what was done."""
    _ensure_field_limit()
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[list[str]] = []
    start = 1  # line where the record being read starts
    try:
        for row in reader:
            rows.append(row)
            start = reader.line_num + 1
        return rows, None
    except csv.Error as exc:
        where = f"line {start}: {exc}"
    if '\\"' in text:
        try:
            return _rows(text, delimiter, strict=True, escapechar="\\"), None
        except csv.Error:
            pass
    lenient = _rows(text, delimiter)
    n_lines = text.count("\n") + 1
    if len(lenient) < 0.5 * n_lines:
        plain = _rows(text, delimiter, quoting=csv.QUOTE_NONE)
        if _width_score(plain) >= _width_score(lenient):
            return plain, f"broken quoting ({where}): quotes were read as plain characters"
        swallowed = f"; an open quote kept {n_lines - len(lenient)} lines in one cell"
        return lenient, f"broken quoting ({where}): read leniently{swallowed}"
    return lenient, f"broken quoting ({where}): read leniently"


def _read(inp: ReadInput, preferred: str) -> list[Table]:
    text = decode_text(inp.data, inp.path, inp.warn)
    delimiter = sniff_delimiter(text, preferred)
    try:
        rows, repair = parse_delimited_report(text, delimiter)
    except csv.Error as exc:  # pragma: no cover - the lenient parser does not raise
        raise UnreadableTable(inp.path, f"unparseable delimited text ({exc})") from None
    if repair is not None:
        inp.warn(repair)
    rows = [r for r in rows if len(r) > 1 or (r and r[0].strip())]
    if not rows:
        raise UnreadableTable(inp.path, "no rows found (only blank lines)")
    inp.meter.grid(rows)  # before ragged rows are padded to the widest
    framed = split_title_and_notes(rows, delimiter)
    _warn_framing(framed, inp)
    fmt: Format = "tsv" if delimiter == "\t" else "csv"
    return [
        Table.from_rows(
            framed.rows, title=framed.title, notes=framed.notes, source=Source(format=fmt)
        )
    ]


def _quoted(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _warn_framing(framed: Framed, inp: ReadInput) -> None:
    if framed.n_title_lines:
        n = framed.n_title_lines
        what = "the title" if n == 1 else "the title and notes"
        inp.warn(f"{n} line(s) before the header read as {what}: {_quoted(framed.title or '')}")
    if framed.n_footer_lines:
        footer = framed.notes[-framed.n_footer_lines :]
        more = f" (+{len(footer) - 1} more)" if len(footer) > 1 else ""
        inp.warn(
            f"{len(footer)} line(s) after the data kept as table notes, not rows: "
            f"{_quoted(footer[0])}{more}"
        )


def read_csv(inp: ReadInput) -> list[Table]:
    """Read a CSV file (delimiter sniffed, `,` preferred)."""
    return _read(inp, ",")


def read_tsv(inp: ReadInput) -> list[Table]:
    """Read a TSV file (delimiter sniffed, tab preferred)."""
    return _read(inp, "\t")
