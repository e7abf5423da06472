"""Row hierarchy from arithmetic: a row that is the sum of the rows under it is their parent.

Spreadsheets often show a row hierarchy only by indentation ("Canada" above the provinces,
"Total violent crime" above its offences), which a cell grid loses. The paper is silent on how
to recover it; ours (LLM-free): a data row whose numbers equal the column sums of the next k ≥ 2
rows (within the rounding of the shown digits) in most comparable columns is their parent
(`nest`; the smallest such k, extended while each next row brings the sums strictly closer),
found innermost first so that a grand total over subtotals is recognised once its subtotals
have been folded. A row that is the sum of the k ≥ 2 rows above it is a trailing total
(`trailing_totals`): an aggregation row, but a sibling of those rows, as tables lay them out.
Both kinds are flagged as aggregation rows, so a later sum does not count them twice. A grand
total whose parts are all subtotals stays their sibling, as tables print it, when `nest`'s
`subtotal` test says those parts are totals themselves (the layout asks for a total label:
"Total violent crime"); over unlabelled subtotals ("Science", "Engineering" under "Science
and engineering") it stays their parent. Small integers add up by chance (a medal table:
2 = 1 + 1), so the layout also asks each match for evidence, the sum over matched columns of
log10(|total| / tolerance), of at least `MIN_EVIDENCE` (1.8: odds of about 1 in 60 that the
match is chance; on HiTab's 538 test tables thresholds from 1.5 to 3 score within 0.35 points
of each other, no threshold 1.6 points lower).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

from tablequest.methods.research.markers import parse_number
from tablequest.table import Table

__all__ = [
    "MIN_EVIDENCE",
    "Numbers",
    "additive_columns",
    "nest",
    "rounding_steps",
    "row_numbers",
    "trailing_totals",
]

Numbers = list[tuple[float, float] | None]
"""Per data column: (value, rounding step of the digits shown) or None when not a number."""

MAX_SCAN = 300
MAX_DEPTH = 4
MIN_SHARE = 0.75
MIN_EVIDENCE = 1.8
"""What the layout asks of a match: odds of about 1 in 60 or less that it is chance."""


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


def rounding_steps(numbers: Mapping[int, Numbers], *, base: int = 5) -> dict[int, Numbers]:
    """`numbers` with the step of columns whose values are all multiples of `base` widened to it.

    Statistics agencies (Statistics Canada among them) randomly round counts to a multiple of
    5, so a total and the sum of its parts may differ by 2.5 per part. A column counts as
    rounded when it has four or more non-zero values, all multiples of `base`, two or more of
    them odd multiples (a column of round tens says nothing about rounding to 5).
    """
    width = max((len(v) for v in numbers.values()), default=0)
    rounded: set[int] = set()
    for j in range(width):
        values = [v[j][0] for v in numbers.values() if j < len(v) and v[j] is not None]  # type: ignore[index]
        nonzero = [x for x in values if x != 0]
        odd = [x for x in nonzero if x % (2 * base) != 0]  # 5, 15, …: not a round 10
        if len(nonzero) >= 4 and all(x % base == 0 for x in nonzero) and len(odd) >= 2:
            rounded.add(j)
    if not rounded:
        return dict(numbers)
    return {
        pos: [
            (cell[0], max(cell[1], float(base))) if cell is not None and j in rounded else cell
            for j, cell in enumerate(row)
        ]
        for pos, row in numbers.items()
    }


def _sum_length(head: Numbers, rows: Sequence[Numbers], min_evidence: float) -> int:
    """The k >= 2 such that rows[:k] sum to `head`, or 0: the smallest, extended while each
    next row brings the sums strictly closer (a last part smaller than the rounding)."""
    columns = [j for j, cell in enumerate(head) if cell is not None and cell[0] != 0]
    if not columns:
        return 0
    sums = dict.fromkeys(columns, 0.0)
    steps = {j: head[j][1] for j in columns}  # type: ignore[index]
    counts = dict.fromkeys(columns, 0)  # non-zero parts per column
    lead = columns[0]
    lead_value = head[lead][0]  # type: ignore[index]
    found, error = 0, math.inf
    for k, row in enumerate(rows[:MAX_SCAN], start=1):
        for j in columns:
            cell = row[j] if j < len(row) else None
            if cell is not None:
                sums[j] += cell[0]
                steps[j] = max(steps[j], cell[1])
                counts[j] += cell[0] != 0
        gap = sum(abs(sums[j] - head[j][0]) for j in columns)  # type: ignore[index]
        if found and not (gap < error and _matches(head, columns, sums, steps, counts) >= 0):
            return found
        if k >= 2 and (found or _matches(head, columns, sums, steps, counts) >= min_evidence):
            found, error = k, gap
        if lead_value > 0 and sums[lead] > lead_value * 1.01 + steps[lead] * (counts[lead] + 1):
            return found
    return found


def _matches(
    head: Numbers,
    columns: list[int],
    sums: Mapping[int, float],
    steps: Mapping[int, float],
    counts: Mapping[int, int],
) -> float:
    """-1 when the sums do not match `head`, else the evidence of the match (see `nest`)."""
    compared = matched = 0
    evidence = 0.0  # log10 of the odds against a chance match, summed over matched columns
    for j in columns:
        if counts[j] < 2:
            continue
        compared += 1
        value = head[j][0]  # type: ignore[index]
        tolerance = max(0.001 * abs(value), 0.51 * steps[j] * counts[j])
        if abs(sums[j] - value) <= tolerance:
            matched += 1
            evidence += math.log10(max(1.0, abs(value) / max(tolerance, steps[j])))
    needed = 2 if compared >= 2 else 1
    ok = compared > 0 and matched >= needed and matched >= MIN_SHARE * compared
    return evidence if ok else -1.0


def nest(
    rows: Sequence[int],
    numbers: Mapping[int, Numbers],
    *,
    min_evidence: float = 0.0,
    subtotal: Callable[[int], bool] = lambda _: True,
) -> tuple[dict[int, int], set[int]]:
    """(child row → head row for rows nested under an additive head, every additive head).

    A match counts when its evidence, the sum over matched columns of log10(|head value| /
    tolerance), is at least `min_evidence`: small integers (medal counts, squad numbers) add
    up by chance, a sum matched to a few parts in a thousand does not. `subtotal(row)` says
    whether a row is a total itself (by default every additive head is): a grand total over
    such rows only stays their sibling.
    """
    parent: dict[int, int] = {}
    units = list(rows)
    for _ in range(MAX_DEPTH):
        folded: list[int] = []
        i = 0
        while i < len(units):
            head = units[i]
            k = _sum_length(numbers[head], [numbers[u] for u in units[i + 1 :]], min_evidence)
            for child in units[i + 1 : i + 1 + k]:
                parent[child] = head
            folded.append(head)
            i += 1 + k
        if len(folded) == len(units):
            break
        units = folded
    return _flatten_grand_totals(parent, subtotal), set(parent.values())


def _flatten_grand_totals(
    parent: dict[int, int], subtotal: Callable[[int], bool] = lambda _: True
) -> dict[int, int]:
    """A total whose parts are all totals themselves (`subtotal`) stays their sibling (it is
    still flagged as an aggregation row by the caller): tables print such grand totals flush
    with the subtotals, not above them."""
    children: dict[int, list[int]] = {}
    for child, head in parent.items():
        children.setdefault(head, []).append(child)
    heads = set(children)
    grand = {h for h, kids in children.items() if all(k in heads and subtotal(k) for k in kids)}
    return {c: h for c, h in parent.items() if h not in grand}


def trailing_totals(
    rows: Sequence[int], numbers: Mapping[int, Numbers], *, min_evidence: float = 0.0
) -> set[int]:
    """Rows equal to the sum of the k >= 2 rows right above them (evidence as in `nest`)."""
    found: set[int] = set()
    for i in range(2, len(rows)):
        above = [numbers[r] for r in reversed(rows[max(0, i - MAX_SCAN) : i])]
        if _sum_length(numbers[rows[i]], above, min_evidence):
            found.add(rows[i])
    return found
