"""Expectation-aware path selection (DTR §3.3, Eqs. 1–3) and the expectation update (Eq. 5, Alg. 1).

    E(π) = R̂(π) + α·P(π)·sqrt( log Σ_π′ N(π′) / (1 + N(π)) )            (Eq. 1)
    E(π) ≤ R_max + α·sqrt( log Σ_π′ N(π′) )   when R̂ ≤ R_max, P ≤ 1       (Eq. 2)
    incremental: R̂ ← (N·R̂ + r) / (N + 1), N ← N + 1                     (Alg. 1 line 20)
    lr:          R̂ ← (1 − η)·R̂ + η·r,       N ← N + 1                     (Eq. 5)

Choices (ours; the paper is silent):
- The sum Σ N(π′) runs over the candidate set of the current question, whose counts start from
  the experience memory (executions of the same path on tables of the same structure for the
  same query type). At Σ N = 1 the formula itself gives 0 (log 1 = 0); at Σ N = 0 (nothing
  ran yet) log 0 is undefined and the exploration term is taken as 0 (no evidence yet). Ties
  in E are broken by the smaller N(π) (the exploration term's own preference, Eq. 3, which a
  zero logarithm cannot express: after one failed run every E is 0, and the untried path
  goes first), then by the prior P, then by enumeration order.
- R_max = 1: rewards r = φ(f) lie in [0, 1] (`feedback`).
- update=incremental follows Alg. 1 lines 17–20: R̂ and N are updated once per executed
  *operation*, with that operation's reward (`execute`: f and r per operation), so N(π) counts
  operation executions. update=lr follows Eq. 5, which §3.5 states for a path-level reward
  R(π) "after executing an operation path": once per path execution.
- Eq. 5's remark that "feedback from one path could influence the expectations of other
  related paths" is implemented for update=lr only: an unexecuted candidate that shares a
  prefix of s operations with the executed path (of length L) moves towards r by η·s/L,
  without its count changing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from tablequest.methods.research.operations import Path, path_key

__all__ = [
    "R_MAX",
    "Candidate",
    "PathStats",
    "expectation",
    "expectation_bound",
    "propagate",
    "rank",
    "update",
]

R_MAX = 1.0


@dataclass
class PathStats:
    """R̂(π) and N(π)."""

    r_hat: float = 0.0
    n: int = 0


@dataclass
class Candidate:
    """A candidate path with its prior, statistics and what happened when it ran."""

    path: Path
    prior: float
    stats: PathStats = field(default_factory=PathStats)
    executed: bool = False
    origin: str = "enumerated"
    runs: int = 0
    """Executions in the current question (selection=repeat may run a path again)."""
    context: int = -1
    """The question's lesson-context version at the path's last execution (-1: never ran)."""

    @property
    def key(self) -> str:
        return path_key(self.path)


def expectation(stats: PathStats, prior: float, total_n: int, alpha: float) -> float:
    """Eq. 1 (exploration term 0 at Σ N = 0, where log 0 is undefined)."""
    if total_n < 1:
        return stats.r_hat
    return stats.r_hat + alpha * prior * math.sqrt(math.log(total_n) / (1 + stats.n))


def expectation_bound(total_n: int, alpha: float, r_max: float = R_MAX) -> float:
    """Eq. 2: the upper bound of E(π) for any path of the candidate set."""
    return r_max + (alpha * math.sqrt(math.log(total_n)) if total_n >= 1 else 0.0)


def rank(candidates: Sequence[Candidate], alpha: float) -> list[tuple[Candidate, float]]:
    """Candidates with their E(π), best first (ties: smaller N, higher prior, given order)."""
    total = sum(c.stats.n for c in candidates)
    scored = [(c, expectation(c.stats, c.prior, total, alpha)) for c in candidates]

    def key(i: int) -> tuple[float, int, float, int]:
        cand, score = scored[i]
        return (-score, cand.stats.n, -cand.prior, i)

    order = sorted(range(len(scored)), key=key)
    return [scored[i] for i in order]


def update(
    stats: PathStats, reward: float, *, rule: str = "incremental", eta: float = 0.5
) -> PathStats:
    """Alg. 1 line 20 (incremental mean) or Eq. 5 (learning rate η), in place; returns it."""
    if rule == "lr":
        stats.r_hat = (1.0 - eta) * stats.r_hat + eta * reward
    else:
        stats.r_hat = (stats.n * stats.r_hat + reward) / (stats.n + 1)
    stats.n += 1
    return stats


def propagate(
    candidates: Sequence[Candidate], executed: Candidate, reward: float, *, eta: float
) -> None:
    """Eq. 5's related-path update (update=lr): shared prefixes pull R̂ towards r."""
    length = len(executed.path)
    for c in candidates:
        if c is executed or c.executed:
            continue
        shared = 0
        for a, b in zip(c.path, executed.path, strict=False):
            if a != b:
                break
            shared += 1
        if shared:
            weight = eta * shared / length
            c.stats.r_hat = (1.0 - weight) * c.stats.r_hat + weight * reward
