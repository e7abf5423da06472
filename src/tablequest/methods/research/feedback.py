"""Parameterized execution feedback f(π) and the reward r = φ(f) (DTR §3.4, Eq. 4); answers.

    f(π) = (f_exec ∈ {0, 1}, f_time ∈ R+, f_type ∈ {0, 1})                  (Eq. 4)

- f_exec: every operation's code ran without an error (a sandbox timeout, memory error or
  refused system call is an error: the program was contained, the path failed).
- f_time: seconds the path's programs ran in the sandbox (host-measured).
- f_type: the output matches what the query implies (`type_ok`): ranking → an ordered list
  (list, Series or frame with ≥ 1 item); aggregation → a scalar number; comparison → a boolean
  or a pair (or yes/no text); fact_check → a boolean or yes/no text; lookup → a non-empty
  value; chart → a figure; analysis → non-empty text or value. An intermediate operation whose
  output is empty (a filter that kept no row) also makes the outcome invalid (§3.4: "intermediate
  result validity").

φ (ours; the paper leaves it open): r = f_exec · (w_type·f_type + (1 − w_type)·exp(−f_time/τ)),
so r ∈ [0, 1] (R_max = 1), a failed program earns 0, a well-typed fast one nearly 1, and a run
that works but answers in the wrong shape keeps only the time part.

Query types are the model's (MOD) or, without it, `guess_query_type`'s keyword rules.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "QUERY_TYPES",
    "Feedback",
    "Probe",
    "QueryType",
    "guess_query_type",
    "parse_probe",
    "render_answer",
    "reward",
    "type_ok",
]

QueryType = Literal[
    "lookup", "aggregation", "ranking", "comparison", "fact_check", "chart", "analysis"
]
QUERY_TYPES: tuple[QueryType, ...] = (
    "lookup",
    "aggregation",
    "ranking",
    "comparison",
    "fact_check",
    "chart",
    "analysis",
)
EXPECTED: dict[str, str] = {
    "lookup": "the value(s) asked for",
    "aggregation": "a single number",
    "ranking": "an ordered list (list or pandas Series, best first)",
    "comparison": "a boolean, or the pair of compared values",
    "fact_check": "a boolean (True if the statement holds)",
    "chart": "a matplotlib figure (leave it open; do not call plt.show())",
    "analysis": "a short text with the findings and the key numbers",
}
PROBE_MARK = "__DTR_PROBE__"
CHART_MARK = "__DTR_CHART__"
_YES = {"yes", "true", "supported", "entailed", "correct"}
_NO = {"no", "false", "refuted", "incorrect"}


@dataclass
class Feedback:
    """f(π) of one executed path."""

    f_exec: int
    f_time: float
    f_type: int


@dataclass
class Probe:
    """What a program's ``result`` was, as the sandbox described it."""

    kind: str = "none"
    size: int = 0
    items: list[Any] = field(default_factory=list)
    index: list[Any] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    range_index: bool = True

    @property
    def empty(self) -> bool:
        return self.kind in ("list", "series", "frame", "dict") and self.size == 0


def parse_probe(stdout: str) -> tuple[Probe | None, str]:
    """The probe in a run's stdout (the marker line) and the rest of the output."""
    probe = None
    kept = []
    for line in stdout.splitlines():
        if line.startswith(PROBE_MARK):
            try:
                data = json.loads(line[len(PROBE_MARK) :])
                probe = Probe(**{k: v for k, v in data.items() if k in Probe.__dataclass_fields__})
            except (ValueError, TypeError):
                probe = None
        else:
            kept.append(line)
    return probe, "\n".join(kept)


def reward(f: Feedback, *, w_type: float = 0.8, time_scale: float = 10.0) -> float:
    """r = φ(f) ∈ [0, 1] (see the module docstring)."""
    if not f.f_exec:
        return 0.0
    return w_type * f.f_type + (1.0 - w_type) * math.exp(-max(0.0, f.f_time) / time_scale)


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        try:
            float(value.replace(",", "").rstrip("%"))
        except ValueError:
            return False
        return True
    return False


def _boolean(probe: Probe) -> bool:
    if probe.kind == "bool":
        return True
    return probe.kind == "text" and bool(probe.items) and _yes_no(str(probe.items[0])) is not None


