"""Cell lineage of group-bys, ``value_counts``, ``idxmax``/``idxmin`` and merges (see
`_lineage`).

A group-by result's lineage maps each group label (and, for a DataFrame result, each
(label, column)) to the recipe of its value — the reduction over the group's rows — and
``("__key__", label)`` to the recipe of the label itself (the first cell of the key column
in the group), so ``idxmax`` over a group-by result names the key cells and the winning
group's cells. A merge of traced frames is run with each side's row ids as an extra column,
removed from the result; each result column's element is ``("map", ids, elem)``: the side's
row id of each merged row, then the side's element (key columns come from the left frame).
Runs inside the sandbox child and in host tests.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

if __package__:
    from . import _lineage as L
    from ._lineage_pandas import reduction, series_lin, trusted_frame
else:  # loaded by path inside the sandbox child
    import _lineage as L  # type: ignore[import-not-found,no-redef]
    from _lineage_pandas import (  # type: ignore[import-not-found,no-redef]
        reduction,
        series_lin,
        trusted_frame,
    )


def group_op(name: str) -> Any:
    def build(gb: Any, result: Any, args: Any, kwargs: Any) -> Any:
        frame = getattr(gb, "_tq_frame", None)
        keys = getattr(gb, "_tq_keys", None)
        if frame is None or not isinstance(result, pd.Series | pd.DataFrame):
            return result
        lin = trusted_frame(frame)
        if lin is None:
            return result
        series = isinstance(result, pd.Series)
        columns = [result.name] if series else list(result.columns)
        recipes = GroupRecipes(Group(frame, lin, keys, name, gb, result), columns, series)
        return L.set_lin(result, L.Lin(result, recipes=recipes, index=result.index.name))

    return build


@dataclass
class Group:
    """What a group-by result's recipes are built from, when one is asked for (pandas'
    ``indices`` of every group costs more than the group-by itself: one key column is
    compared with the one label instead)."""

    frame: Any
    lin: L.Lin
    keys: Any
    op: str
    gb: Any
    result: Any
    indices: Any = None

    def has(self, label: Any) -> bool:
        try:
            return bool(label in self.result.index)
        except TypeError:
            return False

    def rows(self, label: Any) -> Any:
        if isinstance(self.keys, str) and self.keys in self.frame.columns:
            column = self.frame[self.keys]
            return self.frame.index[(column == label).to_numpy(dtype=bool)].to_numpy()
        if self.indices is None:
            self.indices = self.gb.indices
        return self.frame.index[np.asarray(self.indices[label])].to_numpy()


class GroupRecipes(Mapping[Any, Any]):
    """A group-by result's recipes, built on demand (a result may have thousands of groups
    and the code reads a few): a group label (Series) or (label, column) (DataFrame) → the
    reduction over the group's rows; ``("__key__", label)`` → the group's key cells."""

    def __init__(self, group: Group, columns: list[Any], series: bool) -> None:
        self.group, self.columns, self.series = group, columns, series

    def __getitem__(self, key: Any) -> Any:
        g = self.group
        if isinstance(key, tuple) and len(key) == 2 and key[0] == "__key__":
            if not g.has(key[1]):
                raise KeyError(key)
            return _key_recipe(g.lin, g.keys, g.rows(key[1]))
        label, col = (key, self.columns[0]) if self.series else key
        if not g.has(label) or col not in self.columns:
            raise KeyError(key)
        cols = g.lin.cols or {}
        elem = cols.get(col) if col in cols else _key_elem(g.lin, g.keys)
        if elem is None:
            raise KeyError(key)
        return _group_value(g.frame, col, g.op, elem, g.rows(label), g.result, label)

    def __iter__(self) -> Iterator[Any]:
        for label in self.group.result.index:
            for col in self.columns:
                yield label if self.series else (label, col)
            yield ("__key__", label)

    def __len__(self) -> int:
        return len(self.group.result.index) * (len(self.columns) + 1)

    def column(self, name: Any) -> GroupRecipes:
        """One column's recipes, keyed by group label."""
        return GroupRecipes(self.group, [name], True)


def _group_value(frame: Any, col: Any, op: str, elem: Any, rows: Any, result: Any,
                 group: Any) -> Any:  # fmt: skip
    if op in ("min", "max") and col in frame.columns:
        try:
            value = result[group] if isinstance(result, pd.Series) else result.loc[group, col]
            values = frame.loc[rows, col]
            rows = values.index[(values == value).to_numpy()].to_numpy()
        except Exception:
            return ("opaque", (("agg", op, elem, rows),))
    return ("agg", op, elem, rows)


def _key_elem(lin: L.Lin, keys: Any) -> Any:
    if isinstance(keys, str) and lin.cols and keys in lin.cols:
        return lin.cols[keys]
    return None


def _key_recipe(lin: L.Lin, keys: Any, rows: list[Any]) -> Any:
    elem = _key_elem(lin, keys)
    return ("agg", "first", elem, rows) if elem is not None else None


