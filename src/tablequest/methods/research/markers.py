"""Implicit metadata in header and cell text: units, temporal markers, aggregation labels, numbers.

DTR §3.1 ("Meta Information Extraction") asks for "implicit metadata such as measurement
units, temporal or categorical markers, and aggregation indicators" without saying how they
are found. Ours are deterministic text rules (no LLM), applied to header labels, titles and
cell values:

- **Units** (`find_unit`): a parenthesised or bracketed unit ("(%)", "[kg]", "(in millions)",
  "(thousands of dollars)"), "in/of thousands|millions|billions", currency signs and codes
  ("$", "€", "USD"), "percent"/"per cent"/"%", "rate per 100,000", and a fixed list of
  measurement words (kg, km, tonnes, hours, …). A header label that is *only* a unit word
  ("percent", "number", "dollars") is a unit row label (HiTab and StatCan tables put the unit of
  the rows below in such a row). Values: a column whose numbers carry "%" or a currency sign
  gets that unit.
- **Temporal** (`temporal_kind`): years 1800–2099, year ranges ("2019-20", "1982/83"),
  fiscal years ("FY2020"), quarters ("Q3", "2020 Q1"), month names, ISO dates.
- **Aggregation** (`is_aggregate_label`): "total", "subtotal", "sum", "all …", "overall",
  "grand total", "… total", "total …", "average"/"mean"/"median" as a whole label, "both sexes".
  These rows and columns are flagged so a later sum does not count them twice.
- **Numbers** (`parse_number`): "1,234", "-3.5", "(12)" (negative), "12%", "$9,307", "4.2e3",
  footnote letters or marks after a number ("52a", "12*"); statistical placeholders
  ("..", "x", "-", "n/a") are missing values (None), not text.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

__all__ = [
    "TemporalKind",
    "find_unit",
    "is_aggregate_label",
    "is_missing",
    "is_unit_label",
    "parse_number",
    "temporal_kind",
    "value_unit",
]

TemporalKind = Literal["year", "year_range", "fiscal_year", "quarter", "month", "date"]

_SPACE = re.compile(r"\s+")
_MISSING = frozenset(
    {"", "-", "--", "—", "–", "..", "...", "…", "x", "X", "f", "F", "n/a", "N/A", "na", "NA"}
    | {"nan", "NaN", "null", "None", "#DIV/0!", "#N/A", "#VALUE!", "#REF!", "s", "(s)", "*"}
)
_NUMBER = re.compile(
    r"^(?P<open>\()?\s*(?P<sign>[-+−–])?\s*(?P<cur>[$€£¥])?\s*(?P<sign2>[-+−–])?\s*"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE](?P<exp>[-+]?\d+))?"
    r"\s*(?P<pct>%)?\s*(?P<close>\))?\s*(?P<mark>[*†‡]{1,3}|[a-zA-Z]{1,2})?$"
)
_CURRENCY_CODES = r"(?:USD|EUR|GBP|JPY|CNY|CAD|AUD|RMB|US\$)"
_MEASURES = (
    r"kg|kilograms?|g|grams?|mg|tonnes?|tons?|lbs?|pounds|km|kilomet(?:re|er)s?|m|met(?:re|er)s?|"
    r"cm|mm|miles?|acres?|hectares?|ha|sq\.? ?(?:ft|km|mi)|litres?|liters?|l|ml|gallons?|barrels?|"
    r"kwh|mwh|gwh|mw|kw|btu|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|"
    r"°c|°f|degrees?|pp|percentage points?"
)
_BRACKETED = re.compile(r"[(\[]\s*([^()\[\]]{1,40}?)\s*[)\]]")
_SCALE = re.compile(
    r"\b(?:in|of)\s+(thousands|millions|billions|hundreds|trillions)(?:\s+of\s+([a-z$€£ ]{1,30}))?",
    re.I,
)
_PERCENT = re.compile(r"%|\bper\s?cent(?:age)?\b|\bpct\b", re.I)
_RATE = re.compile(r"\b(?:rate\s+)?per\s+(1,?000|10,?000|100,?000|1,?000,?000|capita)\b", re.I)
_CURRENCY = re.compile(rf"[$€£¥]|\b{_CURRENCY_CODES}\b|\b(?:dollars?|euros?|pounds sterling)\b")
_MEASURE = re.compile(rf"^(?:{_MEASURES})$", re.I)
_UNIT_WORDS = re.compile(
    r"^(?:percent(?:age)?(?:\s+(?:distribution|change|share))?|per cent|%|number|numbers|count|"
    r"dollars|thousands(?:\s+of\s+dollars)?|millions(?:\s+of\s+dollars)?|rate|ratio|index|"
    r"proportion|share|frequency|average|mean|median|"
    r"(?:constant|current)\s+dollars|\$|\$?\s*(?:thousands|millions|billions))$",
    re.I,
)

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_TEMPORAL: list[tuple[TemporalKind, re.Pattern[str]]] = [
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?$")),
    ("fiscal_year", re.compile(r"^(?:fy|fiscal(?: year)?)\s?'?(?:18|19|20)?\d{2}\b", re.I)),
    ("quarter", re.compile(r"^(?:(?:18|19|20)\d{2}\s*)?q[1-4](?:\s*(?:18|19|20)\d{2})?$", re.I)),
    ("year_range", re.compile(r"^(?:18|19|20)\d{2}\s*[-–/]\s*(?:(?:18|19|20)?\d{2})$")),
    ("year", re.compile(r"^(?:18|19|20)\d{2}(?:\s*[*†‡a-z]{0,2})?$")),
    ("month", re.compile(rf"^(?:{_MONTHS})\.?(?:\s+(?:18|19|20)\d{{2}})?$", re.I)),
]
_AGGREGATE = re.compile(
    r"^(?:grand\s+)?(?:sub-?\s?)?totals?\b|\btotals?$|^sum\b|^all\b(?!\s+other)|^overall\b|"
    r"^(?:average|mean|median)$|^both sexes$|^all (?:ages|persons|people|industries|regions)",
    re.I,
)


@functools.lru_cache(maxsize=1 << 16)
def clean_label(text: str) -> str:
    """Collapse whitespace and strip (header labels as the graph stores them)."""
    return _SPACE.sub(" ", text).strip()


def is_missing(text: str) -> bool:
    """True for empty cells and statistical placeholders (.., x, -, n/a, #DIV/0!)."""
    return text.strip() in _MISSING


_PLAIN = re.compile(r"^-?\d+(?:\.\d+)?$")


@functools.lru_cache(maxsize=1 << 16)
def parse_number(text: str) -> float | None:
    """The number a cell shows, or None (see the module docstring for the accepted forms)."""
    if _PLAIN.match(text):
        return float(text)
    s = text.strip().replace("\u2212", "-").replace("\xa0", " ")
    if not s or len(s) > 40:
        return None
    m = _NUMBER.match(s)
    if m is None:
        return None
    if bool(m.group("open")) != bool(m.group("close")):
        return None
    value = float(m.group("num").replace(",", ""))
    if m.group("exp"):
        value *= 10 ** int(m.group("exp"))
    signs = (m.group("sign") or "") + (m.group("sign2") or "")
    negative = bool(m.group("open")) or any(c in "-−–" for c in signs)
    return -value if negative else value


def value_unit(text: str) -> str | None:
    """The unit a number cell carries itself: "%" or a currency sign, else None."""
    s = text.strip()
    if parse_number(s) is None:
        return None
    if "%" in s:
        return "%"
    cur = re.search(r"[$€£¥]", s)
    return cur.group(0) if cur else None


def find_unit(label: str) -> str | None:
    """The unit a header label or title states, normalized ("%", "$", "thousands", "kg", …)."""
    text = clean_label(label)
    if not text:
        return None
    scale = _SCALE.search(text)
    if scale:
        what = (scale.group(2) or "").strip().lower()
        return f"{scale.group(1).lower()}{' of ' + what if what else ''}"
    for inner in _BRACKETED.findall(text):
        unit = _bracketed_unit(inner)
        if unit:
            return unit
    if _PERCENT.search(text):
        return "%"
    rate = _RATE.search(text)
    if rate:
        return f"per {rate.group(1)}"
    currency = _CURRENCY.search(text)
    if currency:
        return "$" if re.search(r"\$|dollar", text, re.I) else currency.group(0)
    if _UNIT_WORDS.match(text):
        return text.lower()
    return None


def _bracketed_unit(inner: str) -> str | None:
    inner = inner.strip()
    if _PERCENT.fullmatch(inner) or inner == "%":
        return "%"
    if _MEASURE.match(inner):
        return inner.lower()
    if _CURRENCY.fullmatch(inner):
        return inner
    head = inner.split()[0] if inner.split() else ""
    if _CURRENCY.fullmatch(head) or _MEASURE.match(head):
        return inner.lower()
    rate = _RATE.search(inner)
    return f"per {rate.group(1)}" if rate else None


def is_unit_label(label: str) -> bool:
    """True when the whole label is a unit word ("percent", "number", "dollars", "%", "kg")."""
    text = clean_label(label)
    return bool(_UNIT_WORDS.match(text) or _MEASURE.match(text))


@functools.lru_cache(maxsize=1 << 14)
def temporal_kind(label: str) -> TemporalKind | None:
    """Which temporal marker the label is (year, quarter, …), or None."""
    text = clean_label(label)
    if not text or len(text) > 30:
        return None
    for kind, rx in _TEMPORAL:
        if rx.match(text):
            return kind
    return None


def is_aggregate_label(label: str) -> bool:
    """True for labels of total / subtotal / all / overall rows and columns."""
    text = clean_label(label)
    return bool(text) and len(text) <= 60 and bool(_AGGREGATE.search(text))
