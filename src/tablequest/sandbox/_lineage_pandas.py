"""The pandas side of cell lineage (see `_lineage`): resolving an object's lineage and the
wrappers that build it (reductions, arithmetic, scalar indexing, masks, counts, group-bys,
``value_counts``, values leaving pandas). Runs inside the sandbox child and in host tests.

Every wrapper calls pandas first and returns its result unchanged when lineage cannot be
built (a lineage error never changes what the code computes); lineage is built only for
calls made by the cell's code (`_lineage.from_user`), never for pandas' internal calls.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

if __package__:
    from . import _lineage as L
else:  # loaded by path inside the sandbox child
    import _lineage as L  # type: ignore[import-not-found,no-redef]

REDUCTIONS = ("sum", "mean", "median", "min", "max", "count", "std", "var", "prod", "nunique")
GROUP_OPS = (*REDUCTIONS, "size", "first", "last")
ESCAPES = ("to_numpy", "tolist", "to_list", "to_dict", "unique", "iterrows", "itertuples")
_CMP = {"__gt__": ">", "__ge__": ">=", "__lt__": "<", "__le__": "<=", "__eq__": "==",
        "__ne__": "!=", "__and__": "&", "__or__": "|"}  # fmt: skip


def lin_of(obj: Any) -> L.Lin | None:
    attrs = getattr(obj, "attrs", None)
    lin = attrs.get(L.KEY) if isinstance(attrs, dict) else None
    return lin if isinstance(lin, L.Lin) else None


def _same_values(s: pd.Series, ref: pd.Series) -> bool:
    """Whether `s` holds `ref`'s values at its labels (a selection, not a derivation)."""
    if not ref.index.is_unique or len(s) > len(ref):
        return False
    if len(s) == len(ref) and s.index.equals(ref.index):
        other = ref
    else:
        if not s.index.isin(ref.index).all():
            return False
        other = ref.reindex(s.index)
    a, b = s.to_numpy(), other.to_numpy()
    if a.dtype.kind in "fiub" and b.dtype.kind in "fiub":
        return bool(np.array_equal(a.astype(float), b.astype(float), equal_nan=True))
    same = pd.Series(a == b) | (pd.isna(pd.Series(a)) & pd.isna(pd.Series(b)))
    return bool(same.all())


def series_lin(s: Any) -> tuple[str, Any, tuple[Any, ...]] | None:
    """("aligned", elem, filt) for a Series of table rows, ("explicit", recipes, filt) for a
    group-by or reduction result, or None when its values are not traceable."""
    lin = lin_of(s)
    if lin is None or not isinstance(s, pd.Series):
        return None
    owner, elem, recipes = lin.owner, lin.elem, lin.recipes
    if owner is not s:
        if isinstance(owner, pd.DataFrame):
            name = s.name
            try:
                if name not in owner.columns:
                    return None
                ref = owner[name]
            except (TypeError, KeyError, ValueError):
                return None
            if not isinstance(ref, pd.Series):
                return None
            elem = (lin.cols or {}).get(name)
            recipes = _column_recipes(lin.recipes, name)
        elif isinstance(owner, pd.Series):
            ref = owner
        else:
            return None
        if ref.index.name != s.index.name or not _same_values(s, ref):
            return None
    if elem is not None and s.index.name == lin.index:
        return ("aligned", elem, lin.filt)
    if recipes:
        return ("explicit", recipes, lin.filt)
    return None


def frame_lin(df: Any) -> L.Lin | None:
    """A DataFrame's lineage when its rows are table rows (selections keep the row ids)."""
    lin = lin_of(df)
    if lin is None or not isinstance(df, pd.DataFrame) or lin.cols is None:
        return None
    if df.index.name != lin.index:
        return None
    owner = lin.owner
    if owner is not df and (not isinstance(owner, pd.DataFrame) or owner.index.name != lin.index):
        return None
    return lin