def groupby(original: Any) -> Any:
    @functools.wraps(original)
    def groupby(self: Any, *args: Any, **kwargs: Any) -> Any:
        gb = original(self, *args, **kwargs)
        try:
            gb._tq_frame = self
            gb._tq_keys = kwargs.get("by", args[0] if args else None)
        except Exception:
            pass
        return gb

    return groupby


def gb_getitem(original: Any) -> Any:
    @functools.wraps(original)
    def getitem(self: Any, key: Any) -> Any:
        sub = original(self, key)
        try:
            sub._tq_frame = getattr(self, "_tq_frame", None)
            sub._tq_keys = getattr(self, "_tq_keys", None)
        except Exception:
            pass
        return sub

    return getitem


def value_counts(s: pd.Series, result: Any, args: Any, kwargs: Any) -> Any:
    resolved = series_lin(s)
    if resolved is None or resolved[0] != "aligned" or not isinstance(result, pd.Series):
        return result
    if kwargs.get("normalize") or len(result) > 10_000:
        return result
    recipes: dict[Any, Any] = {}
    for value in result.index:
        rows = s.index[(s == value).to_numpy()].to_numpy()
        recipes[value] = ("agg", "size", resolved[1], rows)
        recipes[("__key__", value)] = ("agg", "first", resolved[1], rows)
    return L.set_lin(result, L.Lin(result, recipes=recipes))


def idx_label(s: pd.Series, result: Any, args: Any, kwargs: Any) -> Any:
    """idxmax/idxmin: the winning label, its value's cells as context."""
    resolved = series_lin(s)
    if resolved is None:
        return result
    if resolved[0] == "explicit":
        key = resolved[1].get(("__key__", result))
        value = resolved[1].get(result)
        main = key if key is not None else ("const", L._plain(result))
        return L.tag(result, ("with", main, value) if value is not None else None)
    return L.tag(result, reduction(s, "idxmax", result))


_LEFT, _RIGHT = "__tq_left_row", "__tq_right_row"


def merge(original: Any) -> Any:
    """`pd.merge` / `DataFrame.merge` keeping which rows of each side a merged row came from."""

    @functools.wraps(original)
    def merged(left: Any, right: Any, *args: Any, **kwargs: Any) -> Any:
        sides = (
            trusted_frame(left),
            trusted_frame(right) if isinstance(right, pd.DataFrame) else None,
        )
        if not (L.STATE.enabled and L.from_user()) or sides == (None, None):
            return original(left, right, *args, **kwargs)
        ids = [_with_ids(f, name, lin) for f, name, lin in ((left, _LEFT, sides[0]),
                                                            (right, _RIGHT, sides[1]))]  # fmt: skip
        result = original(ids[0], ids[1], *args, **kwargs)
        maps = {n: result.pop(n) for n in (_LEFT, _RIGHT) if n in result.columns}
        try:
            cols = _merged_columns(result, left, right, sides, maps, kwargs.get("suffixes"))
        except Exception:
            return result
        return L.set_lin(result, L.Lin(result, cols=cols, index=result.index.name))

    return merged


def _with_ids(frame: Any, name: str, lin: L.Lin | None) -> Any:
    if lin is None:
        return frame
    out = frame.copy(deep=False)
    out[name] = frame.index.to_numpy()
    return out


def _merged_columns(
    result: Any, left: Any, right: Any, sides: tuple[Any, Any], maps: dict[str, Any],
    suffixes: Any,
) -> dict[Any, Any]:  # fmt: skip
    lsuf, rsuf = suffixes if suffixes is not None else ("_x", "_y")
    cols: dict[Any, Any] = {}
    for col in result.columns:
        side, name = _origin(col, left.columns, right.columns, lsuf, rsuf)
        if side < 0:
            continue
        lin, key = (sides[0], _LEFT) if side == 0 else (sides[1], _RIGHT)
        elem = (lin.cols or {}).get(name) if lin is not None else None
        if elem is not None and key in maps:
            cols[col] = ("map", maps[key], elem)
    return cols


def _origin(col: Any, left: Any, right: Any, lsuf: Any, rsuf: Any) -> tuple[int, Any]:
    """Which side a merged column came from, and its name there (keys: the left's)."""
    if col in left:
        return 0, col
    if col in right:
        return 1, col
    text = str(col)
    if lsuf and text.endswith(str(lsuf)) and text[: -len(str(lsuf))] in left:
        return 0, text[: -len(str(lsuf))]
    if rsuf and text.endswith(str(rsuf)) and text[: -len(str(rsuf))] in right:
        return 1, text[: -len(str(rsuf))]
    return -1, col


def set_index(df: Any, result: Any, args: Any, kwargs: Any) -> Any:
    """``df.set_index(key)``: rows keep their cells, now found by the key's label (a map from
    each new label to the row id; only for a unique new index, where the map is one to one)."""
    lin = trusted_frame(df)
    if lin is None or lin.cols is None or not isinstance(result, pd.DataFrame):
        return result
    if len(result) != len(df) or not result.index.is_unique:
        return result
    mapping = pd.Series(df.index.to_numpy(), index=result.index)
    cols = {c: ("map", mapping, lin.cols[c]) for c in result.columns if c in lin.cols}
    return L.set_lin(result, L.Lin(result, cols=cols, index=result.index.name))
