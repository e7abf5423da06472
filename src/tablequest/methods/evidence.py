"""Evidence from what a method did, and the LLM-free check of an answer against it.

How each evidence cell is found (`CellRef.how`, docs/methods.md "Evidence"):

- ``computed``: the lineage of code run in the sandbox (`tablequest.sandbox._lineage`): the
  cells the value was computed from, mapped through the run's `Binding` (frame name → table,
  row label → row id, column label → column id). Every cell is checked here: a row or column
  the table does not have is dropped (the child is untrusted).
- ``cited``: a cell the model named that exists and holds the value it said (TableSeek's
  QA checks its citations, `methods.seek.qa`); one that does not is dropped and recorded in
  the trace.
- ``matched``: the answer's value found by value equality, only among the cells the method
  selected (the retrieved cells, the localized sub-table, the rows its code read), never a
  whole table it was shown; ``ambiguous`` when several cells hold it (all listed, none
  certain). A matched cell is support, never a check: it was found because it equals the
  answer, so it cannot verify it.
- ``untracked``: cells the code read before its value left pandas (``.values``, loops).

`verify` (`tablequest.methods.recompute`) re-runs the lineage recipe over the table's own
cells and compares the result with the answer: ``verified`` when it equals it (a
number within the answer's own rounding), ``contradicted`` when it gives another value,
``unverified`` when there is nothing to re-run (no evidence, matched, ambiguous or untracked
cells, an opaque computation). A lookup verifies when the answer equals the cell its code
read or the model cited (and we found); cited cells verify a list answer when the answer's
items are their values.

Reading a run's lineage is `tablequest.methods.lineage`; re-running it,
`tablequest.methods.recompute`. This module picks an answer's evidence and verdict from them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tablequest.methods.lineage import (
    MAX_EVIDENCE,
    Binding,
    Traced,
    lineage_cells,
    traced_items,
    with_how,
)
from tablequest.methods.recompute import (
    Verdict,
    as_number,
    best_traced,
    norm_text,
    same_value,
    verify,
)
from tablequest.table import CellRef

__all__ = [
    "all_stating",
    "code_evidence",
    "evidence_of",
    "mark_matches",
    "read_cells",
    "verify_cells",
]


# ---- cited and matched cells -------------------------------------------------------------


def mark_matches(found: Sequence[CellRef], answer: str) -> list[CellRef]:
    """Matched cells as ``matched``, or ``ambiguous`` where an answer item is held by
    several cells."""
    items = [x for x in re.split(r"\s*\|\s*|,\s+|;\s*", answer) if x.strip()] or [answer]
    out: list[CellRef] = []
    for cell in found:
        holders = [c for c in found if norm_text(c.value) == norm_text(cell.value)]
        several = len(holders) > 1 and len(items) < len(found)
        out.append(with_how(cell, "ambiguous" if several else "matched"))
    return out


def verify_cells(answer: str, evidence: Sequence[CellRef]) -> Verdict:
    """The verdict of cited or matched evidence (no computation to re-run)."""
    if not evidence:
        return Verdict("unverified", "no evidence")
    if all(c.how == "matched" for c in evidence):
        why = "its cells were found by the answer's value among the cells the method read"
        return Verdict("unverified", why)
    if any(c.how in ("ambiguous", "untracked", "matched") for c in evidence):
        kinds = sorted({c.how for c in evidence} & {"ambiguous", "untracked", "matched"})
        return Verdict("unverified", f"the evidence is {' and '.join(kinds)}")
    values = [c.value for c in evidence]
    if len(values) == 1 and same_value(answer, as_number(values[0]) or values[0]):
        return Verdict("verified", f"{answer[:60]} equals its cell")
    if same_value(answer, values):
        return Verdict("verified", f"the answer's items are its {len(values)} cells")
    if any(same_value(answer, as_number(v) or v) for v in values):
        return Verdict("verified", f"{answer[:60]} equals one of its cells")
    return Verdict("unverified", "the answer is not the value of its cells")


def evidence_of(answer: str, runs: Sequence[Sequence[Traced]], bindings: Mapping[str, Binding]
                ) -> tuple[list[CellRef], Verdict] | None:  # fmt: skip
    """The evidence and verdict of the traced value `answer` states (runs newest first), or
    None when no traced value states it."""
    stating = all_stating(answer, runs, bindings)
    if not stating:
        return None
    item = stating[0]
    item.cells = lineage_cells(item, bindings) if item.recipe is not None else []
    others = _other_cells(item.cells, stating[1:], bindings)
    if others:  # several values the code produced state the answer, from other cells
        mine = [with_how(c, "ambiguous") for c in item.cells]
        cells = list({(c.table_id, c.row, c.col): c for c in [*mine, *others]}.values())
        why = f"ambiguous: {len(stating)} values the code produced state {answer[:40]}"
        return cells[:MAX_EVIDENCE], Verdict("unverified", why)
    if item.recipe is None:
        cells = lineage_cells(item.escaped, bindings, "untracked") if item.escaped else []
        why = (
            "untracked: the value left pandas (.values, a loop, to_dict) after reading these cells"
            if cells
            else "untracked: the operations that computed it are not traced "
            "(docs/methods.md, Evidence)"
        )
        return cells, Verdict("unverified", why)
    if not item.cells:
        return [], Verdict("unverified", "its cells are not in the table")
    verdict = verify(answer, item, bindings)
    if verdict.verified == "verified" and item.mutated:
        why = "the code changed the table's data before computing it (an in-place edit)"
        return item.cells, Verdict("unverified", why)
    return item.cells, verdict


def all_stating(
    answer: str, runs: Iterable[Sequence[Traced]], bindings: Mapping[str, Binding]
) -> list[Traced]:
    """Every traced value that states the answer, the first found first (`best_traced`)."""
    out: list[Traced] = []
    for items in runs:
        for item in items:
            if best_traced(answer, [[item]], bindings) is not None:
                out.append(item)
    return out


def _other_cells(cells: Sequence[CellRef], rest: Sequence[Traced],
                 bindings: Mapping[str, Binding]) -> list[CellRef]:  # fmt: skip
    """Cells of other stating values that are not `cells` (none: no ambiguity)."""
    mine = {(c.table_id, c.row, c.col) for c in cells}
    out: list[CellRef] = []
    for other in rest:
        cells = lineage_cells(other, bindings, "ambiguous") if other.recipe is not None else []
        if {(c.table_id, c.row, c.col) for c in cells} != mine:
            out.extend(cells)
    return out


def read_cells(runs: Iterable[Sequence[Traced]], bindings: Mapping[str, Binding]
               ) -> list[CellRef]:  # fmt: skip
    """Every cell the runs' traced values read (where a matched fallback may look)."""
    seen: dict[tuple[str, int, int], CellRef] = {}
    for items in runs:
        for item in items:
            for cell in lineage_cells(item, bindings):
                seen.setdefault((cell.table_id, cell.row, cell.col), cell)
    return list(seen.values())


