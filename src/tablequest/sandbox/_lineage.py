"""Cell lineage inside the sandbox child: which table cells a value was computed from.

Runs inside the child (loaded as a plain module; it imports nothing from `tablequest`), and
in the host's tests. Ours: `tracepipe` (PyPI) follows rows through a pipeline (which rows a
step dropped or changed) but not which cells a scalar came from, and SmokedDuck is a DuckDB
fork; neither records a value's cells in pandas, so this module does (docs/methods.md,
"Evidence").

The model. Bound frames have the table's row ids as their index (named ``row_id``). A value
carries a *recipe*, a small tree the host can re-run over the table's own cells:

- element expressions (one row of an aligned Series): ``("src", frame, column)``,
  ``("const", v)``, ``("bin", op, a, b)``, ``("un", op, a)``, ``("rowagg", op, [srcs])``,
  ``("scalar", recipe)`` (a scalar broadcast over the rows), ``("map", labels, elem)`` (a
  merge's row: `labels` maps the merged frame's labels to the rows of `elem`'s frame; sent to
  the host as ``("at", k, elem)``, the k-th list of ``at`` giving each leaf row's row id);
- scalar recipes: ``("agg", op, elem, rows)`` (a reduction of `elem` over row ids ``rows``;
  ``item`` is a single cell), ``("const", v)``, ``("bin", op, a, b)``, ``("un", op, a)``,
  ``("with", main, ctx)`` (the value of `main`; `ctx` was read to find it, as the row label
  `idxmax` returned), ``("list", elem, rows)`` (a Series or array of values),
  ``("opaque", [leaves])`` (cells known, computation not).

Pandas objects carry their lineage in ``attrs`` (pandas copies ``attrs`` to what it derives),
with the object it was set on (its *owner*). A derived object's lineage is trusted only when
its values equal its owner's at its labels (a selection: masks, ``loc``/``iloc``, ``head``,
``nlargest``, ``sort_values``, ``query``); any other derivation (``cumsum``, ``shift``,
``str.replace``) reads as untracked. Arithmetic, reductions, group-bys and ``value_counts``
are wrapped (`_lineage_pandas`) and build their own lineage. Scalars are tagged subclasses of
the type pandas returned (`np.float64`, `np.int64`, `int`, `float`, `str`).
"""

from __future__ import annotations

import base64
import json
import sys
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

ROW_INDEX = "row_id"
KEY = "_tq_lineage"
MAX_NODES = 96
MAX_ROW_INTS = 200_000
MAX_TEXT = 300
MAX_PRINTED = 20
MAX_REPORT = 900_000
CELL = "<cell>"


class Lin:
    """The lineage of one pandas object (kept in its ``attrs``, shared by what pandas derives).

    `cols` maps a DataFrame's column labels to element expressions; `elem` is a Series'
    element expression; `recipes` maps labels (or (label, column) pairs) of a group-by or
    reduction result to scalar recipes; `filt` are the element expressions that row
    selections read (what a count counted)."""

    __slots__ = ("__weakref__", "cols", "elem", "filt", "index", "order", "owner", "recipes")

    def __init__(
        self,
        owner: Any,
        *,
        cols: dict[Any, Any] | None = None,
        elem: Any = None,
        recipes: Mapping[Any, Any] | None = None,
        filt: tuple[Any, ...] = (),
        index: Any = ROW_INDEX,
        order: tuple[Any, ...] = (),
    ) -> None:
        self.owner = owner
        self.cols = cols
        self.elem = elem
        self.recipes = recipes
        self.filt = filt
        self.index = index  # the index name under which labels are rows (None after a merge)
        self.order = order  # what sorted the rows: a row picked by position was picked by it

    def __deepcopy__(self, memo: dict[int, Any]) -> Lin:
        return self  # immutable once set: pandas copies attrs deeply on every derivation

    def __copy__(self) -> Lin:
        return self


class _State:
    """Per-cell records: values that escaped tracking, printed items, the marked value."""

    def __init__(self) -> None:
        self.escaped: dict[int, tuple[Any, Any]] = {}
        self.printed: list[dict[str, Any]] = []
        self.enabled = False
        self.marked: tuple[Any, ...] = ()
        self.mutated = False  # the session's code edited a bound table in place (kept)


STATE = _State()


def set_lin(obj: Any, lin: Lin) -> Any:
    """Attach `lin` to `obj` (a new attrs dict: pandas shares them between objects)."""
    try:
        obj.attrs = {**obj.attrs, KEY: lin}
    except Exception:
        return obj
    return obj


def from_user(depth: int = 2) -> bool:
    """Whether the wrapped call came from the cell's code (not pandas' own internals)."""
    try:
        code = sys._getframe(depth).f_code
    except ValueError:
        return False
    return code.co_filename == CELL or code.co_name.startswith("tq_builtin_")


# ---- tagged scalars -----------------------------------------------------------------------


def node_of(value: Any) -> Any:
    """The recipe of a tagged scalar, ("const", v) for a plain number, else None."""
    recipe = getattr(value, "_tq", None)
    if recipe is not None:
        return recipe
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | float | np.integer | np.floating):
        return ("const", float(value))
    return None