def element(s: pd.Series, resolved: tuple[str, Any, Any], label: Any) -> Any:
    """The recipe of one element of a resolved Series."""
    kind, data, _ = resolved
    if kind == "aligned":
        return ("agg", "item", data, [label])
    return data.get(label)


def rows_where(s: pd.Series, mask: Any) -> Any:
    return s.index[np.asarray(mask, dtype=bool)].to_numpy()


def reduction(s: pd.Series, name: str, result: Any) -> Any:
    """The recipe of ``s.<name>()`` = `result`."""
    resolved = series_lin(s)
    if resolved is None:
        return None
    kind, data, _ = resolved
    if name in ("idxmax", "idxmin"):
        return ("with", ("const", L._plain(result)), element(s, resolved, result))
    notna = s.notna().to_numpy() if s.hasnans else np.ones(len(s), dtype=bool)
    if name in ("min", "max"):
        mask = (s == result).to_numpy() & notna
    elif name == "sum" and s.dtype == bool:
        mask, name = s.to_numpy(dtype=bool), "count"
    else:
        mask = notna
    if kind == "aligned":
        return ("agg", name, data, rows_where(s, mask))
    parts = [data.get(label) for label in rows_where(s, mask)]
    parts = [p for p in parts if p is not None]
    if name in ("min", "max", "item", "first", "last") and len(parts) == 1:
        return parts[0]
    return ("opaque", tuple(leaf for p in parts for leaf in L.leaves(p))) if parts else None


def _wrap(cls: Any, name: str, build: Any) -> None:
    """Replace ``cls.name`` by a wrapper that tags its result with ``build(self, result, …)``."""
    original = getattr(cls, name)
    builds = getattr(original, "_tq_builds", None)
    if builds is not None and getattr(original, "_tq_owner", None) is cls:
        builds.append(build)  # a second concern (cleaning, then in-place edits): both run
        return
    builds = [build]

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if not L.STATE.enabled or not L.from_user():
            return result
        try:
            for step in builds:
                result = step(self, result, args, kwargs)
            return result
        except Exception:
            return result

    wrapper._tq_builds = builds  # type: ignore[attr-defined]
    wrapper._tq_owner = cls  # type: ignore[attr-defined]
    setattr(cls, name, wrapper)


def _wrap_function(original: Any, build: Any) -> Any:
    """A module-level function (``pd.to_numeric``) wrapped like `_wrap`'s methods."""

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not L.STATE.enabled or not L.from_user():
            return result
        try:
            return build(None, result, args, kwargs)
        except Exception:
            return result

    return wrapper


