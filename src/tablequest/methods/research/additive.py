"""Row hierarchy from arithmetic: a row that is the sum of the rows under it is their parent.

Spreadsheets often show a row hierarchy only by indentation ("Canada" above the provinces,
"Total violent crime" above its offences), which a cell grid loses. The paper is silent on how
to recover it; ours (LLM-free): a data row whose numbers equal the column sums of the next k ≥ 2
rows (within the rounding of the shown digits) in most comparable columns is their parent
(`nest`), found innermost first so that a grand total over subtotals is recognised once its
subtotals have been folded. A row that is the sum of the k ≥ 2 rows above it is a trailing total
(`trailing_totals`): an aggregation row, but a sibling of those rows, as tables lay them out.
Both kinds are flagged as aggregation rows, so a later sum does not count them twice. A grand
total whose parts are all subtotals stays their sibling, as tables print it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tablequest.methods.research.markers import parse_number
from tablequest.table import Table

__all__ = ["Numbers", "additive_columns", "nest", "row_numbers", "trailing_totals"]

Numbers = list[tuple[float, float] | None]
"""Per data column: (value, rounding step of the digits shown) or None when not a number."""

MAX_SCAN = 300
MAX_DEPTH = 4
MIN_SHARE = 0.75


_NOT_ADDITIVE = re.compile(
    r"%|percent|\brate\b|ratio|median|mean|average|\bper\b|index|share|proportion|"
    r"change|growth|score|\bage\b|length|\byear\b|\bp-value|beta|coefficient",
    re.I,
)


def additive_columns(
    table: Table, header_rows: Sequence[int], data_cols: Sequence[int]
) -> list[int | None]:
    """`data_cols` with None for columns whose header says they do not add up (%, rates, …)."""
    out: list[int | None] = []
    for c in data_cols:
        header = " ".join(table.cells[r][c] for r in header_rows)
        out.append(None if _NOT_ADDITIVE.search(header) else c)
    return out


def row_numbers(row: Sequence[str], cols: Sequence[int | None]) -> Numbers:
    """The numbers of `row` in `cols` (None: skipped), with the step of their last digit."""
    out: Numbers = []
    for c in cols:
        if c is None:
            out.append(None)
            continue
        text = row[c].strip()
        value = parse_number(text)
        if value is None:
            out.append(None)
            continue
        digits = text.rstrip("%)*†‡ abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        _, dot, frac = digits.rpartition(".")
        step = 10.0 ** -len(frac) if dot and frac.isdigit() else 1.0
        out.append((value, step))
    return out


def _sum_length(head: Numbers, rows: Sequence[Numbers]) -> int:
    """The smallest k >= 2 such that rows[:k] sum to `head`, or 0."""
    columns = [j for j, cell in enumerate(head) if cell is not None and cell[0] != 0]
    if not columns:
        return 0
    sums = dict.fromkeys(columns, 0.0)
    steps = {j: head[j][1] for j in columns}  # type: ignore[index]
    counts = dict.fromkeys(columns, 0)  # non-zero parts per column
    lead = columns[0]
    lead_value = head[lead][0]  # type: ignore[index]
    for k, row in enumerate(rows[:MAX_SCAN], start=1):
        for j in columns:
            cell = row[j] if j < len(row) else None
            if cell is not None:
                sums[j] += cell[0]
                steps[j] = max(steps[j], cell[1])
                counts[j] += cell[0] != 0
        if k >= 2 and _matches(head, columns, sums, steps, counts):
            return k
        if lead_value > 0 and sums[lead] > lead_value * 1.01 + steps[lead] * (counts[lead] + 1):
            return 0
    return 0


def _matches(
    head: Numbers,
    columns: list[int],
    sums: Mapping[int, float],
    steps: Mapping[int, float],
    counts: Mapping[int, int],
) -> bool:
    compared = matched = 0
    for j in columns:
        if counts[j] < 2:
            continue
        compared += 1
        value = head[j][0]  # type: ignore[index]
        tolerance = max(0.001 * abs(value), 0.51 * steps[j] * counts[j])
        matched += abs(sums[j] - value) <= tolerance
    needed = 2 if compared >= 2 else 1
    return compared > 0 and matched >= needed and matched >= MIN_SHARE * compared


def nest(rows: Sequence[int], numbers: Mapping[int, Numbers]) -> tuple[dict[int, int], set[int]]:
    """(child row → head row for rows nested under an additive head, every additive head)."""
    parent: dict[int, int] = {}
    units = list(rows)
    for _ in range(MAX_DEPTH):
        folded: list[int] = []
        i = 0
        while i < len(units):
            head = units[i]
            k = _sum_length(numbers[head], [numbers[u] for u in units[i + 1 :]])
            for child in units[i + 1 : i + 1 + k]:
                parent[child] = head
            folded.append(head)
            i += 1 + k
        if len(folded) == len(units):
            break
        units = folded
    return _flatten_grand_totals(parent), set(parent.values())


def _flatten_grand_totals(parent: dict[int, int]) -> dict[int, int]:
    """A total whose parts are all totals themselves stays their sibling (it is still flagged
    as an aggregation row by the caller): tables print such grand totals flush with the
    subtotals, not above them."""
    children: dict[int, list[int]] = {}
    for child, head in parent.items():
        children.setdefault(head, []).append(child)
    heads = set(children)
    grand = {h for h, kids in children.items() if all(k in heads for k in kids)}
    return {c: h for c, h in parent.items() if h not in grand}


def trailing_totals(rows: Sequence[int], numbers: Mapping[int, Numbers]) -> set[int]:
    """Rows equal to the sum of the k >= 2 rows right above them."""
    found: set[int] = set()
    for i in range(2, len(rows)):
        above = [numbers[r] for r in reversed(rows[max(0, i - MAX_SCAN) : i])]
        if _sum_length(numbers[rows[i]], above):
            found.add(rows[i])
    return found
