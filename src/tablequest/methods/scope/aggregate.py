"""Evidence aggregation over K retrieval samples (TabScope §3.4, Eqs 2–5).

    s(c)      = mean token log-probability of candidate c (0 when the server gives none)
    w(g)      = Σ_{c∈g} exp(s(c))                                          (Eq. 2)
    RowScore  = Σ_{g∈G_r, g⊆R′} w(g) / Σ_{g∈G_r} w(g); ColScore likewise    (Eq. 3)
    Support   = sqrt(RowScore · ColScore)                                   (Eq. 4)
    S(R′, C′) = Support / ρ^α,  ρ = |R′||C′| / (|R||H|)                     (Eq. 5)

Candidates R′ (C′) are the progressive unions of the ranked groups: g1, g1∪g2, …, duplicates
removed; every (R′, C′) pair is scored and the best is kept.

Choices (ours, the paper is silent):
- Groups are ranked by weight, ties broken by smaller set, then by first appearance.
- If any sample of a dimension lacks log-probabilities, s(c) = 0 for all of that dimension's
  samples (mixing real and default scores would bias the vote): pure frequency voting.
- An empty candidate set (``f_row([])``) is a group like any other, but an empty R′ or C′ is
  never picked (ρ = 0 would divide by zero and an empty sub-table answers nothing); if every
  union is empty, the dimension keeps all its ids.
- Ties of S are broken by smaller ρ, then by fewer unions (earlier candidates).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Aggregation", "Candidate", "Group", "aggregate", "candidate_score", "rank_groups"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One parsed retrieval sample: its id set and its mean token log-probability (or None)."""

    ids: frozenset[int]
    score: float | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """Identical sets (Eq. 2): the set, its weight and how many samples returned it."""

    ids: frozenset[int]
    weight: float
    count: int
    first: int


@dataclass(frozen=True, slots=True)
class Aggregation:
    """The chosen sub-table and how it was chosen."""

    rows: frozenset[int]
    cols: frozenset[int]
    score: float
    support: float
    row_score: float
    col_score: float
    rho: float
    row_groups: tuple[Group, ...]
    col_groups: tuple[Group, ...]
    frequency_voting: tuple[bool, bool]

    def to_json(self) -> dict[str, Any]:
        def groups(gs: tuple[Group, ...]) -> list[dict[str, Any]]:
            return [
                {"ids": sorted(g.ids), "weight": round(g.weight, 6), "count": g.count} for g in gs
            ]

        return {
            "rows": sorted(self.rows),
            "cols": sorted(self.cols),
            "score": round(self.score, 6),
            "support": round(self.support, 6),
            "row_score": round(self.row_score, 6),
            "col_score": round(self.col_score, 6),
            "rho": round(self.rho, 6),
            "row_groups": groups(self.row_groups),
            "col_groups": groups(self.col_groups),
            "frequency_voting": {
                "rows": self.frequency_voting[0],
                "cols": self.frequency_voting[1],
            },
        }


def candidate_score(token_logprobs: Sequence[float] | None) -> float | None:
    """s(c): the mean token log-probability, None when unavailable or empty."""
    if not token_logprobs:
        return None
    values = [float(x) for x in token_logprobs if math.isfinite(x)]
    return sum(values) / len(values) if values else None


def rank_groups(candidates: Sequence[Candidate]) -> tuple[tuple[Group, ...], bool]:
    """Groups of identical sets ranked by w(g) (Eq. 2); and whether frequency voting was used."""
    voting = any(c.score is None for c in candidates)
    weights: dict[frozenset[int], list[float]] = {}
    first: dict[frozenset[int], int] = {}
    for i, cand in enumerate(candidates):
        s = 0.0 if voting or cand.score is None else cand.score
        weights.setdefault(cand.ids, []).append(math.exp(s))
        first.setdefault(cand.ids, i)
    groups = [Group(ids, sum(ws), len(ws), first[ids]) for ids, ws in weights.items()]
    groups.sort(key=lambda g: (-g.weight, len(g.ids), g.first))
    return tuple(groups), voting


def _unions(groups: Sequence[Group]) -> list[frozenset[int]]:
    out: list[frozenset[int]] = []
    acc: frozenset[int] = frozenset()
    for g in groups:
        acc = acc | g.ids
        if acc and acc not in out:
            out.append(acc)
    return out


def _coverage(candidate: frozenset[int], groups: Sequence[Group], total: float) -> float:
    covered = sum(g.weight for g in groups if g.ids <= candidate)
    return covered / total if total > 0 else 0.0


def aggregate(
    rows: Sequence[Candidate],
    cols: Sequence[Candidate],
    *,
    n_rows: int,
    n_cols: int,
    all_rows: frozenset[int],
    all_cols: frozenset[int],
    alpha: float,
) -> Aggregation:
    """Pick (R′, C′) maximizing S (Eqs 2–5). A dimension without candidates keeps all its ids.

    Args:
        rows, cols: The parsed samples of each dimension.
        n_rows, n_cols: |R| and |H| of the full table.
        all_rows, all_cols: Every id (the fallback for a dimension without usable samples).
        alpha: α of Eq. 5.
    """
    row_groups, row_voting = rank_groups(rows)
    col_groups, col_voting = rank_groups(cols)
    row_sets = _unions(row_groups) or [all_rows]
    col_sets = _unions(col_groups) or [all_cols]
    row_total = sum(g.weight for g in row_groups)
    col_total = sum(g.weight for g in col_groups)
    row_scores = [_coverage(r, row_groups, row_total) if row_groups else 1.0 for r in row_sets]
    col_scores = [_coverage(c, col_groups, col_total) if col_groups else 1.0 for c in col_sets]
    cells = max(1, n_rows * n_cols)
    best: tuple[tuple[float, float, int], int, int, float, float] | None = None
    for i, r in enumerate(row_sets):
        for j, c in enumerate(col_sets):
            support = math.sqrt(row_scores[i] * col_scores[j])
            rho = len(r) * len(c) / cells
            score = support / rho**alpha if rho > 0 else 0.0
            key = (score, -rho, -(i + j))
            if best is None or key > best[0]:
                best = (key, i, j, support, rho)
    assert best is not None  # row_sets and col_sets are never empty
    (score, _, _), i, j, support, rho = best
    return Aggregation(
        rows=row_sets[i],
        cols=col_sets[j],
        score=score,
        support=support,
        row_score=row_scores[i],
        col_score=col_scores[j],
        rho=rho,
        row_groups=row_groups,
        col_groups=col_groups,
        frequency_voting=(row_voting, col_voting),
    )
