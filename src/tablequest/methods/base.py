"""The Method interface and the Result every method returns.

A method answers a question from a source (a Store for corpus methods, a Table for single-table
methods). The Result carries the answer, a status, the cells that support it, the tables the
method consulted (ids; the CLI maps them to the user's source paths), usage and the trace path.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tablequest.llm.usage import UsageTotals
from tablequest.table import CellRef, Table

Status = Literal["answered", "insufficient", "failed"]
Task = Literal["tableqa", "fact_verification"]


@dataclass
class Result:
    """What a method found. `tables_consulted` are the tables given to QA, in order."""

    answer: str | None
    status: Status
    tables_consulted: list[str] = field(default_factory=list)
    final_table: str | None = None
    evidence: list[CellRef] = field(default_factory=list)
    steps: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)
    trace_path: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Method(Protocol):
    """One small interface: answer a question from a source."""

    name: str

    def answer(self, question: str, source: Any, *, task: Task = "tableqa") -> Result: ...


_CITATION = re.compile(r"\s*\[[^\]]*\]\s*$")


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _CITATION.sub("", text)
    return " ".join(re.sub(r"[^\w.%-]+", " ", text.lower()).split())


def locate_evidence(table: Table, table_id: str, answer: str, *, limit: int = 20) -> list[CellRef]:
    """Body cells whose text equals one of the answer's items (split on '|' and ', ').

    An LLM-free evidence locator (ours): used when the model cites no cells. Numbers are
    compared after removing thousands separators.
    """
    items = {_norm(a) for a in re.split(r"\s*\|\s*|,\s+|;\s*", answer) if a.strip()}
    items |= {i.replace(",", "") for i in items}
    items.discard("")
    found: list[CellRef] = []
    for r, row in enumerate(table.body):
        for c, value in enumerate(row):
            norm = _norm(value)
            if norm and (norm in items or norm.replace(",", "") in items):
                found.append(CellRef(table_id, table.row_ids[r], table.col_ids[c], value))
                if len(found) >= limit:
                    return found
    return found
