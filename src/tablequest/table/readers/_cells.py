"""Cell helpers shared by readers: JSON-ish value rendering and a numeric test."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

from tablequest.table.model import cell_text

__all__ = ["looks_numeric", "value_text"]

_NUMERIC = re.compile(
    r"^[(\[]?[-+−–]?\s*[$€£¥]?\s*[-+−–]?\d[\d,.\s']*(?:[eE][-+]?\d+)?\s*%?[)\]]?[*†‡a-zA-Z]{0,2}$"
)
# Statistical placeholders for missing or suppressed values count as numeric-body cells.
_PLACEHOLDERS = frozenset({"-", "--", "—", "–", "..", "...", "…", "x", "f", "e", "n/a", "na"})


def looks_numeric(text: str) -> bool:
    """True for numbers as people write them (1,094 | -3.5% | $9,307 | (12) | 4.2e3 | 52a)."""
    s = text.strip()
    if not s:
        return False
    return bool(_NUMERIC.match(s)) or s.lower() in _PLACEHOLDERS


def value_text(value: object) -> str:
    """Render a parsed value (JSON, Parquet, SQLite, xlsx) as cell text.

    None → "", booleans → "true"/"false", floats without noise (0.30000000000000004 → "0.3"),
    midnight datetimes as dates, lists and dicts as compact JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return "" if value != value else str(value)
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return format(value, ".15g")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return cell_text(value)
