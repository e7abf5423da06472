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
  read (the retrieved cells, the sub-table, the rows its code read), never the whole table;
  ``ambiguous`` when several cells hold it (all listed, none certain).
- ``untracked``: cells the code read before its value left pandas (``.values``, loops).

`verify` re-runs the lineage recipe over the table's own cells (numbers read with
`_number`) and compares the result with the answer: ``verified`` when it equals it (a
number within the answer's own rounding), ``contradicted`` when it gives another value,
``unverified`` when there is nothing to re-run (no evidence, ambiguous or untracked cells,
an opaque computation). A lookup or a matched cell verifies when the answer equals the
cell; cited cells verify a list answer when the answer's items are their values.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import statistics
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tablequest.errors import RunError
from tablequest.table import CellRef, Table

__all__ = [
    "Binding",
    "Traced",
    "Verdict",
    "best_traced",
    "cell_json",
    "code_evidence",
    "evidence_of",
    "mark_matches",
    "read_cells",
    "traced_items",
    "verify",
    "verify_cells",
]

MAX_EVIDENCE = 200


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


@dataclass(frozen=True)
class Verdict:
    verified: str
    why: str


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


def _expand(runs: Any) -> list[int]:
    if isinstance(runs, str):
        return _bits(runs)
    out: list[int] = []
    for i in range(0, len(runs) - 1, 2):
        start, end = runs[i], runs[i + 1]
        if not (isinstance(start, int) and isinstance(end, int) and end - start >= 0):
            continue
        if len(out) + end - start + 1 > MAX_ROWS:
            raise _Unknown(f"more than {MAX_ROWS:,} rows")
        out.extend(range(start, end + 1))
    return out


def _bits(text: str) -> list[int]:
    """A bitmap row set, ``"bits:FIRST:SPAN:BASE64"`` (`sandbox._lineage._runs`)."""
    parts = text.split(":", 3)
    if len(parts) != 4 or parts[0] != "bits":
        raise _Unknown("a malformed row set")
    try:
        first, span = int(parts[1]), int(parts[2])
        packed = np.frombuffer(base64.b64decode(parts[3], validate=True), dtype=np.uint8)
    except (ValueError, binascii.Error) as exc:
        raise _Unknown("a malformed row set") from exc
    if not 0 < span <= 8 * len(packed) or span > 64 * MAX_ROWS:
        raise _Unknown("a malformed row set")
    rows = np.nonzero(np.unpackbits(packed)[:span])[0]
    if rows.size > MAX_ROWS:
        raise _Unknown(f"more than {MAX_ROWS:,} rows")
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
        mapped = _at(item, elem[1])
        moved = [(pos, mapped[pos]) for pos, _ in pairs if 0 <= pos < len(mapped)]
        _collect(item, elem[2], [(p, r) for p, r in moved if isinstance(r, int)], out)
    elif elem[0] == "scalar" and len(elem) == 2:
        for leaf in _leaves(elem[1]):
            _leaf_cells(item, leaf, out)
    else:
        for part in elem[1:]:
            _collect(item, part, pairs, out)


def _at(item: Traced, ref: Any) -> list[Any]:
    return item.at[ref] if isinstance(ref, int) and 0 <= ref < len(item.at) else []


def _leaf_cells(item: Traced, leaf: Any, out: list[Any]) -> None:
    ref = leaf[3] if len(leaf) == 4 else None
    if isinstance(ref, int) and 0 <= ref < len(item.rows):
        _collect(item, leaf[2], list(enumerate(_expand(item.rows[ref]))), out)


def lineage_cells(item: Traced, bindings: Mapping[str, Binding], how: str = "computed"
                  ) -> list[CellRef]:  # fmt: skip
    """The cells an item's recipe read, checked against the tables (unknown ones dropped)."""
    found: list[Any] = []
    try:
        for leaf in _leaves(item.recipe):
            _leaf_cells(item, leaf, found)
            if len(found) > MAX_ROWS:
                raise _Unknown(f"more than {MAX_ROWS:,} cells")
    except (_Unknown, IndexError, TypeError, ValueError, RecursionError):
        return []  # a malformed or oversized lineage names no cell
    item.read = len(set(found))
    seen: dict[tuple[str, int, int], CellRef] = {}
    for frame, col, row in found:
        binding = bindings.get(frame)
        cell = binding.cell(row, col) if binding is not None else None
        if cell is not None:
            seen.setdefault((cell.table_id, cell.row, cell.col), _how(cell, how))
        if len(seen) >= MAX_EVIDENCE:
            break
    return list(seen.values())


def cell_json(cell: CellRef) -> dict[str, Any]:
    """One evidence cell as the payloads give it: where, its value, how it was found."""
    return {"table_id": cell.table_id, "row": cell.row, "col": cell.col, "value": cell.value,
            "how": cell.how}  # fmt: skip


def _how(cell: CellRef, how: str) -> CellRef:
    return CellRef(cell.table_id, cell.row, cell.col, cell.value, how)  # type: ignore[arg-type]


# ---- re-running a recipe over the table's cells ------------------------------------------

_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def _number(text: str) -> float | None:
    """A cell or answer as a number: thousands separators, currency and % removed."""
    t = unicodedata.normalize("NFKC", str(text)).strip().replace("\u2212", "-")
    neg = t.startswith("(") and t.endswith(")")
    t = re.sub(r"[,\s$€£¥%()]", "", t.strip("()"))
    if not _NUMBER.match(t):
        return None
    value = float(t)
    return -value if neg else value


class _Unknown(RunError):
    """The recipe cannot be re-run (opaque part, missing cell, non-numeric operand)."""


def _cell_value(bindings: Mapping[str, Binding], frame: str, col: str, row: int) -> Any:
    binding = bindings.get(frame)
    cell = binding.cell(row, col) if binding is not None else None
    if cell is None:
        raise _Unknown(f"cell ({row}, {col}) is not in the table")
    number = _number(cell.value)
    return number if number is not None else cell.value.strip()


_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a**b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "&": lambda a, b: bool(a) and bool(b),
    "|": lambda a, b: bool(a) or bool(b),
}  # fmt: skip


