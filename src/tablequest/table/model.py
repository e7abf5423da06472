"""The table model: a cell grid that keeps its structure.

A `Table` is a rectangular grid of strings. The first `n_header_rows` grid rows are column
headers (several levels when > 1) and the first `n_header_cols` grid columns are row headers
(the left header tree of hierarchical tables). Merged ranges are kept as `Merge` records;
readers fill every cell of a merged range with the range's value so that header paths and
`to_dataframe()` work without looking at merges (choice: ours, the papers are silent). Every
table cleans its merges when built (`table/merges.py`: invalid, single-cell, duplicate and
overlapping ones dropped, ones partly outside clipped, so they are disjoint and at most
cells / 2); `merge_repair` counts what changed, for readers and pages to report.

Notes: `notes` holds text that belongs to the table but is neither header nor data: the
footer lines of a CSV ("Quelle: …", "Stand: 31.03.2024", "* provisional") and extra title
lines before its header. They are part of the content: `content_hash` covers them when there
are any (a table without notes hashes exactly as before notes existed, so stores and embedding
caches built earlier stay valid), and `to_dict`/`from_dict` keep them (a stored table without
the key reads back with no notes).

Coordinates: `row_ids` are the original body-row numbers (0 = first row under the headers)
and `col_ids` the original grid-column numbers. `sub_table` keeps both, so evidence cited on
a sub-table can always be traced back to the source table.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from tablequest.table.merges import Merge, MergeRepair, normalize_merge_array

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

__all__ = [
    "FORMATS",
    "HEADER_SEP",
    "CellRef",
    "Format",
    "Merge",
    "MergeRepair",
    "Source",
    "Table",
    "cell_text",
    "unique_names",
]

Format = str
"""A format name (``Source.format``). Formats are open: any name a reader registered
(`tablequest.table.readers.register_reader`, `registered_formats`); `FORMATS` are the
built-in ones."""
FORMATS: tuple[Format, ...] = (
    "csv",
    "tsv",
    "markdown",
    "html",
    "json",
    "xlsx",
    "parquet",
    "sqlite",
)

HEADER_SEP = " / "

EvidenceHow = Literal["computed", "cited", "matched", "ambiguous", "untracked"]
"""How an evidence cell was found (`CellRef.how`; docs/methods.md "Evidence")."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a table came from. Shown to the user, never to an agent."""

    path: str | None = None
    format: Format | None = None
    sheet: str | None = None  # xlsx sheet, sqlite table, or "table N" for HTML/JSON with many


@dataclass(frozen=True, slots=True)
class CellRef:
    """One cell of a table in original coordinates (body row id, grid column id), and how the
    method found it (`EvidenceHow`): ``computed`` (the lineage of code run in the sandbox),
    ``cited`` (the model named it and it holds that value), ``matched`` (its value equals the
    answer, looked up only among the cells the method read), ``ambiguous`` (one of several
    such cells) or ``untracked`` (read by code whose final value could not be traced)."""

    table_id: str
    row: int
    col: int
    value: str
    how: EvidenceHow = "matched"


