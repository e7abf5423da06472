"""What a sandbox run says its values were computed from: its lineage, read back as cells.

The child (`tablequest.sandbox._lineage`) sends, for the value of a run and each printed
value, its text and a *recipe*: the tree of operations that computed it, whose leaves name a
frame, a column and a row set. `traced_items` reads that (the child is untrusted: malformed
parts are skipped, row sets bounded by `MAX_ROWS`); `lineage_cells` maps the cells a recipe
read through each frame's `Binding` (frame name → table, column label → column id) and
checks every one against the table (a row or column the table does not have is dropped).
`tablequest.methods.recompute` re-runs a recipe; `tablequest.methods.evidence` picks the
evidence of an answer.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tablequest.errors import RunError
from tablequest.table import CellRef, Table

__all__ = [
    "MAX_EVIDENCE",
    "MAX_ROWS",
    "Binding",
    "Opaque",
    "Traced",
    "cell_json",
    "expand_rows",
    "lineage_cells",
    "merged_rows",
    "traced_items",
    "with_how",
]

MAX_EVIDENCE = 200
"""Evidence cells one traced value gives at most."""


@dataclass(frozen=True)
class Binding:
    """How one sandbox frame maps back to its table."""

    name: str
    table_id: str
    table: Table
    columns: Mapping[str, int]
    """Frame column label → the table's grid column id."""

    @classmethod
    def of(cls, name: str, table_id: str, table: Table, columns: Sequence[str] | None = None
           ) -> Binding:  # fmt: skip
        """The binding of ``table.to_dataframe()`` (columns in the table's order), or of a
        frame whose columns are `columns` in the table's column order."""
        labels = list(columns) if columns is not None else list(table.columns)
        return cls(name, table_id, table, dict(zip(labels, table.col_ids, strict=False)))

    @cached_property
    def _row_positions(self) -> dict[int, int]:
        return {v: i for i, v in enumerate(self.table.row_ids)}

    @cached_property
    def _col_positions(self) -> dict[int, int]:
        return {v: i for i, v in enumerate(self.table.col_ids)}

    def cell(self, row: int, col_label: str) -> CellRef | None:
        col = self.columns.get(col_label)
        pos_r = self._row_positions.get(row)
        pos_c = self._col_positions.get(col) if col is not None else None
        if pos_r is None or pos_c is None:
            return None
        value = self.table.body[pos_r][pos_c]
        return CellRef(self.table_id, row, int(col or 0), value, "computed")


@dataclass
class Traced:
    """One traced value of a sandbox run: its text as the child printed it, its recipe."""

    text: str
    recipe: Any
    rows: list[Any]
    escaped: Traced | None = None
    cut: bool = False
    cells: list[CellRef] = field(default_factory=list)
    at: list[list[Any]] = field(default_factory=list)
    """A merge's row maps: for each leaf row (by position), the row id on one side."""
    read: int = 0
    """How many cells the recipe read (the evidence lists at most `MAX_EVIDENCE`)."""
    mutated: bool = False
    """The code had changed a bound table's data in place before this value."""


def traced_items(lineage: Mapping[str, Any] | None) -> list[Traced]:
    """The value first, then the printed values, of one run's lineage (malformed parts
    skipped: the child is untrusted)."""
    if not isinstance(lineage, Mapping):
        return []
    raw = [lineage.get("value"), *list(lineage.get("printed") or [])[:20]]
    return [t for t in (_traced(x) for x in raw) if t is not None]


def _traced(raw: Any) -> Traced | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        return None
    rows = raw.get("rows")
    rows = [r for r in rows if isinstance(r, list | str)] if isinstance(rows, list) else []
    escaped = _traced(raw.get("escaped")) if raw.get("escaped") is not None else None
    at = raw.get("at")
    at = [a for a in at if isinstance(a, list)] if isinstance(at, list) else []
    cut, mutated = bool(raw.get("cut")), raw.get("mutated") is True
    return Traced(raw["text"], raw.get("recipe"), rows, escaped, cut, at=at, mutated=mutated)


MAX_ROWS = 1_000_000
"""Most row ids one traced value may expand to (the child is untrusted: its runs are bounded
here, not by its word)."""


class Opaque(RunError):
    """A lineage part that cannot be read or re-run (an opaque operation, a missing cell, a
    non-numeric operand, a malformed or oversized row set)."""


def expand_rows(runs: Any) -> list[int]:
    """The row ids of one row set: ``[start, end, …]`` runs or a bitmap (`_bits`); `Opaque`
    past `MAX_ROWS` rows."""
    if isinstance(runs, str):
        return _bits(runs)
    out: list[int] = []
    for i in range(0, len(runs) - 1, 2):
        start, end = runs[i], runs[i + 1]
        if not (isinstance(start, int) and isinstance(end, int) and end - start >= 0):
            continue
        if len(out) + end - start + 1 > MAX_ROWS:
            raise Opaque(f"more than {MAX_ROWS:,} rows")
        out.extend(range(start, end + 1))
    return out