def count_nodes(node: Any) -> int:
    if not isinstance(node, tuple):
        return 1
    return 1 + sum(count_nodes(part) for part in node[1:] if isinstance(part, tuple))


def combine(op: str, a: Any, b: Any) -> Any:
    """("bin", op, a, b), collapsed to an opaque leaf set when the tree grows too big."""
    if a is None or b is None:
        return None
    node = ("bin", op, a, b)
    if count_nodes(node) > MAX_NODES:
        return ("opaque", tuple(leaves(node)))
    return node


def leaves(node: Any) -> list[Any]:
    """The ("agg", …) and ("list", …) leaves of a recipe (the cells it reads)."""
    if not isinstance(node, tuple) or not node:
        return []
    if node[0] in ("agg", "list"):
        return [node]
    if node[0] == "opaque":
        return list(node[1])
    out: list[Any] = []
    for part in node[1:]:
        if isinstance(part, tuple):
            out += leaves(part)
    return out


_BINOPS = {
    "__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/",
    "__floordiv__": "//", "__mod__": "%", "__pow__": "**",
}  # fmt: skip


def _make_binop(base: type, name: str, op: str, reverse: bool) -> Any:
    method = getattr(base, name)

    def binop(self: Any, other: Any) -> Any:
        result = method(self, other)
        if result is NotImplemented or isinstance(result, bool | np.bool_):
            return result
        a, b = self._tq, node_of(other)
        return tag(result, combine(op, b, a) if reverse else combine(op, a, b))

    return binop


def _make_unop(base: type, name: str) -> Any:
    method = getattr(base, name)

    def unop(self: Any, *args: Any) -> Any:
        result = method(self, *args)
        op = name.strip("_")
        if name == "__round__":
            op = f"round:{args[0] if args and args[0] is not None else 0}"
        return tag(result, ("un", op, self._tq))

    return unop


def _tagged_class(base: type) -> type:
    attrs: dict[str, Any] = {"_tq": None}
    for name, op in _BINOPS.items():
        if base is str:
            continue  # a string's +, * and % make new text: not a value of the table
        attrs[name] = _make_binop(base, name, op, False)
        rname = "__r" + name[2:]
        if hasattr(base, rname):
            attrs[rname] = _make_binop(base, rname, op, True)
    for name in ("__neg__", "__abs__", "__round__"):
        if hasattr(base, name):
            attrs[name] = _make_unop(base, name)
    # shown exactly as the value pandas returned (the model never sees the tag)
    if issubclass(base, np.generic):
        attrs["__repr__"] = lambda self: base.__repr__(base(self.item()))
        attrs["__str__"] = lambda self: base.__str__(base(self.item()))
    attrs["__reduce__"] = lambda self: (base, (base(self),))
    # named as the type pandas returned: type(x).__name__ and its repr show no tag either
    attrs["__module__"], attrs["__qualname__"] = base.__module__, base.__qualname__
    return type(base.__name__, (base,), attrs)


TAGGED: dict[type, type] = {
    base: _tagged_class(base) for base in (np.float64, np.int64, float, int, str)
}


def tag(value: Any, node: Any) -> Any:
    """`value` as a tagged scalar carrying `node` (the value itself when it cannot be)."""
    if node is None or isinstance(value, bool | np.bool_):
        return value
    if isinstance(value, np.floating):
        base: type = np.float64
    elif isinstance(value, np.integer):
        base = np.int64
    elif isinstance(value, float | int | str):
        base = str if isinstance(value, str) else (float if isinstance(value, float) else int)
    else:
        return value
    try:
        out = TAGGED[base](value)
        out._tq = node
    except (TypeError, ValueError, OverflowError):
        return value
    return out


# ---- serialization ------------------------------------------------------------------------


MAX_RUNS = 64


