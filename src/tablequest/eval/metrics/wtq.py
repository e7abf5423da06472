"""WikiTableQuestions exact match: the official evaluator v1.0.2 rules, ported to Python 3.

Follows `evaluator.py` of ppasupat/WikiTableQuestions (v1.0.2) line by line: the same
`normalize`, the same String / Number / Date values, the same set-of-denotations check
(`check_denotation`), and the same `to_value(original, canon)` rule that builds gold values
from `targetCanon`. Differences from a naive Python 3 port that we undo, so the result equals
the original (Python 2) evaluator:

- `int()` / `float()` in Python 3 accept digit-group underscores (`"1_000"`); Python 2 did
  not, so text containing `_` never parses as a number or date here.
- Python 2 `re` matched `\\d` in the citation pattern against ASCII digits only (the pattern
  had no `re.U`); we compile it with `re.ASCII`.

Known quirks kept on purpose (they are the official behaviour): numbers with thousands
separators ("1,000") are strings unless `targetCanon` gives the number; a number within 1e-6
of an integer is truncated with `int()`; a date with only the year known is a number.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "normalize_text",
    "parse_date",
    "parse_number",
    "wtq_denotation",
    "wtq_match",
    "wtq_normalize",
]

_SINGLE_QUOTES = re.compile(r"[‘’´`]")
_DOUBLE_QUOTES = re.compile(r"[“”]")
_DASHES = re.compile(r"[‐‑‒–—−]")
_CITATIONS = re.compile(r"((?<!^)\[[^\]]*\]|\[\d+\]|[•♦†‡*#+])*$", re.ASCII)
_CITATIONS_PY3 = re.compile(r"((?<!^)\[[^\]]*\]|\[\d+\]|[•♦†‡*#+])*$")  # \d: any digit
_PARENTHESES = re.compile(r"(?<!^)( \([^)]*\))*$")
_OUTER_QUOTES = re.compile(r'^"([^"]*)"$')
_WHITESPACE = re.compile(r"\s+")


def wtq_normalize(text: str) -> str:
    """The official string normalization (diacritics, quotes, citations, parentheses…)."""
    return normalize_text(text)


def normalize_text(text: str, *, py3: bool = False) -> str:
    """`normalize` of the evaluator; `py3`: as the same code runs under Python 3 (its `\\d`
    matches any Unicode digit), as TableRAG's `evaluate.py` runs it."""
    citations = _CITATIONS_PY3 if py3 else _CITATIONS
    x = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn")
    x = _SINGLE_QUOTES.sub("'", x)
    x = _DOUBLE_QUOTES.sub('"', x)
    x = _DASHES.sub("-", x)
    while True:
        old_x = x
        x = citations.sub("", x.strip())
        x = _PARENTHESES.sub("", x.strip())
        x = _OUTER_QUOTES.sub(r"\1", x.strip())
        if x == old_x:
            break
    if x and x[-1] == ".":
        x = x[:-1]
    return _WHITESPACE.sub(" ", x).lower().strip()


@dataclass(frozen=True, eq=False)
class _String:
    normalized: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _String) and self.normalized == other.normalized

    def __hash__(self) -> int:
        return hash(self.normalized)

    def match(self, other: _Value) -> bool:
        return self.normalized == other.normalized


@dataclass(frozen=True, eq=False)
class _Number:
    amount: int | float
    normalized: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Number) and self.amount == other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def match(self, other: _Value) -> bool:
        if self.normalized == other.normalized:
            return True
        return isinstance(other, _Number) and abs(self.amount - other.amount) < 1e-6


@dataclass(frozen=True, eq=False)
class _Date:
    ymd: tuple[int, int, int]
    normalized: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Date) and self.ymd == other.ymd

    def __hash__(self) -> int:
        return hash(self.ymd)

    def match(self, other: _Value) -> bool:
        if self.normalized == other.normalized:
            return True
        return isinstance(other, _Date) and self.ymd == other.ymd


_Value = _String | _Number | _Date


def _int(text: str, py3: bool) -> int:
    if "_" in text and not py3:  # Python 2's int() refused digit-group underscores
        raise ValueError(text)
    return int(text)