def _bin(op: str, a: Any, b: Any) -> Any:
    if op.startswith("r") and op[1:] in _BIN:
        op, a, b = op[1:], b, a
    if op not in _BIN:
        raise _Unknown(f"operator {op!r}")
    try:
        return _BIN[op](a, b)
    except (TypeError, ZeroDivisionError, OverflowError) as exc:
        raise _Unknown(str(exc)) from exc


def _reduce(op: str, values: list[Any]) -> Any:
    present = [v for v in values if not (isinstance(v, float) and math.isnan(v)) and v != ""]
    if op in ("count", "size"):
        return len(values) if op == "size" else len(present)
    if op in ("item", "first"):
        return present[0] if present else None
    if op == "last":
        return present[-1] if present else None
    if op == "nunique":
        return len(set(present))
    if any(isinstance(v, str) for v in present):
        if op in ("min", "max") and present:
            return min(present) if op == "min" else max(present)
        raise _Unknown("text in a numeric reduction")
    funcs: dict[str, Callable[[list[Any]], Any]] = {
        "sum": sum, "mean": statistics.fmean, "median": statistics.median, "min": min,
        "max": max, "prod": math.prod, "std": statistics.stdev, "var": statistics.variance,
    }  # fmt: skip
    if op not in funcs or (not present and op != "sum"):
        raise _Unknown(f"reduction {op!r}")
    return funcs[op](present)


