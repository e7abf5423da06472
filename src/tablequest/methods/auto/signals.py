"""Cheap routing signals: computed from the table model and the question, no LLM.

Table signals (`table_signals`): size (cells, and serialized tokens estimated as
(characters + 3 per cell) / 4 — a cell costs its text plus a separator and a space in every
text serialization, and ~4 characters make a token for English-like text: the estimate
`llm.base.estimate_tokens` uses; tables over `SAMPLE_ROWS` rows are measured on an even
sample of that many rows and scaled, since the threshold it is compared with is coarse),
header levels on both axes, merged ranges, and aggregation rows / columns (a row whose first
non-empty cell, or a column whose header, reads "Total", "Subtotal", "Sum", "All",
"Overall", "Grand total", … — DTR's implicit metadata; the method itself builds the full
meta graph). ≤ 20 ms for 10^5 cells (`benchmarks/auto_signals.py`).

Question signals (`question_signals`): an analytical, chart or report request ("plot",
"chart", "trend", "grew fastest", "analyze", "report", "correlation", …) and a plain lookup
(a question without counting, ordering, comparison or arithmetic words).

Choices (ours; none of the papers routes between methods): word lists below, matched as
whole words, case-insensitively; documented in docs/methods.md.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from tablequest.table import Table

_AGGREGATE = re.compile(
    r"^\s*(grand\s+total|sub-?total|total|totals|sum|all|overall|aggregate)\b",
    re.IGNORECASE | re.MULTILINE,
)
SAMPLE_ROWS = 1000
_ANALYTICAL = re.compile(
    r"\b(plot|chart|graph|visuali[sz]e|visuali[sz]ation|draw|trend|trends|analy[sz]e|analysis|"
    r"report|summari[sz]e|correlat\w*|distribution|forecast|grew|growth|fastest|slowest|"
    r"over time|year[- ]over[- ]year|insights?)\b",
    re.IGNORECASE,
)
_NOT_LOOKUP = re.compile(
    r"\b(how many|number of|count|total|sum|average|mean|median|most|least|highest|lowest|"
    r"largest|smallest|biggest|greatest|fewest|max(imum)?|min(imum)?|first|last|before|after|"
    r"previous|next|difference|more|less|fewer|than|compare|rank(ed|ing)?|top|bottom|percent"
    r"(age)?|ratio|each|per|every|longest|shortest|earliest|latest|same|both|either|"
    r"consecutive|between|above|below|older|younger|oldest|youngest)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TableSignals:
    """What the router knows about a table without an LLM."""

    rows: int
    cols: int
    cells: int
    tokens: int
    header_rows: int
    header_cols: int
    merges: int
    aggregation_rows: int
    aggregation_cols: int
    seconds: float

    @property
    def messy(self) -> bool:
        """Multi-level headers on either axis, merged cells, or aggregation rows.

        A "Total" column alone is not messy (a medal table has one): it sums its own row,
        and nothing would be summed twice.
        """
        return (
            self.header_rows > 1
            or self.header_cols > 1
            or self.merges > 0
            or self.aggregation_rows > 0
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 5)
        out["messy"] = self.messy
        return out


@dataclass(frozen=True)
class QuestionSignals:
    """What the router reads from the question."""

    analytical: bool
    lookup: bool
    words: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"analytical": self.analytical, "lookup": self.lookup, "words": list(self.words)}


def table_signals(table: Table) -> TableSignals:
    """Size, structure and aggregation markers of `table` (one pass over its cells)."""
    started = time.perf_counter()
    cells = table.n_rows * table.n_cols
    grid = table.cells
    step = max(1, len(grid) // SAMPLE_ROWS)
    sample = grid[::step]
    chars = sum(map(len, itertools.chain.from_iterable(sample))) * len(grid) / max(1, len(sample))
    total_cells = len(grid) * (len(grid[0]) if grid else 0)
    tokens = int(chars + 3 * total_cells + 3) // 4
    # the row label: the first cell, or the second when the first is empty (indented trees)
    labels = "\n".join(row[0] if row[0].strip() or len(row) < 2 else row[1] for row in table.body)
    agg_rows = len(_AGGREGATE.findall(labels)) if table.n_cols else 0
    agg_cols = sum(1 for name in table.columns if _AGGREGATE.match(name.split(" / ")[-1]))
    return TableSignals(
        rows=table.n_rows,
        cols=table.n_cols,
        cells=cells,
        tokens=tokens,
        header_rows=table.n_header_rows,
        header_cols=table.n_header_cols,
        merges=len(table.merges),
        aggregation_rows=agg_rows,
        aggregation_cols=agg_cols,
        seconds=time.perf_counter() - started,
    )


def question_signals(question: str) -> QuestionSignals:
    """Is it an analytical / chart / report request, and is it a plain lookup?"""
    analytical = [m.group(0).lower() for m in _ANALYTICAL.finditer(question)]
    operators = [m.group(0).lower() for m in _NOT_LOOKUP.finditer(question)]
    return QuestionSignals(
        analytical=bool(analytical),
        lookup=not analytical and not operators,
        words=tuple(dict.fromkeys(analytical + operators)),
    )
