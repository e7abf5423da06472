"""Installing cell lineage in the sandbox child (see `_lineage`): the pandas wrappers, the
frames' base lineage, and the lineage-keeping builtins a cell's calls are rewritten to
(`_repl.compile_cell`). Runs inside the sandbox child and in host tests.
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Any

import pandas as pd

if __package__:
    from . import _lineage as L
    from . import _lineage_groups as G
    from . import _lineage_pandas as P
else:  # loaded by path inside the sandbox child
    import _lineage as L  # type: ignore[import-not-found,no-redef]
    import _lineage_groups as G  # type: ignore[import-not-found,no-redef]
    import _lineage_pandas as P  # type: ignore[import-not-found,no-redef]


def _escape(name: str) -> Any:
    def build(obj: Any, result: Any, args: Any, kwargs: Any) -> Any:
        node = P.recipe_of(obj)
        L.escaped(result, node)
        return result

    return build


def _values_property(cls: Any) -> Any:
    original = cls.values

    def values(self: Any) -> Any:
        result = original.fget(self)
        if L.STATE.enabled and L.from_user():
            with contextlib.suppress(Exception):
                L.escaped(result, P.recipe_of(self))
        return result

    return property(values)


class Builtins:
    """Lineage-keeping stand-ins for the builtins a cell calls by name (`rewrite`)."""

    @staticmethod
    def tq_builtin_len(obj: Any) -> Any:
        n = builtins.len(obj)
        if isinstance(obj, pd.DataFrame | pd.Series):
            return L.tag(n, P.count_recipe(obj))
        return n

    @staticmethod
    def tq_builtin_float(*args: Any) -> Any:
        value = builtins.float(*args)
        return L.tag(value, getattr(args[0], "_tq", None)) if args else value

    @staticmethod
    def tq_builtin_int(*args: Any) -> Any:
        value = builtins.int(*args)
        node = getattr(args[0], "_tq", None) if args else None
        return L.tag(value, ("un", "int", node) if node is not None else None)

    @staticmethod
    def tq_builtin_str(*args: Any, **kwargs: Any) -> Any:
        value = builtins.str(*args, **kwargs)
        return L.tag(value, getattr(args[0], "_tq", None)) if args else value

    @staticmethod
    def tq_builtin_sum(*args: Any, **kwargs: Any) -> Any:
        return _over_series(builtins.sum, "sum", args, kwargs)

    @staticmethod
    def tq_builtin_max(*args: Any, **kwargs: Any) -> Any:
        return _over_series(builtins.max, "max", args, kwargs)

    @staticmethod
    def tq_builtin_min(*args: Any, **kwargs: Any) -> Any:
        return _over_series(builtins.min, "min", args, kwargs)

    @staticmethod
    def tq_builtin_print(*args: Any, **kwargs: Any) -> None:
        for arg in args[: L.MAX_PRINTED]:
            node = P.recipe_of(arg)
            if node is not None and len(L.STATE.printed) < L.MAX_PRINTED:
                L.STATE.printed.append(L.item(L._text(arg), node))
        builtins.print(*args, **kwargs)

    @staticmethod
    def start() -> None:
        """Before a cell: fresh records, lineage on."""
        L.reset()
        L.STATE.enabled = True

    @staticmethod
    def mark(value: Any) -> None:
        """Name the cell's value for its lineage without making it the last expression (whose
        preview a caller may not want to pay for: DTR's probe)."""
        L.STATE.marked = (value,)

    @staticmethod
    def finish(value: Any) -> str | None:
        """After a cell: lineage off, the report of `value` (else of the marked value) and
        the printed values."""
        L.STATE.enabled = False
        if value is None and L.STATE.marked:
            value = L.STATE.marked[0]
        try:
            return L.report(value, P.recipe_of)
        except Exception:
            return None
        finally:
            L.reset()


def _over_series(func: Any, name: str, args: Any, kwargs: Any) -> Any:
    """``sum(series)``, ``max(series)``: the builtin's own value (a Python number, as plain
    Python gives), with the lineage of the Series' reduction."""
    value = func(*args, **kwargs)
    if len(args) != 1 or kwargs or not isinstance(args[0], pd.Series):
        return value
    try:
        return L.tag(value, P.reduction(args[0], name, value))
    except Exception:
        return value