class _Evaluator:
    def __init__(self, item: Traced, bindings: Mapping[str, Binding]) -> None:
        self.item, self.bindings = item, bindings
        self.cleaned = False  # a cell went through the code's own cleaning

    def rows(self, ref: Any) -> list[int]:
        if not isinstance(ref, int) or not 0 <= ref < len(self.item.rows) or self.item.cut:
            raise _Unknown("rows not sent")
        return _expand(self.item.rows[ref])

    def elem(self, node: Any, pos: int, row: int) -> Any:
        kind = node[0] if isinstance(node, list) and node else None
        if kind == "src":
            return _cell_value(self.bindings, str(node[1]), str(node[2]), row)
        if kind == "const":
            return node[1]
        if kind == "at":  # a merged row: the other side's row id at this position
            mapped = _at(self.item, node[1])
            if not 0 <= pos < len(mapped) or not isinstance(mapped[pos], int):
                return math.nan
            return self.elem(node[2], pos, mapped[pos])
        if kind == "bin":
            return _bin(str(node[1]), self.elem(node[2], pos, row), self.elem(node[3], pos, row))
        if kind == "un" and node[1] == "clean":  # code cleaned the cell: read it as a number
            self.cleaned = True
            value = self.elem(node[2], pos, row)
            number = _number(value) if isinstance(value, str) else value
            if number is None:
                raise _Unknown("the code transformed text cells (not re-run here)")
            return number
        if kind == "un":
            return _unary(str(node[1]), self.elem(node[2], pos, row))
        if kind == "rowagg":
            return _reduce(str(node[1]), [self.elem(src, pos, row) for src in node[2]])
        if kind == "scalar":
            return self.scalar(node[1])
        raise _Unknown(f"element {kind!r}")

    def scalar(self, node: Any) -> Any:
        kind = node[0] if isinstance(node, list) and node else None
        if kind == "agg" and node[1] in ("count", "size"):
            return len(self.rows(node[3]))  # the rows are the counted ones
        if kind == "agg":
            values = [self.elem(node[2], i, row) for i, row in enumerate(self.rows(node[3]))]
            if str(node[1]) == "count" and values and all(isinstance(v, bool) for v in values):
                return sum(1 for v in values if v)
            return _reduce(str(node[1]), values)
        if kind == "list":
            return [self.elem(node[2], i, row) for i, row in enumerate(self.rows(node[3]))]
        if kind == "const":
            return node[1]
        if kind == "bin":
            return _bin(str(node[1]), self.scalar(node[2]), self.scalar(node[3]))
        if kind == "un":
            return _unary(str(node[1]), self.scalar(node[2]))
        if kind == "with":
            return self.scalar(node[1])
        raise _Unknown(f"the computation ({kind}) cannot be re-run from its cells")


def _unary(op: str, value: Any) -> Any:
    try:
        if op == "neg":
            return -value
        if op == "abs":
            return abs(value)
        if op == "int":
            return int(value)
        if op.startswith("round:"):
            return round(value, int(op.split(":")[1]))
    except (TypeError, ValueError) as exc:
        raise _Unknown(str(exc)) from exc
    raise _Unknown(f"operation {op!r}")


# ---- comparing values with answers --------------------------------------------------------


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", str(text))
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w.%-]+", " ", text.casefold()).split())


def _decimals(text: str) -> int:
    match = re.search(r"\.(\d+)", text)
    return len(match.group(1)) if match else 0


