"""Column dtypes for `Table.to_dataframe()`: numbers, booleans and dates where a column is
consistent.

Cells are strings in the table model; the DataFrame types a column only when every filled
body cell of it reads one way, so nothing is guessed from a majority. The rule (ours; header
rows never count, each column is judged on its own except for the decimal-comma evidence):

- **Missing**: a cell that is empty after stripping, or one of `na n/a nan null none - – — ..
  ... …` (any case), is missing: NaN in a number column, NaT in a date column. A column with
  no filled cell keeps its strings.
- **Numbers**: every filled cell is an optional sign (`+`, `-`, `−`) and digits written in one
  style: plain (`12`, `-3.5`, `.5`, `4.2e3`), English grouping (`1,234`, `1,234,567.5`), or
  decimal comma (`12,5`, `1.234,5`, `1.234.567`). Nothing else is stripped: `12%`, `$9`,
  `1 234`, `(3)` leave the column as text. Integers with a leading zero (`007`, `01067`) are
  codes, not numbers: the column stays text. The column is int64 when every cell is a whole
  number written without a fraction and none is missing, else float64; integers beyond
  int64 (or beyond 2**53 with a missing cell) stay text rather than lose digits.
- **Decimal comma**: `12,5` and `1.234,5` can only be decimal-comma; `12.5`, `1,234.5` and
  `1,234,567` only English. `1,234` and `1.234` are both (thousands in one style, a fraction in
  the other). A column whose cells all read in one style only is read in it; a column whose
  cells all read both ways follows the table: decimal-comma when some other column of the
  table is decimal-comma only and none is English only, English when no column decides
  (so `1,234` in an English CSV is 1234), and text when the table has columns of both kinds.
  A column mixing `12,5` with `12.5` is text. (The delimiter is not consulted: a German
  semicolon file nearly always has a `12,5`-style cell somewhere, which decides.)
- **Dates**: every filled cell has the same one of these forms and is a real date (no
  2024-02-30): ISO `2024-03-31` (optionally `T`/space and `HH:MM[:SS[.fff]]`, no time zone),
  dotted day-first `31.03.2024` (optionally ` HH:MM[:SS]`), or slashed `d/m/yyyy`. Slashed
  dates are read only with evidence: day-first when some first part is above 12 and no second
  part is, month-first the other way round; with no such evidence (`01/02/2024` only) or
  conflicting evidence the column stays text. Dates outside what datetime64 holds stay text.
  Numbers are tried first, so a column of years (`2020`) is int64.
- **Booleans**: every filled cell is `true` or `false` in any case (`True`, `FALSE`; spaces
  around ignored): bool, or pandas' nullable `boolean` when a cell is missing (NA). Only those
  two words (ours): `yes`/`no` and `y`/`n` stay text — they are as often answers or
  categories compared as words (`Won?` = `yes`) — `t`/`f` too, and `1`/`0` are numbers.
  The cell's own text is kept in the table (`show` prints `TRUE` as it was written).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MISSING", "is_missing", "parse_bool_column", "parse_date_column", "parse_number"]
__all__ += ["type_columns"]

MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "-", "–", "—", "..", "...", "…"})

Style = Literal["en", "de"]
Number = int | float

_PLAIN_INT = re.compile(r"\d+")
_PLAIN = re.compile(r"(?:\d+\.\d+|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_EN_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DE_COMMA = re.compile(r"\d+,\d+")
_DE_GROUPED = re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?")
_LEADING_ZERO = re.compile(r"0\d")
_MAX_EXACT_FLOAT = 2**53
_INT64 = 2**63

_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?)?"
)
_DOTTED = re.compile(r"(\d{1,2})\.(\d{1,2})\.(\d{4})(?: (\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_SLASHED = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})")
_BOOLEANS = {"true": True, "false": False}


def is_missing(text: str) -> bool:
    """True for an empty cell or a missing-value marker (module docstring)."""
    return text.strip().lower() in MISSING


def _read(unsigned: str, style: Style) -> Number | None:
    if _PLAIN_INT.fullmatch(unsigned):
        return int(unsigned)
    if style == "en":
        if _PLAIN.fullmatch(unsigned):
            return float(unsigned)
        if _EN_GROUPED.fullmatch(unsigned):
            plain = unsigned.replace(",", "")
            return float(plain) if "." in plain else int(plain)
        return None
    if _DE_COMMA.fullmatch(unsigned) or _DE_GROUPED.fullmatch(unsigned):
        plain = unsigned.replace(".", "").replace(",", ".")
        return float(plain) if "." in plain else int(plain)
    return None


def parse_number(text: str, style: Style) -> Number | None:
    """The number `text` writes in `style` ("en": 1,234.5; "de": 1.234,5), else None."""
    s = text.strip().replace("−", "-")
    sign = -1 if s[:1] == "-" else 1
    unsigned = s[1:] if s[:1] in "+-" and s else s
    if not unsigned or _LEADING_ZERO.match(unsigned):
        return None
    value = _read(unsigned, style)
    return None if value is None else sign * value


@dataclass(frozen=True)
class _NumberColumn:
    """How one column reads as numbers in each style (None: not in that style)."""

    en: list[Number | None] | None
    de: list[Number | None] | None

    @property
    def same(self) -> bool:
        return self.en is not None and self.en == self.de


def _reading(text: str) -> tuple[Number | None, Number | None] | None:
    """(English reading, decimal-comma reading) of a filled cell; None for a missing one."""
    if is_missing(text):
        return None
    if text.isascii() and text.isdigit() and not _LEADING_ZERO.match(text):  # common case
        return int(text), int(text)
    return parse_number(text, "en"), parse_number(text, "de")


def _number_readings(values: Sequence[str]) -> _NumberColumn:
    """Both styles' readings of a column, stopping once neither style can read it."""
    en: list[Number | None] = []
    de: list[Number | None] = []
    en_ok = de_ok = True
    filled = False
    for v in values:
        pair = _reading(v)
        if pair is None:
            en.append(None)
            de.append(None)
            continue
        filled = True
        en_ok, de_ok = en_ok and pair[0] is not None, de_ok and pair[1] is not None
        if not (en_ok or de_ok):
            return _NumberColumn(None, None)
        en.append(pair[0])
        de.append(pair[1])
    if not filled:
        return _NumberColumn(None, None)
    return _NumberColumn(en if en_ok else None, de if de_ok else None)