BUILTIN_NAMES = ("len", "float", "int", "str", "sum", "max", "min", "print")
Builtins.NAMES = BUILTIN_NAMES  # type: ignore[attr-defined]


def install() -> None:
    """Wrap pandas once (idempotent)."""
    if getattr(pd.Series, "_tq_installed", False):
        return
    for name in (*P.REDUCTIONS, "item"):
        P._wrap(pd.Series, name, P._series_reduce(name))
    for name in ("idxmax", "idxmin"):
        P._wrap(pd.Series, name, G.idx_label)
    for dunder, op in {**L._BINOPS, **P._CMP}.items():
        P._wrap(pd.Series, dunder, P._series_binop(op))
        rname = "__r" + dunder[2:]
        if dunder in L._BINOPS and hasattr(pd.Series, rname):
            P._wrap(pd.Series, rname, P._series_binop("r" + op))
    from pandas.core import groupby, indexing

    indexers = ((indexing._LocIndexer, False), (indexing._iLocIndexer, True),
                (indexing._AtIndexer, False), (indexing._iAtIndexer, True))  # fmt: skip
    for indexer, positional in indexers:
        P._wrap(indexer, "__getitem__", P._indexer(positional))
    P._wrap(pd.Series, "__getitem__", P._series_getitem)
    for cls in (pd.Series, pd.DataFrame):
        for name in SELECTIONS:
            if hasattr(cls, name):
                P._wrap(cls, name, P.keep_rows(name))
    P._wrap(pd.DataFrame, "__getitem__", P._frame_getitem)
    P._wrap(pd.DataFrame, "__getattr__", P._frame_getitem)  # df.Q3: a column, as df["Q3"]
    setattr(pd.DataFrame, "shape", P._shape(pd.DataFrame.shape))  # noqa: B010 - a property
    for name in ("sum", "mean", "median", "min", "max", "count"):
        P._wrap(pd.DataFrame, name, P._frame_reduce(name))
    grouped: tuple[Any, ...] = (groupby.SeriesGroupBy, groupby.DataFrameGroupBy)
    for gb_class in grouped:
        for name in P.GROUP_OPS:
            P._wrap(gb_class, name, G.group_op(name))
    setattr(pd.DataFrame, "groupby", G.groupby(pd.DataFrame.groupby))  # noqa: B010
    getitem = G.gb_getitem(groupby.DataFrameGroupBy.__getitem__)
    setattr(groupby.DataFrameGroupBy, "__getitem__", getitem)  # noqa: B010
    P._wrap(pd.Series, "value_counts", G.value_counts)
    _install_cleaning()
    _install_edits()
    for name, op in COMPARISONS.items():  # s.eq(3) as s == 3
        P._wrap(pd.Series, name, P._series_binop(op))
    for name in ("agg", "aggregate"):  # s.agg("sum") as s.sum()
        P._wrap(pd.Series, name, _named_reduction)
    P._wrap(pd.Series, "__getattr__", P._series_getitem)  # row.Q3 as row["Q3"]
    setattr(pd.DataFrame, "merge", G.merge(pd.DataFrame.merge))  # noqa: B010
    P._wrap(pd.DataFrame, "set_index", G.set_index)
    setattr(pd, "merge", G.merge(pd.merge))  # noqa: B010
    frames: tuple[Any, ...] = (pd.Series, pd.DataFrame)
    for cls in frames:
        for name in P.ESCAPES:
            if hasattr(cls, name):
                P._wrap(cls, name, _escape(name))
        setattr(cls, "values", _values_property(cls))  # noqa: B010
    pd.Series._tq_installed = True  # type: ignore[attr-defined]


