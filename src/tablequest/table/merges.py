"""Merged ranges: the `Merge` record, their normalisation, and the spans that render them.

Every `Table` passes its merges through `normalize_merges` when it is built, so readers,
stores loaded from disk and tables built in code all hold the same kind of merge list. The
rule (ours; no paper fixes one), applied in this order:

1. A merge with top > bottom or left > right, or lying wholly outside the grid, is dropped
   (``invalid``). One partly outside is clipped to the grid (``clipped``, kept).
2. A merge of one cell (after clipping) is dropped (``single_cell``): it merges nothing.
3. Exact duplicates (after clipping) are dropped, the first copy kept (``duplicate``).
4. Overlaps: merges are taken in the given order; one that shares a cell with a merge kept
   before it is dropped (``overlapping``). The kept merges are disjoint, so, each covering at
   least two cells, there are at most ``height * width // 2`` of them: the count is capped by
   the grid without a separate limit (`tests/table/test_merges.py` checks the bound).

Cost: linear in the number of merges plus the cells of the box that holds them, in numpy.
A difference array counts how many merges cover each cell; when no cell is covered twice
(every table a well-behaved reader makes) all merges are kept at once. Otherwise only merges
touching a doubly covered cell go through the ordered check, an occupancy map over the box
whose probes are bounded by ``OVERLAP_WORK`` cells per grid cell plus ``OVERLAP_FLOOR``;
merges still unchecked when that work is spent are dropped (``over_limit``), so hostile
input costs O(merges + cells) whatever its shape. Order is kept, so a table whose merges
were already clean keeps its merge tuple (and its `content_hash`).

`span_map` turns clean merges into HTML spans (top-left cell → (rowspan, colspan), and the
cells they cover), cutting a merge that crosses the header/body boundary at it; its cost is
the cells the merges cover, so callers pass the merges of the window they show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "OVERLAP_FLOOR",
    "OVERLAP_WORK",
    "Merge",
    "MergeRepair",
    "normalize_merge_array",
    "normalize_merges",
    "span_map",
]

SMALL = 32
"""Merge lists up to this long are checked in plain Python first (the numpy path costs
~90 µs per table; a clean short list needs at most 496 pair checks)."""
OVERLAP_WORK = 16
"""Cells the overlap check may probe per grid cell, on top of `OVERLAP_FLOOR` (module
docstring). Probes run in numpy at about a nanosecond a cell."""
OVERLAP_FLOOR = 50_000_000
"""Cells any table's overlap check may probe, whatever its size."""


@dataclass(frozen=True, slots=True)
class Merge:
    """A merged range in grid coordinates, inclusive on both ends."""

    top: int
    left: int
    bottom: int
    right: int

    def contains(self, row: int, col: int) -> bool:
        return self.top <= row <= self.bottom and self.left <= col <= self.right