def _number_series(values: list[Number | None]) -> pd.Series | None:
    import numpy as np
    import pandas as pd

    present = [v for v in values if v is not None]
    ints = all(isinstance(v, int) for v in present)
    if ints and len(present) == len(values):
        if any(abs(v) >= _INT64 for v in present):
            return None
        return pd.Series(values, dtype=np.int64)
    if ints and any(abs(v) > _MAX_EXACT_FLOAT for v in present):
        return None
    return pd.Series([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def _slash_order(matches: list[re.Match[str]]) -> Literal["dmy", "mdy"] | None:
    firsts = [int(m.group(1)) for m in matches]
    seconds = [int(m.group(2)) for m in matches]
    day_first = any(v > 12 for v in firsts)
    month_first = any(v > 12 for v in seconds)
    if day_first == month_first:
        return None
    return "dmy" if day_first else "mdy"


def _to_datetime(m: re.Match[str], kind: str) -> dt.datetime:
    g = [int(x) if x is not None and x.isdigit() else 0 for x in m.groups()]
    g += [0] * (7 - len(g))
    if kind == "iso":
        frac = m.group(7) or ""
        micro = int(frac.ljust(6, "0")) if frac else 0
        return dt.datetime(g[0], g[1], g[2], g[3], g[4], g[5], micro)
    if kind == "dmy":
        return dt.datetime(g[2], g[1], g[0], g[3], g[4], g[5])
    return dt.datetime(g[2], g[0], g[1])  # "mdy": slashed dates have no time


def parse_date_column(values: Sequence[str]) -> list[dt.datetime | None] | None:
    """Every value read as a date in one form (missing → None), or None (module docstring)."""
    filled = [v.strip() for v in values if not is_missing(v)]
    if not filled:
        return None
    for pattern, kind in ((_ISO, "iso"), (_DOTTED, "dmy"), (_SLASHED, "slash")):
        if not pattern.fullmatch(filled[0]):
            continue
        found = []
        for v in filled:
            m = pattern.fullmatch(v)
            if m is None:
                return None  # a second form in the column (or text): not one date form
            found.append(m)
        order = _slash_order(found) if kind == "slash" else kind
        if order is None:
            return None
        try:
            parsed = iter([_to_datetime(m, order) for m in found])
        except ValueError:
            return None
        return [None if is_missing(v) else next(parsed) for v in values]
    return None


def parse_bool_column(values: Sequence[str]) -> list[bool | None] | None:
    """Every value read as true/false (missing → None), or None (module docstring)."""
    out: list[bool | None] = []
    filled = False
    for v in values:
        if is_missing(v):
            out.append(None)
            continue
        flag = _BOOLEANS.get(v.strip().lower())
        if flag is None:
            return None
        filled = True
        out.append(flag)
    return out if filled else None


def _bool_series(values: Sequence[str]) -> pd.Series | None:
    import pandas as pd

    flags = parse_bool_column(values)
    if flags is None:
        return None
    return pd.Series(flags, dtype="boolean" if None in flags else bool)


def _date_series(values: Sequence[str]) -> pd.Series | None:
    import pandas as pd

    dates = parse_date_column(values)
    if dates is None:
        return None
    try:
        series = pd.to_datetime(pd.Series(dates, dtype=object))
    except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError):
        return None
    return series if pd.api.types.is_datetime64_any_dtype(series) else None


def _number_style(readings: dict[str, _NumberColumn]) -> Style | None:
    """The style for columns that read both ways: the table's evidence (module docstring)."""
    de_only = any(r.de is not None and r.en is None for r in readings.values())
    en_only = any(r.en is not None and r.de is None for r in readings.values())
    if de_only and en_only:
        return None
    return "de" if de_only else "en"


def _numbers(reading: _NumberColumn, table_style: Style | None) -> list[Number | None] | None:
    if reading.same or (reading.en is not None and reading.de is None):
        return reading.en
    if reading.de is not None and reading.en is None:
        return reading.de
    if reading.en is None or table_style is None:
        return None
    return reading.en if table_style == "en" else reading.de


def type_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (strings, object dtype) with number, boolean and date columns typed (module
    docstring)."""
    import pandas as pd

    texts = {str(name): [str(v) for v in frame[name]] for name in frame.columns}
    readings = {name: _number_readings(values) for name, values in texts.items()}
    style = _number_style(readings)
    columns: dict[str, pd.Series] = {}
    for name, values in texts.items():
        numbers = _numbers(readings[name], style)
        series = _number_series(numbers) if numbers is not None else None
        if series is None:
            series = _bool_series(values)
        if series is None:
            series = _date_series(values)
        columns[name] = series if series is not None else pd.Series(values, dtype=object)
    out = pd.DataFrame(columns)
    out.index = frame.index
    return out