def code_evidence(
    answer: str,
    lineages: Iterable[Mapping[str, Any] | None],
    bindings: Mapping[str, Binding],
    also_read: Sequence[CellRef] = (),
) -> tuple[list[CellRef], Verdict]:
    """The evidence of an answer reached by running code (`lineages` newest first): the
    traced value it states (`evidence_of`), else value matching among the cells the code
    read and `also_read` (cells the method showed the model), ``matched`` or ``ambiguous``
    and never verified: the code computed something else than what the model answered."""
    runs = [traced_items(lineage) for lineage in lineages if lineage]
    found = evidence_of(answer, runs, bindings)
    if found is not None:
        return found
    candidates = [*read_cells(runs, bindings), *also_read]
    matched = [c for c in candidates if _states(answer, c.value)]
    unique = list({(c.table_id, c.row, c.col): c for c in matched}.values())
    cells = mark_matches(unique, answer)
    why = (
        "no value the code produced states the answer; cells it read that hold it are listed"
        if cells
        else "no value the code produced states the answer"
    )
    return cells, Verdict("unverified", why)


def _states(answer: str, value: str) -> bool:
    """Whether a cell holds the answer or one of its items."""
    items = [answer, *(p.strip() for p in answer.replace("|", ",").split(",") if p.strip())]
    return any(same_value(item, as_number(value) or value) for item in items)