def _bits(text: str) -> list[int]:
    """A bitmap row set, ``"bits:FIRST:SPAN:BASE64"`` (`sandbox._lineage._runs`)."""
    parts = text.split(":", 3)
    if len(parts) != 4 or parts[0] != "bits":
        raise Opaque("a malformed row set")
    try:
        first, span = int(parts[1]), int(parts[2])
        packed = np.frombuffer(base64.b64decode(parts[3], validate=True), dtype=np.uint8)
    except (ValueError, binascii.Error) as exc:
        raise Opaque("a malformed row set") from exc
    if not 0 < span <= 8 * len(packed) or span > 64 * MAX_ROWS:
        raise Opaque("a malformed row set")
    rows = np.nonzero(np.unpackbits(packed)[:span])[0]
    if rows.size > MAX_ROWS:
        raise Opaque(f"more than {MAX_ROWS:,} rows")
    return list((rows + first).tolist())


def _leaves(node: Any) -> list[Any]:
    if not isinstance(node, list) or not node:
        return []
    if isinstance(node[0], list):  # a list of nodes (an opaque leaf set)
        return [leaf for part in node for leaf in _leaves(part)]
    if node[0] in ("agg", "list"):
        return [node]
    return [leaf for part in node[1:] for leaf in _leaves(part)]


def _collect(item: Traced, elem: Any, pairs: list[tuple[int, Any]], out: list[Any]) -> None:
    """(frame, column, row) of every cell `elem` reads at the leaf rows `pairs` (position in
    the leaf, row id); a merge's ``at`` list re-maps each position to the other side's row."""
    if not isinstance(elem, list) or not elem:
        return
    if isinstance(elem[0], list):  # a list of nodes (rowagg's sources)
        for part in elem:
            _collect(item, part, pairs, out)
    elif elem[0] == "src" and len(elem) == 3:
        out.extend((str(elem[1]), str(elem[2]), row) for _, row in pairs)
    elif elem[0] == "at" and len(elem) == 3:
        mapped = merged_rows(item, elem[1])
        moved = [(pos, mapped[pos]) for pos, _ in pairs if 0 <= pos < len(mapped)]
        _collect(item, elem[2], [(p, r) for p, r in moved if isinstance(r, int)], out)
    elif elem[0] == "scalar" and len(elem) == 2:
        for leaf in _leaves(elem[1]):
            _leaf_cells(item, leaf, out)
    else:
        for part in elem[1:]:
            _collect(item, part, pairs, out)


def merged_rows(item: Traced, ref: Any) -> list[Any]:
    """The merge row map `ref` of `item` ([] when it has none)."""
    return item.at[ref] if isinstance(ref, int) and 0 <= ref < len(item.at) else []


def _leaf_cells(item: Traced, leaf: Any, out: list[Any]) -> None:
    ref = leaf[3] if len(leaf) == 4 else None
    if isinstance(ref, int) and 0 <= ref < len(item.rows):
        _collect(item, leaf[2], list(enumerate(expand_rows(item.rows[ref]))), out)


def lineage_cells(item: Traced, bindings: Mapping[str, Binding], how: str = "computed"
                  ) -> list[CellRef]:  # fmt: skip
    """The cells an item's recipe read, checked against the tables (unknown ones dropped)."""
    found: list[Any] = []
    try:
        for leaf in _leaves(item.recipe):
            _leaf_cells(item, leaf, found)
            if len(found) > MAX_ROWS:
                raise Opaque(f"more than {MAX_ROWS:,} cells")
    except (Opaque, IndexError, TypeError, ValueError, RecursionError):
        return []  # a malformed or oversized lineage names no cell
    item.read = len(set(found))
    seen: dict[tuple[str, int, int], CellRef] = {}
    for frame, col, row in found:
        binding = bindings.get(frame)
        cell = binding.cell(row, col) if binding is not None else None
        if cell is not None:
            seen.setdefault((cell.table_id, cell.row, cell.col), with_how(cell, how))
        if len(seen) >= MAX_EVIDENCE:
            break
    return list(seen.values())


def cell_json(cell: CellRef) -> dict[str, Any]:
    """One evidence cell as the payloads give it: where, its value, how it was found."""
    return {"table_id": cell.table_id, "row": cell.row, "col": cell.col, "value": cell.value,
            "how": cell.how}  # fmt: skip


def with_how(cell: CellRef, how: str) -> CellRef:
    """`cell` as found another way (`CellRef.how`)."""
    return CellRef(cell.table_id, cell.row, cell.col, cell.value, how)  # type: ignore[arg-type]