def same_value(answer: str, value: Any) -> bool:
    """Whether an answer states `value` (a number within the answer's own rounding)."""
    if isinstance(value, list):
        texts = [_text(v) for v in value]
        if not texts:
            return False
        if _norm(answer) == _norm(" ".join(texts)) != "":  # in order, any separator: items
            return True  # that hold ", " themselves ("June 2, 2000") are read whole
        items = [x for x in re.split(r"\s*\|\s*|,\s+|;\s*|\n", answer) if x.strip()]
        return sorted(_norm(i) for i in items) == sorted(_norm(t) for t in texts)
    if isinstance(value, bool):
        return _norm(answer) in (("true", "yes") if value else ("false", "no"))
    if isinstance(value, int | float):
        number = _number(answer)
        if number is None or math.isnan(float(value)):
            return False
        tolerance = max(0.5 * 10 ** -_decimals(answer), 1e-9 * abs(float(value)))
        return bool(abs(number - float(value)) <= tolerance + 1e-12)
    if _norm(answer) == "":  # punctuation only ("?", "-"): compared as written
        return answer.strip() != "" and answer.strip() == str(value).strip()
    return bool(_norm(answer) == _norm(str(value)))


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def verify(answer: str, item: Traced, bindings: Mapping[str, Binding]) -> Verdict:
    """Re-run `item`'s recipe over the tables and compare with `answer`."""
    if item.recipe is None:
        return Verdict("unverified", "the value was computed outside tracked pandas operations")
    evaluator = _Evaluator(item, bindings)
    try:
        value = evaluator.scalar(item.recipe)
    except _Unknown as exc:
        return Verdict("unverified", f"not re-run: {exc}")
    except RecursionError:
        return Verdict("unverified", "not re-run: the computation is too deep")
    except (IndexError, KeyError, TypeError, ValueError, ArithmeticError, AttributeError):
        return Verdict("unverified", "not re-run: its recipe is malformed")
    shown = _text(value) if not isinstance(value, list) else ", ".join(_text(v) for v in value)
    if same_value(answer, value):
        n = max(item.read, len(item.cells))
        return Verdict("verified", f"{shown[:80]} recomputed from {n} cell{'s' * (n != 1)}")
    if evaluator.cleaned:  # the code's cleaning is not ours to re-run: no contradiction
        return Verdict("unverified", f"its cells, read as numbers, give {shown[:80]}")
    return Verdict("contradicted", f"its cells give {shown[:80]}, not {answer[:80]}")


def best_traced(
    answer: str, runs: Iterable[Sequence[Traced]], bindings: Mapping[str, Binding] | None = None
) -> Traced | None:
    """The traced value the answer states: newest run first, its value before its prints.
    A list too long for its text (or with items the text escapes) is compared by its
    values, re-read from the table."""
    for items in runs:
        for item in items:
            value = _number(item.text)
            if same_value(answer, value if value is not None else item.text.strip("'\"")):
                return item
            if item.text.startswith("[") and same_value(answer, _list_text(item.text)):
                return item
            if bindings is not None and _states_list(answer, item, bindings):
                return item
    return None


def _states_list(answer: str, item: Traced, bindings: Mapping[str, Binding]) -> bool:
    if not (isinstance(item.recipe, list) and item.recipe[:1] == ["list"]):
        return False
    try:
        values = _Evaluator(item, bindings).scalar(item.recipe)
    except (_Unknown, IndexError, KeyError, TypeError, ValueError, RecursionError):
        return False
    return isinstance(values, list) and same_value(answer, values)


def _list_text(text: str) -> list[str]:
    return [p.strip().strip("'\"") for p in text.strip("[]").split(",") if p.strip()]


# ---- cited and matched cells -------------------------------------------------------------


def mark_matches(found: Sequence[CellRef], answer: str) -> list[CellRef]:
    """Matched cells as ``matched``, or ``ambiguous`` where an answer item is held by
    several cells."""
    items = [x for x in re.split(r"\s*\|\s*|,\s+|;\s*", answer) if x.strip()] or [answer]
    out: list[CellRef] = []
    for cell in found:
        holders = [c for c in found if _norm(c.value) == _norm(cell.value)]
        several = len(holders) > 1 and len(items) < len(found)
        out.append(_how(cell, "ambiguous" if several else "matched"))
    return out


def verify_cells(answer: str, evidence: Sequence[CellRef]) -> Verdict:
    """The verdict of cited or matched evidence (no computation to re-run)."""
    if not evidence:
        return Verdict("unverified", "no evidence")
    if any(c.how in ("ambiguous", "untracked") for c in evidence):
        kind = "ambiguous" if any(c.how == "ambiguous" for c in evidence) else "untracked"
        return Verdict("unverified", f"the evidence is {kind}")
    values = [c.value for c in evidence]
    if len(values) == 1 and same_value(answer, _number(values[0]) or values[0]):
        return Verdict("verified", f"{answer[:60]} equals its cell")
    if same_value(answer, values):
        return Verdict("verified", f"the answer's items are its {len(values)} cells")
    if any(same_value(answer, _number(v) or v) for v in values):
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
        mine = [_how(c, "ambiguous") for c in item.cells]
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
    return any(same_value(item, _number(value) or value) for item in items)