def _runs(rows: Any) -> list[int] | str:
    """Row ids as flat [start, end, start, end, …] runs (inclusive), sorted; past `MAX_RUNS`
    runs (a scattered selection) a bitmap, ``"bits:FIRST:SPAN:BASE64"`` (bit i set: row
    FIRST + i), which is smaller and far cheaper to write and read as JSON."""
    try:
        values = np.asarray(rows, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return []
    steps = np.diff(values)
    if steps.size and not bool((steps > 0).all()):
        values = np.unique(values)  # selections keep the rows sorted: most never get here
        steps = np.diff(values)
    if values.size == 0:
        return []
    breaks = np.nonzero(steps != 1)[0]
    first, span = int(values[0]), int(values[-1] - values[0] + 1)
    digits = len(str(int(values[-1]))) + 1
    if breaks.size >= MAX_RUNS and span // 6 < 2 * (breaks.size + 1) * digits:
        bits = np.zeros(span, dtype=bool)
        bits[values - first] = True
        return f"bits:{first}:{span}:" + base64.b64encode(np.packbits(bits).tobytes()).decode()
    starts = np.concatenate(([values[0]], values[breaks + 1]))
    ends = np.concatenate((values[breaks], [values[-1]]))
    return list(np.column_stack((starts, ends)).ravel().tolist())


def has_map(node: Any) -> bool:
    if not isinstance(node, tuple) or not node:
        return False
    if node[0] == "map":
        return True
    return any(has_map(p) for p in node[1:] if isinstance(p, tuple | list))


class _Encoder:
    """Recipes to JSON: row sets go to one table (`rows`), capped in size; a merge's row maps
    to another (`at`), one row id per leaf row, in the leaf's order."""

    def __init__(self) -> None:
        self.rows: list[list[int] | str] = []
        self.at: list[list[Any]] = []
        self.ints = 0
        self.cut = False

    def at_ref(self, labels: list[Any]) -> int:
        if self.ints + len(labels) > MAX_ROW_INTS:
            self.cut = True
            labels = []
        self.ints += len(labels)
        self.at.append([_plain(v) if v == v else None for v in labels])  # NaN: unmatched
        return len(self.at) - 1

    def elem(self, node: Any, labels: list[Any]) -> Any:
        """An element expression whose merge maps are resolved for these leaf rows."""
        if not isinstance(node, tuple):
            return _plain(node)
        if node[0] == "map":
            mapped = node[1].reindex(labels).tolist()
            return ["at", self.at_ref(mapped), self.elem(node[2], mapped)]
        if node[0] == "rowagg":
            return ["rowagg", node[1], [self.elem(src, labels) for src in node[2]]]
        if node[0] == "scalar":
            return ["scalar", self.encode(node[1])]
        return [node[0], *(self.elem(p, labels) for p in node[1:])]

    def rows_ref(self, rows: Any) -> int:
        runs = _runs(rows)
        size = len(runs) if isinstance(runs, list) else len(runs) // 8
        if self.ints + size > MAX_ROW_INTS:
            self.cut = True
            runs = []
        self.ints += size
        self.rows.append(runs)
        return len(self.rows) - 1

    def encode(self, node: Any) -> Any:
        if not isinstance(node, tuple):
            return _plain(node)
        kind = node[0]
        if kind in ("agg", "list"):
            op = node[1] if kind == "agg" else "list"
            if has_map(node[-2]):  # rows are positions: each map gives its rows in this order
                labels = list(node[-1])
                return [kind, op, self.elem(node[-2], labels), self.rows_ref(range(len(labels)))]
            return [kind, op, self.encode(node[-2]), self.rows_ref(node[-1])]
        if kind == "opaque":
            return ["opaque", [self.encode(leaf) for leaf in node[1]]]
        if kind == "rowagg":
            return ["rowagg", node[1], [self.encode(src) for src in node[2]]]
        return [kind, *(self.encode(part) for part in node[1:])]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def item(text: str, node: Any) -> dict[str, Any]:
    """One traced value as sent to the host: its text, recipe and row table."""
    enc = _Encoder()
    recipe = enc.encode(node) if node is not None else None
    out = {"text": text[:MAX_TEXT], "recipe": recipe, "rows": enc.rows, "cut": enc.cut}
    if enc.at:
        out["at"] = enc.at
    return out


def reset() -> None:
    STATE.escaped.clear()
    STATE.marked = ()
    STATE.printed.clear()


def escaped(value: Any, node: Any) -> None:
    """Record that a tracked object left pandas as `value` (an array, a list, a dict)."""
    if node is not None and len(STATE.escaped) < 256:
        STATE.escaped[id(value)] = (value, node)


def report(value: Any, recipe_of: Any) -> str:
    """The cell's lineage (value and printed items) as JSON text for the reply."""
    value_item = None
    if value is not None:
        node = recipe_of(value)
        if node is None and id(value) in STATE.escaped:
            node = STATE.escaped[id(value)][1]
        value_item = item(_text(value), node)
        if node is None and STATE.escaped:  # what the code read before tracking ended
            read = [leaf for _, n in list(STATE.escaped.values())[-4:] for leaf in leaves(n)]
            value_item["escaped"] = item("", ("opaque", tuple(read)))
    out: dict[str, Any] = {"value": value_item, "printed": STATE.printed[:MAX_PRINTED]}
    if STATE.mutated:
        for entry in [value_item, *out["printed"]]:
            if entry is not None:
                entry["mutated"] = True
    text = json.dumps(out, allow_nan=False, default=str)
    if len(text) > MAX_REPORT:  # too many rows: keep the recipes, say the rows were cut
        for entry in [value_item, *out["printed"]]:
            for part in (entry, (entry or {}).get("escaped")):
                if part is not None:
                    part["rows"], part["cut"] = [[] for _ in part["rows"]], True
                    part["at"] = [[] for _ in part.get("at", [])]
        text = json.dumps(out, allow_nan=False, default=str)
    return text


def _text(value: Any) -> str:
    """A value as the host matches it with an answer: one-dimensional values as a list."""
    try:
        if getattr(value, "ndim", 0) == 1 and hasattr(value, "tolist"):
            return str(value.tolist()[:50])[:MAX_TEXT]
        return str(value)[:MAX_TEXT]
    except Exception:
        return ""


_weak_owner = weakref.ref  # re-exported for the pandas wrappers (keeps imports in one place)
