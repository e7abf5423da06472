"""Re-running a lineage's recipe over the table's own cells, and comparing values with answers.

`verify` re-runs the recipe of a traced value (`tablequest.methods.lineage`) over the cells
of its tables (numbers read with `as_number`) and compares the result with the answer:
``verified`` when it equals it (a number within the answer's own rounding), ``contradicted``
when it gives another value, ``unverified`` when there is nothing to re-run (an opaque
computation, a cell the table does not have). `best_traced` finds the traced value an
answer states.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablequest.methods.lineage import Binding, Opaque, Traced, expand_rows, merged_rows

__all__ = ["Verdict", "as_number", "best_traced", "norm_text", "same_value", "verify"]


@dataclass(frozen=True)
class Verdict:
    """Whether an answer recomputes from its evidence (`verified`: verified, unverified or
    contradicted) and why, in one line."""

    verified: str
    why: str


_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def as_number(text: str) -> float | None:
    """A cell or answer as a number: thousands separators, currency and % removed."""
    t = unicodedata.normalize("NFKC", str(text)).strip().replace("\u2212", "-")
    neg = t.startswith("(") and t.endswith(")")
    t = re.sub(r"[,\s$€£¥%()]", "", t.strip("()"))
    if not _NUMBER.match(t):
        return None
    value = float(t)
    return -value if neg else value


def _cell_value(bindings: Mapping[str, Binding], frame: str, col: str, row: int) -> Any:
    binding = bindings.get(frame)
    cell = binding.cell(row, col) if binding is not None else None
    if cell is None:
        raise Opaque(f"cell ({row}, {col}) is not in the table")
    number = as_number(cell.value)
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
        raise Opaque(f"operator {op!r}")
    try:
        return _BIN[op](a, b)
    except (TypeError, ZeroDivisionError, OverflowError) as exc:
        raise Opaque(str(exc)) from exc


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
        raise Opaque("text in a numeric reduction")
    funcs: dict[str, Callable[[list[Any]], Any]] = {
        "sum": sum, "mean": statistics.fmean, "median": statistics.median, "min": min,
        "max": max, "prod": math.prod, "std": statistics.stdev, "var": statistics.variance,
    }  # fmt: skip
    if op not in funcs or (not present and op != "sum"):
        raise Opaque(f"reduction {op!r}")
    return funcs[op](present)


class _Evaluator:
    def __init__(self, item: Traced, bindings: Mapping[str, Binding]) -> None:
        self.item, self.bindings = item, bindings
        self.cleaned = False  # a cell went through the code's own cleaning

    def rows(self, ref: Any) -> list[int]:
        if not isinstance(ref, int) or not 0 <= ref < len(self.item.rows) or self.item.cut:
            raise Opaque("rows not sent")
        return expand_rows(self.item.rows[ref])

    def elem(self, node: Any, pos: int, row: int) -> Any:
        kind = node[0] if isinstance(node, list) and node else None
        if kind == "src":
            return _cell_value(self.bindings, str(node[1]), str(node[2]), row)
        if kind == "const":
            return node[1]
        if kind == "at":  # a merged row: the other side's row id at this position
            mapped = merged_rows(self.item, node[1])
            if not 0 <= pos < len(mapped) or not isinstance(mapped[pos], int):
                return math.nan
            return self.elem(node[2], pos, mapped[pos])
        if kind == "bin":
            return _bin(str(node[1]), self.elem(node[2], pos, row), self.elem(node[3], pos, row))
        if kind == "un" and node[1] == "clean":  # code cleaned the cell: read it as a number
            self.cleaned = True
            value = self.elem(node[2], pos, row)
            number = as_number(value) if isinstance(value, str) else value
            if number is None:
                raise Opaque("the code transformed text cells (not re-run here)")
            return number
        if kind == "un":
            return _unary(str(node[1]), self.elem(node[2], pos, row))
        if kind == "rowagg":
            return _reduce(str(node[1]), [self.elem(src, pos, row) for src in node[2]])
        if kind == "scalar":
            return self.scalar(node[1])
        raise Opaque(f"element {kind!r}")

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
        raise Opaque(f"the computation ({kind}) cannot be re-run from its cells")


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
        raise Opaque(str(exc)) from exc
    raise Opaque(f"operation {op!r}")


# ---- comparing values with answers --------------------------------------------------------


def norm_text(text: str) -> str:
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
        if norm_text(answer) == norm_text(" ".join(texts)) != "":  # in order, any separator: items
            return True  # that hold ", " themselves ("June 2, 2000") are read whole
        items = [x for x in re.split(r"\s*\|\s*|,\s+|;\s*|\n", answer) if x.strip()]
        return sorted(norm_text(i) for i in items) == sorted(norm_text(t) for t in texts)
    if isinstance(value, bool):
        return norm_text(answer) in (("true", "yes") if value else ("false", "no"))
    if isinstance(value, int | float):
        number = as_number(answer)
        if number is None or math.isnan(float(value)):
            return False
        tolerance = max(0.5 * 10 ** -_decimals(answer), 1e-9 * abs(float(value)))
        return bool(abs(number - float(value)) <= tolerance + 1e-12)
    if norm_text(answer) == "":  # punctuation only ("?", "-"): compared as written
        return answer.strip() != "" and answer.strip() == str(value).strip()
    return bool(norm_text(answer) == norm_text(str(value)))


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
    except Opaque as exc:
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
            value = as_number(item.text)
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
    except (Opaque, IndexError, KeyError, TypeError, ValueError, RecursionError):
        return False
    return isinstance(values, list) and same_value(answer, values)


def _list_text(text: str) -> list[str]:
    return [p.strip().strip("'\"") for p in text.strip("[]").split(",") if p.strip()]