def parse_number(text: str, *, py3: bool = False) -> int | float | None:
    """The evaluator's number reading (`int`, else a finite `float`); `py3`: Python 3's
    `int`/`float`, which accept digit-group underscores."""
    try:
        return _int(text, py3)
    except ValueError:
        pass
    if "_" in text and not py3:
        return None
    try:
        amount = float(text)
    except ValueError:
        return None
    if math.isnan(amount) or math.isinf(amount):
        return None
    return amount


def parse_date(text: str, *, py3: bool = False) -> tuple[int, int, int] | None:
    """The evaluator's ``yyyy-mm-dd`` reading (``xx`` for unknown parts), else None."""
    parts = text.lower().split("-")
    if len(parts) != 3:
        return None
    try:
        year = -1 if parts[0] in ("xx", "xxxx") else _int(parts[0], py3)
        month = -1 if parts[1] == "xx" else _int(parts[1], py3)
        day = -1 if parts[2] == "xx" else _int(parts[2], py3)
    except ValueError:
        return None
    if year == month == day == -1:
        return None
    if not (month == -1 or 1 <= month <= 12) or not (day == -1 or 1 <= day <= 31):
        return None
    return (year, month, day)


def _number(amount: int | float, original: str) -> _Number:
    value: int | float = int(amount) if abs(amount - round(amount)) < 1e-6 else float(amount)
    # The official code only formats the amount when the original string is empty, which
    # cannot happen for a string that parsed as a number; `normalize` covers every case.
    return _Number(value, wtq_normalize(original) if original else str(value))


def _to_value(original: str, canon: str | None = None) -> _Value:
    source = canon if canon else original
    amount = parse_number(source)
    if amount is not None:
        return _number(amount, original)
    ymd = parse_date(source)
    if ymd is not None:
        if ymd[1] == ymd[2] == -1:
            return _number(ymd[0], original)
        if original:
            return _Date(ymd, wtq_normalize(original))
        # Official quirk: the day placeholder is compared with the string '-1', so an unknown
        # day prints as -1 (only reachable with an empty original string).
        y, m, d = ymd
        return _Date(ymd, f"{y if y != -1 else 'xx'}-{m if m != -1 else 'xx'}-{d}")
    return _String(wtq_normalize(original))


def _to_value_set(originals: Sequence[str], canons: Sequence[str] | None = None) -> set[_Value]:
    if canons is None:
        return {_to_value(x) for x in originals}
    return {_to_value(x, y) for x, y in zip(originals, canons, strict=True)}


def wtq_match(
    prediction: Sequence[str],
    target_values: Sequence[str],
    target_canon: Sequence[str] | None = None,
) -> bool:
    """True iff the predicted denotation is correct under the official WTQ rules.

    Args:
        prediction: predicted items (a list answer; see `wtq_denotation` for splitting text).
        target_values: gold `targetValue` items.
        target_canon: gold `targetCanon` items (same length), when the tagged file has them.
            A non-empty canon decides whether a gold item is a number, date or string.

    Raises:
        TypeError: a bare string was passed instead of a list of items.
        ValueError: `target_canon` and `target_values` differ in length.
    """
    for name, arg in (("prediction", prediction), ("target_values", target_values)):
        if isinstance(arg, str):
            raise TypeError(f"{name} must be a list of strings, got the string {arg!r}")
    if target_canon is not None and len(target_canon) != len(target_values):
        raise ValueError(
            f"target_canon has {len(target_canon)} items but target_values has "
            f"{len(target_values)}: {list(target_canon)!r} vs {list(target_values)!r}"
        )
    targets = _to_value_set(target_values, target_canon)
    predicted = _to_value_set(prediction)
    if len(targets) != len(predicted):
        return False
    return all(any(t.match(p) for p in predicted) for t in targets)


def wtq_denotation(answer_text: str) -> list[str]:
    """Split a model's answer text into WTQ denotation items.

    Items are separated by `|` (the WTQ list separator); each item is stripped and empty
    items are dropped, so `"a | b"` → `["a", "b"]` and `""` → `[]`.
    """
    return [item.strip() for item in answer_text.split("|") if item.strip()]