@dataclass(frozen=True, slots=True)
class MergeRepair:
    """What `normalize_merges` changed, counted per reason (module docstring)."""

    invalid: int = 0
    clipped: int = 0
    single_cell: int = 0
    duplicate: int = 0
    overlapping: int = 0
    over_limit: int = 0

    @property
    def dropped(self) -> int:
        return self.invalid + self.single_cell + self.duplicate + self.overlapping + self.over_limit

    def __bool__(self) -> bool:
        return self.dropped + self.clipped > 0

    def __add__(self, other: MergeRepair) -> MergeRepair:
        return MergeRepair(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def describe(self) -> str:
        """One sentence for the user: "merged ranges repaired: 19999 duplicates dropped"."""
        words = {
            "duplicate": "duplicates dropped",
            "overlapping": "overlapping another dropped",
            "invalid": "outside the grid or inverted dropped",
            "single_cell": "single-cell dropped",
            "clipped": "clipped to the grid",
            "over_limit": "dropped past the overlap-check limit",
        }
        parts = [f"{getattr(self, k)} {w}" for k, w in words.items() if getattr(self, k)]
        return "merged ranges repaired: " + ", ".join(parts)


def normalize_merges(
    merges: Sequence[Merge], height: int, width: int
) -> tuple[tuple[Merge, ...], MergeRepair]:
    """Clean `merges` for a `height` x `width` grid (the rule is in the module docstring)."""
    clean, repair, _ = normalize_merge_array(merges, height, width)
    return clean, repair


def normalize_merge_array(
    merges: Sequence[Merge], height: int, width: int
) -> tuple[tuple[Merge, ...], MergeRepair, npt.NDArray[np.int64] | None]:
    """`normalize_merges`, with the clean merges also as an (n, 4) array (None when none)."""
    if not merges:
        return (), MergeRepair(), None
    if len(merges) <= SMALL and _already_clean(merges, height, width):
        return tuple(merges), MergeRepair(), None  # most tables: no numpy round trip
    import numpy as np

    given = np.array([(m.top, m.left, m.bottom, m.right) for m in merges], dtype=np.int64)
    top, left, bottom, right = given.T
    invalid = (top > bottom) | (left > right) | (bottom < 0) | (right < 0)
    invalid |= (top >= height) | (left >= width)
    box = np.stack(
        [
            np.maximum(top, 0),
            np.maximum(left, 0),
            np.minimum(bottom, height - 1),
            np.minimum(right, width - 1),
        ],
        axis=1,
    )
    single = ~invalid & (box[:, 0] == box[:, 2]) & (box[:, 1] == box[:, 3])
    clipped = ~invalid & ~single & np.any(box != given, axis=1)
    candidates = np.flatnonzero(~invalid & ~single)
    firsts = _first_copies(box, candidates)
    kept, overlapping, over_limit = _resolve_overlaps(box[firsts], height * width)
    repair = MergeRepair(
        invalid=int(invalid.sum()),
        clipped=int(clipped.sum()),
        single_cell=int(single.sum()),
        duplicate=len(candidates) - len(firsts),
        overlapping=overlapping,
        over_limit=over_limit,
    )
    if not repair:
        return tuple(merges), repair, given
    chosen = box[firsts][kept]
    return tuple(Merge(*row) for row in chosen.tolist()), repair, chosen


def _already_clean(merges: Sequence[Merge], height: int, width: int) -> bool:
    """True when a short list breaks no rule: inside the grid, over two or more cells, and
    pairwise disjoint (which also rules out duplicates)."""
    for i, m in enumerate(merges):
        if not (0 <= m.top <= m.bottom < height and 0 <= m.left <= m.right < width):
            return False
        if m.top == m.bottom and m.left == m.right:
            return False
        for o in merges[:i]:
            if m.top <= o.bottom and o.top <= m.bottom and m.left <= o.right and o.left <= m.right:
                return False
    return True


def _first_copies(box: npt.NDArray[np.int64], rows: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The positions in `rows` of each distinct rectangle's first copy, in the given order."""
    import numpy as np

    if len(rows) < 2:
        return rows
    part = box[rows]
    order = np.lexsort(part.T[::-1])  # stable: equal rectangles stay in their given order
    ranked = part[order]
    new = np.ones(len(rows), dtype=bool)
    new[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    return rows[np.sort(order[new])]


def _resolve_overlaps(rects: npt.NDArray[np.int64], grid_cells: int) -> tuple[list[int], int, int]:
    """Indices of the rectangles kept (the first of overlapping ones wins), and the counts
    dropped as overlapping and as past the work limit."""
    import numpy as np

    n = len(rects)
    if n < 2:
        return list(range(n)), 0, 0
    r0, c0 = int(rects[:, 0].min()), int(rects[:, 1].min())
    top, left = rects[:, 0] - r0, rects[:, 1] - c0
    bottom, right = rects[:, 2] - r0 + 1, rects[:, 3] - c0 + 1
    cover = np.zeros((int(bottom.max()) + 1, int(right.max()) + 1), dtype=np.int32)
    for rows, cols, sign in (
        (top, left, 1),
        (top, right, -1),
        (bottom, left, -1),
        (bottom, right, 1),
    ):
        np.add.at(cover, (rows, cols), sign)
    np.cumsum(cover, axis=0, out=cover)
    np.cumsum(cover, axis=1, out=cover)
    if int(cover.max()) <= 1:
        return list(range(n)), 0, 0
    # Rectangles touching a doubly covered cell: from a 2-D prefix sum of those cells.
    counts = np.int32 if cover.size < 2**31 else np.int64
    hot = np.zeros((cover.shape[0] + 1, cover.shape[1] + 1), dtype=counts)
    hot[1:, 1:] = (cover > 1).cumsum(axis=0, dtype=counts).cumsum(axis=1, dtype=counts)
    clash = hot[bottom, right] - hot[top, right] - hot[bottom, left] + hot[top, left] > 0
    del cover, hot
    taken = np.zeros((int(bottom.max()), int(right.max())), dtype=bool)
    budget = OVERLAP_WORK * grid_cells + OVERLAP_FLOOR
    kept: list[int] = []
    overlapping = over_limit = 0
    for i in range(n):
        if not clash[i]:
            kept.append(i)
            continue
        area = int((bottom[i] - top[i]) * (right[i] - left[i]))
        if area > budget:
            over_limit += 1
            continue
        budget -= area
        window = taken[top[i] : bottom[i], left[i] : right[i]]
        if window.any():
            overlapping += 1
        else:
            window[...] = True
            kept.append(i)
    return kept, overlapping, over_limit


def span_map(
    merges: Sequence[Merge], n_header_rows: int
) -> tuple[dict[tuple[int, int], tuple[int, int]], set[tuple[int, int]]]:
    """Top-left cell → (rowspan, colspan), and the cells merges cover, per section.

    `merges` must be clean (disjoint, as `Table.merges` are); a merge crossing the header/body
    boundary is cut into its header part and its body part.
    """
    starts: dict[tuple[int, int], tuple[int, int]] = {}
    covered: set[tuple[int, int]] = set()
    h = n_header_rows
    for m in merges:
        pieces = [(m.top, h - 1), (h, m.bottom)] if m.top < h <= m.bottom else [(m.top, m.bottom)]
        for top, bottom in pieces:
            if top == bottom and m.left == m.right:
                continue
            starts[(top, m.left)] = (bottom - top + 1, m.right - m.left + 1)
            covered.update(
                (r, c) for r in range(top, bottom + 1) for c in range(m.left, m.right + 1)
            )
            covered.discard((top, m.left))
    return starts, covered