def _yes_no(text: str) -> bool | None:
    word = text.strip().strip(".!").lower()
    return True if word in _YES else False if word in _NO else None


def type_ok(query_type: str, probe: Probe | None, figures: int = 0) -> bool:
    """f_type: does the final output have the shape the query implies?"""
    if query_type == "chart":
        return figures > 0
    if probe is None or probe.kind == "none" or probe.empty:
        return False
    sequence = probe.kind in ("list", "series", "frame", "dict")
    if query_type == "ranking":
        return sequence and probe.size >= 1
    if query_type == "aggregation":
        one = probe.kind == "number" or (sequence and probe.size == 1)
        return one and bool(probe.items) and _number(_first(probe.items))
    if query_type in ("comparison", "fact_check"):
        pair = query_type == "comparison" and sequence and probe.size == 2
        return _boolean(probe) or pair
    if query_type == "analysis":
        return probe.kind != "text" or bool(str(_first(probe.items) or "").strip())
    return probe.kind != "text" or bool(str(_first(probe.items) or "").strip())


def _first(items: list[Any]) -> Any:
    if not items:
        return None
    head = items[0]
    return head[0] if isinstance(head, list) and head else head


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}" if abs(value) >= 1e-4 else repr(value)
    return " ".join(str(value).split())


def render_answer(query_type: str, probe: Probe | None, *, figures: int = 0) -> str:
    """The answer text of a path's final output (items joined by ", ")."""
    if query_type == "chart":
        return f"chart ({figures} figure{'s' if figures != 1 else ''})" if figures else ""
    if probe is None or probe.kind == "none":
        return ""
    if probe.kind == "bool" or (query_type == "fact_check" and probe.kind == "text"):
        value = probe.items[0] if probe.items else None
        verdict = value if isinstance(value, bool) else _yes_no(str(value or ""))
        if verdict is not None and query_type in ("fact_check", "comparison"):
            return "true" if verdict else "false"
    if probe.kind in ("number", "text", "bool", "other"):
        return _fmt(probe.items[0]) if probe.items else ""
    if probe.kind == "series" and query_type == "ranking" and not probe.range_index:
        return ", ".join(_fmt(v) for v in probe.index)
    if probe.kind == "frame":
        rows = probe.items
        if rows and all(isinstance(r, list) and len(r) == 1 for r in rows):
            return ", ".join(_fmt(r[0]) for r in rows)
        if query_type == "ranking" and not probe.range_index:
            return ", ".join(_fmt(v) for v in probe.index)
        return "; ".join(", ".join(_fmt(v) for v in r) for r in rows if isinstance(r, list))
    return ", ".join(_fmt(v) for v in probe.items)


_CHART = r"\b(chart|plot|graph|visuali[sz]e|draw|histogram|pie|bar|scatter)"
_RANK = r"\b(rank|top[ -]\d+|order (?:by|of)|sort|list the .* (?:highest|largest))"
_FACT = r"^(?:is|are|was|were|does|do|did|has|have|can)\b|\b(true or false|verify|check whether)"
_COMPARE = r"\b(compare|more than|less than|higher than|lower than|difference between|versus)\b"
_AGG = r"\b(total|sum|average|mean|median|how many|count|number of|percentage|rate|ratio|growth)\b"
_ANALYSIS = r"\b(analy[sz]e|trend|correlat|summar|explain|insight|report|why)"
_RULES: list[tuple[QueryType, re.Pattern[str]]] = [
    ("chart", re.compile(_CHART, re.I)),
    ("ranking", re.compile(_RANK, re.I)),
    ("fact_check", re.compile(_FACT, re.I)),
    ("comparison", re.compile(_COMPARE, re.I)),
    ("aggregation", re.compile(_AGG, re.I)),
    ("analysis", re.compile(_ANALYSIS, re.I)),
]


def guess_query_type(question: str, task: str = "tableqa") -> QueryType:
    """Keyword rules for the query type when the model gives none (first match wins)."""
    if task == "fact_verification":
        return "fact_check"
    for query_type, rx in _RULES:
        if rx.search(question):
            return query_type
    return "lookup"
