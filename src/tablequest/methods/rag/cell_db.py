"""TableRAG cell database (arXiv:2410.04739 §3.3 "Cell Retrieval with Encoding Budget").

V = ∪ (C_j, v_ij): the distinct (column, value) pairs of the table, sorted by frequency and
cut to the B most frequent (the cell encoding budget, default B = 10,000; Alg. 1
``getDistinctColumnCellPairbyFreq(T)[:B]``). Building it is O(NM) CPU, encoding O(min(D, B)).

Vectorised: one Arrow ``dictionary_encode`` per column gives the distinct values in order of
first appearance, ``np.bincount`` their counts, and one ``np.lexsort`` orders all pairs; no
Python loop over cells. 10^6 cells take under 100 ms (benchmarks/rag_scale.py; hashing the
columns on parallel threads was slower on 2 shared cores, so columns are hashed in turn). For a
stored table the distinct values of its text columns come from SQL over its relation instead
(`relation_db`); `cell_db_from_distinct` orders and cuts either the same way.

Choices:
- Columns: the categorical columns of the schema DB (the official code's choice; the paper
  counts "distinct text cell values" D, §3.4). Numeric and datetime columns are described by
  their schema entries (min / max). ``columns=None`` takes every column.
- Empty (whitespace-only) cells are not pairs. Values are kept verbatim (not trimmed), so a
  retrieved value can be compared to ``df`` as is.
- Tie order (equal counts): the pair whose first occurrence comes first in row-major order
  (top to bottom, then left to right over the scanned columns) — exactly the order of the
  official code's ``Counter(...).most_common`` over the flattened frame.
- The encoded text and the text shown to the solver is the official JSON line
  ``{"column_name": "...", "cell_value": "..."}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_BUDGET = 10_000


@dataclass(frozen=True, slots=True)
class CellEntry:
    """One distinct (column, value) pair and how many cells hold it."""

    column: str
    value: str
    count: int

    @property
    def doc(self) -> str:
        return json.dumps(
            {"column_name": self.column, "cell_value": self.value}, ensure_ascii=False
        )


@dataclass(frozen=True)
class CellDB:
    """The B most frequent distinct pairs, stored column-wise (entries are built on demand).

    Attributes:
        column_names: The scanned columns.
        column_index: Per kept pair, the index of its column in `column_names`.
        values: Per kept pair, its value (Arrow strings), most frequent pair first.
        counts: Per kept pair, the number of cells holding it.
        n_distinct: D, the number of distinct pairs before the budget cut.
        budget: B.
        n_cells: Non-empty cells scanned.
    """

    column_names: tuple[str, ...]
    column_index: npt.NDArray[np.int64]
    values: pa.Array
    counts: npt.NDArray[np.int64]
    n_distinct: int
    budget: int
    n_cells: int

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def truncated(self) -> bool:
        return self.n_distinct > len(self)

    @cached_property
    def entries(self) -> tuple[CellEntry, ...]:
        names = self.column_names
        return tuple(
            CellEntry(names[j], str(v), int(n))
            for j, v, n in zip(
                self.column_index.tolist(),
                self.values.to_pylist(),
                self.counts.tolist(),
                strict=True,
            )
        )

    @cached_property
    def docs(self) -> list[str]:
        return [e.doc for e in self.entries]


@dataclass(frozen=True)
class Distinct:
    """One column's distinct values in order of first appearance, blanks included.

    Attributes:
        values: The distinct values (Arrow strings, verbatim).
        counts: Per value, the number of cells holding it.
        first: Per value, the body position (0-based) of its first occurrence.
    """

    values: pa.Array
    counts: npt.NDArray[np.int64]
    first: npt.NDArray[np.int64]


def distinct_of(column: pa.ChunkedArray | pa.Array) -> Distinct:
    """The distinct values of a string column, with counts and first occurrences (Arrow)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = pc.dictionary_encode(array)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary
    counts = np.bincount(codes, minlength=len(dictionary)).astype(np.int64)
    # codes are numbered in order of first appearance: code k first occurs where the running
    # maximum of the codes seen so far steps up to k
    previous = np.maximum.accumulate(np.concatenate(([-1], codes[:-1])))
    first = np.flatnonzero(codes > previous).astype(np.int64)
    return Distinct(dictionary, counts, first)


def _non_blank(distinct: Distinct) -> Distinct:
    """`distinct` without its empty (whitespace-only) values: they are not pairs."""
    blank = pc.equal(pc.utf8_trim_whitespace(distinct.values), "").to_numpy(zero_copy_only=False)
    if not blank.any():
        return distinct
    keep = np.flatnonzero(~blank)
    return Distinct(distinct.values.take(pa.array(keep)), distinct.counts[keep],
                    distinct.first[keep])  # fmt: skip


def build_cell_db(
    raw: pa.Table, *, columns: Sequence[str] | None = None, budget: int = DEFAULT_BUDGET
) -> CellDB:
    """Distinct (column, value) pairs of `columns` of `raw`, most frequent first, cut to B.

    Args:
        raw: The table as strings (`schema_db.raw_frame`).
        columns: Columns to scan (None: all), e.g. `SchemaDB.categorical`.
        budget: B, the number of pairs kept.

    Raises:
        ValueError: budget < 1 or an unknown column.
    """
    if budget < 1:
        raise ValueError(f"the cell encoding budget B must be >= 1, got {budget}")
    names = list(raw.column_names if columns is None else columns)
    unknown = [n for n in names if n not in raw.column_names]
    if unknown:
        raise ValueError(f"unknown columns {unknown} (table has {raw.column_names[:20]})")
    if not names or raw.num_rows == 0:
        return cell_db_from_distinct(names, [], budget)
    return cell_db_from_distinct(names, [distinct_of(raw.column(n)) for n in names], budget)


def cell_db_from_distinct(
    names: Sequence[str], distinct: Sequence[Distinct], budget: int = DEFAULT_BUDGET
) -> CellDB:
    """The cell DB of columns `names` from each one's `Distinct` values (Arrow's or SQL's):
    blanks dropped, most frequent pair first, ties by row-major first occurrence, cut to B.

    Raises:
        ValueError: budget < 1.
    """
    if budget < 1:
        raise ValueError(f"the cell encoding budget B must be >= 1, got {budget}")
    if not names or not distinct:
        empty = np.zeros(0, dtype=np.int64)
        return CellDB(tuple(names), empty, pa.array([], pa.string()), empty, 0, budget, 0)
    values: list[pa.Array] = []
    counts: list[npt.NDArray[np.int64]] = []
    ties: list[npt.NDArray[np.int64]] = []
    width = len(names)
    for j, column in enumerate(distinct):
        pairs = _non_blank(column)
        values.append(pairs.values)
        counts.append(pairs.counts)
        ties.append(pairs.first * width + j)  # row-major position of the first occurrence
    all_counts = np.concatenate(counts)
    order = np.lexsort((np.concatenate(ties), -all_counts))[:budget]
    sizes = np.array([len(c) for c in counts], dtype=np.int64)
    column_of = np.repeat(np.arange(width, dtype=np.int64), sizes)[order]
    kept = pa.concat_arrays([v.cast(pa.string()) for v in values]).take(pa.array(order))
    return CellDB(
        tuple(names),
        column_of,
        kept,
        all_counts[order],
        int(all_counts.size),
        budget,
        int(all_counts.sum()),
    )