@dataclass(frozen=True)
class Table:
    """A structure-preserving table. Cells are strings; "" is an empty cell."""

    cells: tuple[tuple[str, ...], ...]
    n_header_rows: int = 1
    n_header_cols: int = 0
    merges: tuple[Merge, ...] = ()
    title: str | None = None
    source: Source = field(default_factory=Source)
    row_ids: tuple[int, ...] = ()
    col_ids: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    merge_repair: MergeRepair = field(default=MergeRepair(), compare=False, repr=False)
    """What normalising the merges changed (dropped, clipped), carried through `replace`
    so a reader can report it; not content (not stored, not hashed)."""

    def __post_init__(self) -> None:
        width = len(self.cells[0]) if self.cells else 0
        if any(len(row) != width for row in self.cells):
            raise ValueError("Table cells must be rectangular; use Table.from_rows to pad")
        if not 0 <= self.n_header_rows <= len(self.cells):
            raise ValueError(f"n_header_rows={self.n_header_rows} exceeds {len(self.cells)} rows")
        if not 0 <= self.n_header_cols <= width:
            raise ValueError(f"n_header_cols={self.n_header_cols} exceeds {width} columns")
        if not self.row_ids:
            object.__setattr__(self, "row_ids", tuple(range(len(self.cells) - self.n_header_rows)))
        if not self.col_ids:
            object.__setattr__(self, "col_ids", tuple(range(width)))
        if len(self.row_ids) != len(self.cells) - self.n_header_rows:
            raise ValueError("row_ids must name every body row")
        if len(self.col_ids) != width:
            raise ValueError("col_ids must name every column")
        merges, repair, coords = normalize_merge_array(self.merges, len(self.cells), width)
        object.__setattr__(self, "merges", merges)
        object.__setattr__(self, "_merge_array", None if coords is None else coords.T.copy())
        if repair:
            object.__setattr__(self, "merge_repair", self.merge_repair + repair)

    def __repr__(self) -> str:
        """Shape, title, source and the first rows, cut to at most 10 KB (`brief`)."""
        from tablequest.table.brief import table_repr

        return table_repr(
            self.cells,
            self.n_header_rows,
            self.n_cols,
            title=self.title,
            source=(self.source.format, self.source.path),
        )

    def _repr_html_(self) -> str:
        from tablequest.table.display import table_html  # notebooks: loaded on first display

        return table_html(self)

    def _repr_markdown_(self) -> str:
        from tablequest.table.display import table_markdown

        return table_markdown(self)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Sequence[object]],
        *,
        n_header_rows: int = 1,
        n_header_cols: int = 0,
        merges: Iterable[Merge] = (),
        title: str | None = None,
        source: Source | None = None,
        notes: Iterable[str] = (),
    ) -> Table:
        """Build a table from ragged rows: pads short rows with "", turns values into text."""
        grid = [[cell_text(v) for v in row] for row in rows]
        width = max((len(r) for r in grid), default=0)
        padded = tuple(tuple(r + [""] * (width - len(r))) for r in grid)
        return cls(
            cells=padded,
            n_header_rows=min(n_header_rows, len(padded)),
            n_header_cols=min(n_header_cols, width),
            merges=tuple(merges),
            title=title,
            source=source or Source(),
            notes=tuple(notes),
        )

    # -- shape and parts ----------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """Number of body rows (grid rows under the header rows)."""
        return len(self.cells) - self.n_header_rows

    @property
    def n_cols(self) -> int:
        return len(self.cells[0]) if self.cells else 0

    @property
    def header_rows(self) -> tuple[tuple[str, ...], ...]:
        return self.cells[: self.n_header_rows]

    @property
    def body(self) -> tuple[tuple[str, ...], ...]:
        return self.cells[self.n_header_rows :]

    def header_path(self, col: int) -> tuple[str, ...]:
        """The column-header path of grid column `col` (position, not id), top level first.

        Repeated values from a vertical merge ("Year" spanning two header rows) and empty
        levels are dropped.
        """
        return _dedupe_path(row[col] for row in self.header_rows)

    def row_header_path(self, row: int) -> tuple[str, ...]:
        """The row-header path of body row `row` (position), outermost level first."""
        return _dedupe_path(self.body[row][: self.n_header_cols])

    @property
    def columns(self) -> tuple[str, ...]:
        """Flat, unique column names: "Parent / Child", empty → "column_N" (1-based)."""
        names = [HEADER_SEP.join(self.header_path(j)) for j in range(self.n_cols)]
        return unique_names(names)

    @property
    def content_hash(self) -> str:
        """sha256 of the content and structure (not the source): equal tables, equal hash.

        Notes count as content, but only when there are some: a table without notes hashes
        as it did before tables had notes.
        """
        parts: list[object] = [
            self.cells,
            self.n_header_rows,
            self.n_header_cols,
            [(m.top, m.left, m.bottom, m.right) for m in self.merges],
            self.title,
        ]
        if self.notes:
            parts.append(list(self.notes))
        payload = json.dumps(
            parts,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    # -- exact storage form -------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict that `from_dict` turns back into an equal table (ids included)."""
        return {
            "cells": [list(r) for r in self.cells],
            "n_header_rows": self.n_header_rows,
            "n_header_cols": self.n_header_cols,
            "merges": [[m.top, m.left, m.bottom, m.right] for m in self.merges],
            "title": self.title,
            "source": [self.source.path, self.source.format, self.source.sheet],
            "row_ids": list(self.row_ids),
            "col_ids": list(self.col_ids),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Table:
        path, fmt, sheet = data.get("source") or (None, None, None)
        return cls(
            cells=tuple(tuple(str(c) for c in r) for r in data["cells"]),
            n_header_rows=int(data["n_header_rows"]),
            n_header_cols=int(data["n_header_cols"]),
            merges=tuple(Merge(*(int(x) for x in m)) for m in data["merges"]),
            title=data.get("title"),
            source=Source(path, fmt, sheet),
            row_ids=tuple(int(x) for x in data["row_ids"]),
            col_ids=tuple(int(x) for x in data["col_ids"]),
            notes=tuple(str(n) for n in data.get("notes") or ()),
        )

    # -- views --------------------------------------------------------------------------
    def to_dataframe(self, *, typed: bool = True) -> pd.DataFrame:
        """The body as a DataFrame: flattened unique headers, index = row ids (`row_id`).

        `typed` (default): a column whose every filled cell parses as a number becomes int64
        or float64 (decimal commas recognised), one whose every filled cell is `true` or
        `false` (any case) bool (pandas' nullable `boolean` with an empty cell), one whose
        every filled cell is a date in one format datetime64; empty cells of such columns
        are NaN / NA / NaT. Every other column keeps its strings (object dtype). The exact
        rule is in `table/dtypes.py`.
        `typed=False`: every column is the cells' strings, as stored.
        """
        import pandas as pd

        frame = pd.DataFrame([list(r) for r in self.body], columns=list(self.columns), dtype=object)
        if self.n_rows == 0:
            frame = pd.DataFrame({c: pd.Series([], dtype=object) for c in self.columns})
        elif typed:
            from tablequest.table.dtypes import type_columns

            frame = type_columns(frame)
        frame.index = pd.Index(list(self.row_ids), name="row_id")
        return frame

    def sub_table(
        self, rows: Sequence[int] | None = None, cols: Sequence[int] | None = None
    ) -> Table:
        """Keep body rows with ids in `rows` and columns with ids in `cols` (None = all).

        Header rows are always kept, so header paths survive. Unknown ids raise KeyError with
        the offending ids named. Order follows the table, not the argument.
        """
        row_pos = self._positions(self.row_ids, rows, "row")
        col_pos = self._positions(self.col_ids, cols, "column")
        keep_rows = list(range(self.n_header_rows)) + [self.n_header_rows + p for p in row_pos]
        grid = tuple(tuple(self.cells[r][c] for c in col_pos) for r in keep_rows)
        return replace(
            self,
            cells=grid,
            n_header_cols=sum(1 for p in col_pos if p < self.n_header_cols),
            merges=self._kept_merges(keep_rows, col_pos),
            row_ids=tuple(self.row_ids[p] for p in row_pos),
            col_ids=tuple(self.col_ids[p] for p in col_pos),
        )

    def take_rows(self, row_ids: Sequence[int]) -> Table:
        """The table with the body rows `row_ids` in that order (a page of a sorted view).

        Header, title and notes are kept. Rows in the table's own order keep the merges
        among them (as `sub_table`); in another order only the header's merges are kept.
        Unknown ids raise KeyError naming them.
        """
        ids = list(row_ids)
        positions = {rid: i for i, rid in enumerate(self.row_ids)}
        unknown = [i for i in ids if i not in positions]
        if unknown:
            raise KeyError(f"unknown row ids: {unknown[:10]}")
        if all(positions[a] < positions[b] for a, b in itertools.pairwise(ids)):
            return self.sub_table(ids)
        head = self.n_header_rows
        return replace(
            self,
            cells=(*self.cells[:head], *(self.cells[head + positions[rid]] for rid in ids)),
            merges=tuple(m for m in self.merges if m.bottom < head),
            row_ids=tuple(ids),
        )

    def _kept_merges(self, rows: list[int], cols: list[int]) -> tuple[Merge, ...]:
        """The merges cut to the kept grid rows and columns (sorted positions), renumbered.

        Vectorised over the merges, so a window of a table with millions of merges costs
        milliseconds; cutting disjoint merges keeps them disjoint.
        """
        if not self.merges or not rows or not cols:
            return ()
        import numpy as np

        top, left, bottom, right = self._merge_coords()
        near = (bottom >= rows[0]) & (top <= rows[-1]) & (right >= cols[0]) & (left <= cols[-1])
        kept_rows, kept_cols = np.asarray(rows), np.asarray(cols)
        new_top = np.searchsorted(kept_rows, top[near], "left")
        new_bottom = np.searchsorted(kept_rows, bottom[near], "right") - 1
        new_left = np.searchsorted(kept_cols, left[near], "left")
        new_right = np.searchsorted(kept_cols, right[near], "right") - 1
        ok = (new_top <= new_bottom) & (new_left <= new_right)
        ok &= (new_top < new_bottom) | (new_left < new_right)
        picked = np.stack([new_top, new_left, new_bottom, new_right], axis=1)[ok]
        return tuple(Merge(*row) for row in picked.tolist())

    def merges_meeting(self, spans: Sequence[tuple[int, int]]) -> tuple[Merge, ...]:
        """The merges (as stored, in order) sharing a grid row with one of the inclusive
        grid-row `spans` [(first, last), ...]: what a window of rows shows, found in
        vectorised time however many merges the table has."""
        if not self.merges or not spans:
            return ()
        import numpy as np

        top, _, bottom, _ = self._merge_coords()
        meets = np.zeros(len(top), dtype=bool)
        for first, last in spans:
            meets |= (bottom >= first) & (top <= last)
        return tuple(self.merges[i] for i in np.flatnonzero(meets))

    def _merge_coords(self) -> npt.NDArray[np.int64]:
        """The merges as a (4, n) array (tops, lefts, bottoms, rights), one per table object:
        normalisation leaves it, so a window of a stored table needs no pass in Python."""
        cached: npt.NDArray[np.int64] | None = self.__dict__.get("_merge_array")
        if cached is None:
            import numpy as np

            flat = [v for m in self.merges for v in (m.top, m.left, m.bottom, m.right)]
            cached = np.array(flat, dtype=np.int64).reshape(-1, 4).T.copy()
            object.__setattr__(self, "_merge_array", cached)
        return cached

    def transpose(self) -> Table:
        """Swap axes: header rows become header columns and vice versa.

        The result is a new table with fresh coordinates (ids are positions again).
        """
        grid = tuple(zip(*self.cells, strict=True)) if self.cells else ()
        return Table(
            cells=grid,
            n_header_rows=self.n_header_cols,
            n_header_cols=self.n_header_rows,
            merges=tuple(Merge(m.left, m.top, m.right, m.bottom) for m in self.merges),
            title=self.title,
            source=self.source,
            notes=self.notes,
        )

    def cell(self, row_id: int, col_id: int) -> str:
        """The body cell at original coordinates."""
        r = self._positions(self.row_ids, [row_id], "row")[0]
        c = self._positions(self.col_ids, [col_id], "column")[0]
        return self.body[r][c]

    @staticmethod
    def _positions(ids: Sequence[int], wanted: Sequence[int] | None, what: str) -> list[int]:
        if wanted is None:
            return list(range(len(ids)))
        index = {v: i for i, v in enumerate(ids)}
        missing = [w for w in wanted if w not in index]
        if missing:
            raise KeyError(f"unknown {what} ids {missing[:10]} (table has {len(ids)} {what}s)")
        return sorted({index[w] for w in wanted})


def cell_text(value: object) -> str:
    """Render a cell value as text: None/NaN → "", 3.0 → "3", other values via str."""
    if value is None:
        return ""
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def unique_names(names: Iterable[str]) -> tuple[str, ...]:
    """Make header names unique and non-empty: `a`, `a_2`, and `column_3` for a blank 3rd."""
    out: list[str] = []
    seen: set[str] = set()
    next_suffix: dict[str, int] = {}  # suffixes below it are taken for good: linear, not n²
    for i, raw in enumerate(names, start=1):
        name = " ".join(raw.split()) or f"column_{i}"
        candidate, k = name, next_suffix.get(name, 2)
        while candidate in seen:
            candidate, k = f"{name}_{k}", k + 1
        next_suffix[name] = k
        seen.add(candidate)
        out.append(candidate)
    return tuple(out)


def _dedupe_path(values: Iterable[str]) -> tuple[str, ...]:
    path: list[str] = []
    for v in values:
        v = " ".join(v.split())
        if v and (not path or path[-1] != v):
            path.append(v)
    return tuple(path)