def bind(frames: dict[str, pd.DataFrame]) -> None:
    """Give each bound frame its base lineage: column c of frame f is ("src", f, c); a new
    session has not edited its tables."""
    L.STATE.mutated = False
    for name, df in frames.items():
        if df.index.name != L.ROW_INDEX or not df.index.is_unique:
            continue
        cols = {c: ("src", name, str(c)) for c in df.columns}
        df.attrs = {**df.attrs, L.KEY: L.Lin(df, cols=cols)}


SELECTIONS = ("head", "tail", "sort_values", "sort_index", "nlargest", "nsmallest", "query",
              "dropna", "drop_duplicates", "copy", "sample", "filter")  # fmt: skip
CLEANING = ("astype", "map", "apply", "fillna", "round", "abs", "clip", "isin", "between")
COMPARISONS = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _install_cleaning() -> None:
    """Elementwise transforms keep their rows' cells (`_lineage_pandas.cleaned`);
    ``df[key] = …`` keeps the new column's (`_lineage_pandas.set_column`)."""
    from pandas.core.strings.accessor import StringMethods

    for name in CLEANING:
        P._wrap(pd.Series, name, P.cleaned(lambda s, args: s))
    for name in dir(StringMethods):
        if not name.startswith("_") and callable(getattr(StringMethods, name)):
            P._wrap(StringMethods, name, P.cleaned(lambda acc, args: acc._data))
    P._wrap(pd.DataFrame, "__setitem__", P.set_column)
    numeric = P._wrap_function(pd.to_numeric, P.cleaned(lambda _, args: args[0] if args else None))
    setattr(pd, "to_numeric", numeric)  # noqa: B010


VALUE_EDITS = ("replace", "fillna", "mask", "where", "clip", "interpolate", "bfill", "ffill")
LABEL_EDITS = ("rename", "set_axis", "set_index", "reset_index", "rename_axis")  # in place


def _forget(obj: Any) -> None:
    """Drop an object's lineage (its labels no longer name the table's rows or columns)."""
    if isinstance(getattr(obj, "attrs", None), dict) and L.KEY in obj.attrs:
        obj.attrs = {k: v for k, v in obj.attrs.items() if k != L.KEY}


def _edited(kind: str) -> Any:
    def build(obj: Any, result: Any, args: Any, kwargs: Any) -> Any:
        if kind == "always" or kwargs.get("inplace"):
            if kind == "labels":
                _forget(obj)
            elif P.lin_of(obj) is not None:
                L.STATE.mutated = True  # later values may not be the table's: never verified
        return result

    return build


def _setattr(original: Any) -> Any:
    def setattr_(self: Any, name: str, value: Any) -> None:
        original(self, name, value)
        if name in ("columns", "index") and L.STATE.enabled and L.from_user():
            _forget(self)

    return setattr_


def _install_edits() -> None:
    """In-place edits: new labels drop the lineage; new values mark the session as having
    changed the table's data (`STATE.mutated`, sent with every later value)."""
    from pandas.core import indexing

    frames: tuple[Any, ...] = (pd.Series, pd.DataFrame)
    for cls in frames:
        for name in VALUE_EDITS:
            P._wrap(cls, name, _edited("values"))
        for name in LABEL_EDITS:
            if hasattr(cls, name):
                P._wrap(cls, name, _edited("labels"))
        P._wrap(cls, "update", _edited("always"))
        setattr(cls, "__setattr__", _setattr(cls.__setattr__))  # noqa: B010
    P._wrap(pd.Series, "__setitem__", _edited("always"))
    setters: tuple[Any, ...] = (indexing._LocIndexer, indexing._iLocIndexer,
                                indexing._AtIndexer, indexing._iAtIndexer)  # fmt: skip
    for setter in setters:
        P._wrap(setter, "__setitem__", _indexed_edit)


def _indexed_edit(indexer: Any, result: Any, args: Any, kwargs: Any) -> Any:
    if P.lin_of(indexer.obj) is not None:
        L.STATE.mutated = True
    return result


def _named_reduction(s: Any, result: Any, args: Any, kwargs: Any) -> Any:
    name = args[0] if args else kwargs.get("func")
    if isinstance(name, str) and name in P.REDUCTIONS and not isinstance(result, pd.Series):
        return L.tag(result, P.reduction(s, name, result))
    return result