def _series_reduce(name: str) -> Any:
    def build(s: pd.Series, result: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(result, pd.Series | pd.DataFrame):
            return result
        return L.tag(result, reduction(s, name, result))

    return build


def _series_binop(op: str) -> Any:
    def build(s: pd.Series, result: Any, args: Any, kwargs: Any) -> Any:
        if not isinstance(result, pd.Series) or not args:
            return result
        mine = series_lin(s)
        other = args[0]
        if isinstance(other, pd.Series):
            theirs = series_lin(other)
            b = theirs[1] if theirs is not None and theirs[0] == "aligned" else None
        else:
            node = L.node_of(other)
            b = ("scalar", node) if node is not None and node[0] != "const" else node
            if b is None and isinstance(other, str):
                b = ("const", other)
        if mine is None or mine[0] != "aligned" or b is None:
            return result
        index = _index_of(s)
        lin = L.Lin(result, elem=("bin", op, mine[1], b), filt=mine[2], index=index)
        return L.set_lin(result, lin)

    return build


def _scalar_lookup(obj: Any, key: Any, positional: bool) -> Any:
    """The recipe of a scalar read from `obj` by `key` (labels, or positions)."""
    ctx = [L.node_of(k) for k in (key if isinstance(key, tuple) else (key,))]
    ctx = [c for c in ctx if c is not None and c[0] != "const"]
    if isinstance(obj, pd.Series):
        label = obj.index[key] if positional else key
        resolved = series_lin(obj)
        node = element(obj, resolved, label) if resolved is not None else None
    elif isinstance(obj, pd.DataFrame) and isinstance(key, tuple) and len(key) == 2:
        row, col = key
        if positional:
            row, col = obj.index[row], obj.columns[col]
        trusted = trusted_frame(obj)
        if trusted is not None and trusted.cols is not None and col in trusted.cols:
            node = ("agg", "item", trusted.cols[col], [row])
        else:
            column = obj[col]
            resolved = series_lin(column) if isinstance(column, pd.Series) else None
            node = element(column, resolved, row) if resolved is not None else None
    else:
        return None
    if positional and node is not None:  # picked by position in sorted rows: by the sort keys
        node = _with_order(node, lin_of(obj), label if isinstance(obj, pd.Series) else row)
    for extra in ctx:
        node = ("with", node, extra) if node is not None else None
    return node


def _with_order(node: Any, lin: L.Lin | None, label: Any) -> Any:
    for elem in lin.order if lin is not None else ():
        node = ("with", node, ("agg", "item", elem, [label]))
    return node


def _filter_exprs(key: Any) -> tuple[Any, ...]:
    """The element expressions a boolean mask read (what a later count counted)."""
    parts = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    for part in parts:
        if isinstance(part, pd.Series) and part.dtype == bool:
            resolved = series_lin(part)
            if resolved is not None and resolved[0] == "aligned":
                out.append(resolved[1])
    return tuple(out)


def _indexer(positional: bool) -> Any:
    def build(indexer: Any, result: Any, args: Any, kwargs: Any) -> Any:
        obj, key = indexer.obj, args[0] if args else None
        if isinstance(obj, pd.DataFrame) and isinstance(result, pd.Series) and _one_row(key):
            return _row_of(result, obj, key, positional)
        if isinstance(result, pd.Series | pd.DataFrame):
            return selected(result, obj, _filter_exprs(key))
        return L.tag(result, _scalar_lookup(obj, key, positional))

    return build


def _one_row(key: Any) -> bool:
    """``df.loc[label]`` / ``df.iloc[3]``: a key that picks one row, all its columns."""
    if isinstance(key, tuple):
        return len(key) == 2 and _one_row(key[0]) and isinstance(key[1], slice)
    return pd.api.types.is_scalar(key) or getattr(key, "_tq", None) is not None


def _row_of(row: pd.Series, df: pd.DataFrame, key: Any, positional: bool) -> Any:
    """One row as a Series over the columns: each element is that row's cell."""
    lin = trusted_frame(df)
    if lin is None or lin.cols is None:
        return row
    label = key[0] if isinstance(key, tuple) else key
    label = df.index[label] if positional else label
    cols = lin.cols
    recipes: dict[Any, Any] = {c: ("agg", "item", cols[c], [label]) for c in row.index if c in cols}
    context = L.node_of(key[0] if isinstance(key, tuple) else key)
    if context is not None and context[0] != "const":
        recipes = {c: ("with", r, context) for c, r in recipes.items()}
    if positional:
        recipes = {c: _with_order(r, lin, label) for c, r in recipes.items()}
    return L.set_lin(row, L.Lin(row, recipes=recipes, index=row.index.name))


def trusted_frame(df: Any) -> L.Lin | None:
    """A frame lineage set on `df` itself (by `bind` or a wrapped selection)."""
    lin = lin_of(df)
    if lin is None or lin.owner is not df or df.index.name != lin.index:
        return None
    return lin


def selected(
    result: Any, source: Any, exprs: tuple[Any, ...] = (), order: tuple[Any, ...] = ()
) -> Any:
    """`result` holds `source`'s values at its labels (a selection): its own lineage, so it
    is trusted without comparing values; `exprs` are the masks that selected its rows,
    `order` what sorted them."""
    if isinstance(source, pd.DataFrame):
        lin = trusted_frame(source)
        if lin is None:
            return result
        if isinstance(result, pd.DataFrame):
            new = L.Lin(result, cols=lin.cols, recipes=lin.recipes, filt=lin.filt + exprs,
                        index=lin.index, order=order or lin.order)  # fmt: skip
            return L.set_lin(result, new)
        name = result.name
        if not pd.api.types.is_hashable(name):
            return result
        elem = (lin.cols or {}).get(name)
        recipes = _column_recipes(lin.recipes, name)
    else:
        resolved = series_lin(source)
        lin = lin_of(source)
        if resolved is None or lin is None or not isinstance(result, pd.Series):
            return result
        elem = resolved[1] if resolved[0] == "aligned" else None
        recipes = resolved[1] if resolved[0] == "explicit" else None
    new = L.Lin(result, elem=elem, recipes=recipes, filt=lin.filt + exprs, index=lin.index,
                order=order or lin.order)  # fmt: skip
    return L.set_lin(result, new)


def _column_recipes(recipes: Mapping[Any, Any] | None, name: Any) -> Mapping[Any, Any] | None:
    """A column's recipes from a frame's (keyed by (label, column))."""
    column = getattr(recipes, "column", None)
    if column is not None:  # a group-by's, built on demand
        found: Mapping[Any, Any] = column(name)
        return found
    found = {
        k[0]: v for k, v in (recipes or {}).items()
        if isinstance(k, tuple) and len(k) == 2 and k[1] == name
    }  # fmt: skip
    return found or None


def _series_getitem(s: pd.Series, result: Any, args: Any, kwargs: Any) -> Any:
    if isinstance(result, pd.Series | pd.DataFrame):
        return selected(result, s, _filter_exprs(args[0]))
    key = args[0]
    positional = not (pd.api.types.is_hashable(key) and key in s.index)
    return L.tag(result, _scalar_lookup(s, key, positional))


def _frame_getitem(df: pd.DataFrame, result: Any, args: Any, kwargs: Any) -> Any:
    if isinstance(result, pd.Series | pd.DataFrame):
        return selected(result, df, _filter_exprs(args[0]))
    return result


def keep_rows(name: str) -> Any:
    """``head``, ``sort_values``, ``nlargest``, ``query``, ``dropna``, …: rows kept as they
    are; a sort's keys are remembered (a row then picked by position was picked by them)."""

    def build(obj: Any, result: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(result, pd.Series | pd.DataFrame) and result.index.name == obj.index.name:
            return selected(result, obj, order=_order_exprs(obj, name, args, kwargs))
        return result

    return build


def _order_exprs(obj: Any, name: str, args: Any, kwargs: Any) -> tuple[Any, ...]:
    if name not in ("sort_values", "nlargest", "nsmallest"):
        return ()
    if isinstance(obj, pd.Series):
        resolved = series_lin(obj)
        return (resolved[1],) if resolved is not None and resolved[0] == "aligned" else ()
    lin = trusted_frame(obj)
    position = 0 if name == "sort_values" else 1
    keys = kwargs.get("by" if name == "sort_values" else "columns")
    keys = keys if keys is not None else (args[position] if len(args) > position else None)
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    cols = (lin.cols or {}) if lin is not None else {}
    return tuple(cols[k] for k in keys if pd.api.types.is_hashable(k) and k in cols)


def count_recipe(df: Any) -> Any:
    """The recipe of a row count of `df`: the rows, read in the columns that selected them."""
    if isinstance(df, pd.Series):
        resolved = series_lin(df)
        if resolved is None or resolved[0] != "aligned":
            return None
        return ("agg", "size", resolved[2][-1] if resolved[2] else resolved[1], df.index.to_numpy())
    lin = frame_lin(df)
    if lin is None or lin.cols is None:
        return None
    exprs = lin.filt or tuple(lin.cols[c] for c in df.columns[:1] if c in lin.cols)
    if not exprs:
        return None
    return ("agg", "size", exprs[-1], df.index.to_numpy())


def _shape(original: Any) -> Any:
    def shape(self: pd.DataFrame) -> Any:
        value = original.fget(self)
        if not L.STATE.enabled or not L.from_user():
            return value
        try:
            return (L.tag(value[0], count_recipe(self)), value[1])
        except Exception:
            return value

    return property(shape)


def _frame_reduce(name: str) -> Any:
    def build(df: pd.DataFrame, result: Any, args: Any, kwargs: Any) -> Any:
        lin = trusted_frame(df)
        if lin is None or lin.cols is None or not isinstance(result, pd.Series):
            return result
        cols = lin.cols
        axis = kwargs.get("axis", args[0] if args else 0)
        used = [c for c in result.index if c in cols] if axis in (0, "index") else None
        if used is not None:
            recipes = {}
            for col in used:
                recipes[col] = reduction(df[col], name, result[col])
            return L.set_lin(result, L.Lin(result, recipes=recipes))
        numeric = df.select_dtypes("number") if name not in ("count", "nunique") else df
        srcs = [cols[c] for c in numeric.columns if c in cols]
        if not srcs:
            return result
        rowagg = L.Lin(result, elem=("rowagg", name, srcs), filt=lin.filt, index=lin.index)
        return L.set_lin(result, rowagg)

    return build


def recipe_of(value: Any) -> Any:
    """The recipe of a cell's value: tagged scalars, Series, DataFrames, escaped values."""
    node = getattr(value, "_tq", None)
    if node is not None:
        return node
    if isinstance(value, pd.Series):
        resolved = series_lin(value)
        if resolved is None:
            return None
        if resolved[0] == "aligned":
            return ("list", resolved[1], value.index.to_numpy())
        parts = [resolved[1].get(label) for label in value.index[:200]]
        leaves = [leaf for p in parts if p is not None for leaf in L.leaves(p)]
        return ("opaque", tuple(leaves)) if leaves else None
    if isinstance(value, pd.DataFrame):
        lin = trusted_frame(value)
        if lin is None or lin.cols is None:
            return None
        rows = value.index.to_numpy()
        leaves = [("list", lin.cols[c], rows) for c in value.columns if c in lin.cols]
        return ("opaque", tuple(leaves)) if leaves else None
    found = L.STATE.escaped.get(id(value))
    return found[1] if found is not None and found[0] is value else None


def _index_of(obj: Any) -> Any:
    lin = lin_of(obj)
    return lin.index if lin is not None else L.ROW_INDEX


def cleaned(source_of: Any) -> Any:
    """A builder for elementwise transforms (``str`` methods, ``astype``, ``map``, ``apply``,
    ``fillna``, ``to_numeric``): each result element comes from the same row's element, its
    value no longer the cell's (``("un", "clean", elem)``: the host re-reads it as a number)."""

    def build(obj: Any, result: Any, args: Any, kwargs: Any) -> Any:
        source = source_of(obj, args)
        if not isinstance(result, pd.Series) or not isinstance(source, pd.Series):
            return result
        resolved = series_lin(source)
        if resolved is None or resolved[0] != "aligned" or not result.index.equals(source.index):
            return result
        lin = L.Lin(result, elem=("un", "clean", resolved[1]), filt=resolved[2],
                    index=_index_of(source))  # fmt: skip
        return L.set_lin(result, lin)

    return build


def set_column(df: pd.DataFrame, result: Any, args: Any, kwargs: Any) -> Any:
    """``df[key] = value``: the column's element is the value's (dropped when untraced)."""
    lin = trusted_frame(df)
    if lin is None or lin.cols is None or len(args) != 2:
        return result
    key, value = args
    if not pd.api.types.is_hashable(key):
        return result
    resolved = series_lin(value) if isinstance(value, pd.Series) else None
    cols = {k: v for k, v in lin.cols.items() if k != key}
    if resolved is not None and resolved[0] == "aligned" and value.index.equals(df.index):
        cols[key] = resolved[1]
    df.attrs = {**df.attrs, L.KEY: L.Lin(df, cols=cols, filt=lin.filt, index=lin.index)}
    return result
