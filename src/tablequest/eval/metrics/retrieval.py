"""Retrieval and efficiency metrics of the TableSeek paper.

Implements (TableSeek §Evaluation, App. I, App. M, Tables 4, 36, 37, 40):

- R@k: the gold table is in the top-k of a single ranking. R@all: the gold table is among
  all tables handed to QA in a trajectory. R@final: the gold table is (one of) the table(s)
  of the final QA call.
- GR@k: any table of the query's sibling group is in the top-k. GR@all (App. I): 1 when
  R@all is 1, else whether the final table belongs to the group. GR@final: the final table
  belongs to the group. DS = R / GR, computed on aggregates as mean(R) / mean(GR) and 0 when
  mean(GR) is 0 (TCR-Bench `Compute_Metrics.py` does the same).
- `group_coverage_at_k`: TCR-Bench's own GR@k (share of the group found in the top-k,
  over min(|G|, k)), for comparison with that benchmark's tables.
- FRS = 100·min(F1)/max(F1) over formats; WCD = (max − min)/max (App. N); Eff = F1 / R@all.
- Top-1 hit rate per refinement round (Table 36).

Choices where the paper is silent (ours): with several gold tables a hit on any counts; the
sibling group always includes the gold table(s) (an empty group means "no group": GR = R);
a trajectory that stopped before round r keeps its last top-1 for the later rounds; FRS, WCD
and Eff are NaN when their denominator is 0.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypedDict

__all__ = [
    "UsageSummary",
    "discriminative_score",
    "efficiency",
    "frs",
    "gr_all",
    "gr_final",
    "group_coverage_at_k",
    "group_recall_at_k",
    "mean",
    "r_all",
    "r_final",
    "recall_at_k",
    "top1_hit_rate_by_round",
    "usage_summary",
    "wcd",
]

IdSet = str | Collection[str]


def _ids(value: IdSet | None) -> set[str]:
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    return set(value)


def _group(group: IdSet, gold: IdSet) -> set[str]:
    return _ids(group) | _ids(gold)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_at_k(ranked_ids: Sequence[str], gold_ids: IdSet, k: int) -> float:
    """1.0 if a gold table is among the first `k` ranked ids, else 0.0."""
    _check_k(k)
    gold = _ids(gold_ids)
    return float(any(t in gold for t in ranked_ids[:k]))


def group_recall_at_k(ranked_ids: Sequence[str], group_ids: IdSet, k: int) -> float:
    """GR@k: 1.0 if any table of the sibling group is among the first `k` ids."""
    _check_k(k)
    group = _ids(group_ids)
    return float(any(t in group for t in ranked_ids[:k]))


def group_coverage_at_k(ranked_ids: Sequence[str], group_ids: IdSet, k: int) -> float:
    """TCR-Bench's GR@k: group tables in the top-k divided by min(|group|, k)."""
    _check_k(k)
    group = _ids(group_ids)
    if not group:
        raise ValueError("group_coverage_at_k needs a non-empty group")
    hits = sum(1 for t in ranked_ids[:k] if t in group)
    return hits / min(len(group), k)


def r_all(consulted: Iterable[str], gold_ids: IdSet) -> float:
    """R@all: 1.0 if a gold table was given to any QA call of the trajectory."""
    gold = _ids(gold_ids)
    return float(any(t in gold for t in consulted))


def r_final(final: IdSet | None, gold_ids: IdSet) -> float:
    """R@final: 1.0 if the final QA call used a gold table (`final` may be None)."""
    return float(bool(_ids(final) & _ids(gold_ids)))


def gr_final(final: IdSet | None, group_ids: IdSet, gold_ids: IdSet = ()) -> float:
    """GR@final: 1.0 if the final table belongs to the sibling group (gold included)."""
    return float(bool(_ids(final) & _group(group_ids, gold_ids)))


def gr_all(
    consulted: Iterable[str], final: IdSet | None, gold_ids: IdSet, group_ids: IdSet
) -> float:
    """GR@all (App. I): 1.0 if R@all, else whether the final table is in the group."""
    if r_all(consulted, gold_ids):
        return 1.0
    return gr_final(final, group_ids, gold_ids)


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; NaN for no values."""
    xs = [float(v) for v in values]
    return sum(xs) / len(xs) if xs else math.nan


def discriminative_score(recalls: Iterable[float], group_recalls: Iterable[float]) -> float:
    """DS = mean(R) / mean(GR) over queries; 0.0 when mean(GR) is 0 (TCR-Bench convention)."""
    r = list(recalls)
    gr = list(group_recalls)
    if len(r) != len(gr):
        raise ValueError(f"{len(r)} recall values but {len(gr)} group-recall values")
    if not r:
        raise ValueError("discriminative_score needs at least one query")
    gr_mean = mean(gr)
    return mean(r) / gr_mean if gr_mean > 0 else 0.0


def _scores(scores: Mapping[str, float] | Sequence[float]) -> list[float]:
    values = list(scores.values()) if isinstance(scores, Mapping) else list(scores)
    if not values:
        raise ValueError("need the score of at least one format")
    return [float(v) for v in values]


def frs(scores: Mapping[str, float] | Sequence[float]) -> float:
    """Format Robustness Score: 100·min/max over per-format scores (NaN if max is 0)."""
    values = _scores(scores)
    best = max(values)
    return 100.0 * min(values) / best if best > 0 else math.nan


def wcd(scores: Mapping[str, float] | Sequence[float]) -> float:
    """Worst-case degradation: (max − min)/max over per-format scores (NaN if max is 0)."""
    values = _scores(scores)
    best = max(values)
    return (best - min(values)) / best if best > 0 else math.nan


def efficiency(f1: float, r_all_value: float) -> float:
    """Eff = F1 / R@all (App. M, Table 37); NaN when R@all is 0."""
    return f1 / r_all_value if r_all_value > 0 else math.nan


def top1_hit_rate_by_round(
    top1_per_round: Sequence[Sequence[str | None]],
    gold_ids: Sequence[IdSet],
    *,
    rounds: int | None = None,
) -> list[float]:
    """Share of queries whose top-1 table is gold, for rounds 0, 1, … (Table 36).

    Args:
        top1_per_round: per query, the top-1 table id after each round (round 0 = the
            initial ranking); None where a round ranked nothing.
        gold_ids: per query, its gold table id(s).
        rounds: how many rounds to report; default the longest trajectory.

    A query whose trajectory ended earlier keeps its last top-1 for later rounds.
    """
    if len(top1_per_round) != len(gold_ids):
        raise ValueError(f"{len(top1_per_round)} trajectories but {len(gold_ids)} gold entries")
    if not top1_per_round:
        return []
    n_rounds = rounds if rounds is not None else max(len(t) for t in top1_per_round)
    rates: list[float] = []
    for r in range(n_rounds):
        hits = 0
        for trajectory, gold in zip(top1_per_round, gold_ids, strict=True):
            if trajectory:
                top1 = trajectory[min(r, len(trajectory) - 1)]
                hits += top1 is not None and top1 in _ids(gold)
        rates.append(hits / len(top1_per_round))
    return rates


class UsageSummary(TypedDict):
    """Averages and totals of per-record effort counters."""

    n: int
    mean: dict[str, float]
    total: dict[str, float]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def usage_summary(records: Iterable[Mapping[str, Any]]) -> UsageSummary:
    """Average steps, action counts, calls, tokens and time over run records.

    Reads `steps` (number), `actions` (name → count; a missing action counts 0) and every
    numeric field of `usage` (e.g. calls, prompt_tokens, completion_tokens, seconds). Keys
    come out as `steps`, `actions.<name>`, `usage.<field>`. Steps and usage fields are
    averaged over the records that have them.
    """
    rows = list(records)
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    action_names: set[str] = set()

    def add(key: str, value: Any) -> None:
        number = _number(value)
        if number is not None:
            sums[key] = sums.get(key, 0.0) + number
            counts[key] = counts.get(key, 0) + 1

    for row in rows:
        add("steps", row.get("steps"))
        usage = row.get("usage")
        if isinstance(usage, Mapping):
            for name, value in usage.items():
                add(f"usage.{name}", value)
        actions = row.get("actions")
        if isinstance(actions, Mapping):
            for name, value in actions.items():
                action_names.add(str(name))
                add(f"actions.{name}", value)
    for name in action_names:
        counts[f"actions.{name}"] = len(rows)  # missing action = 0 occurrences
    means = {key: sums[key] / counts[key] for key in sorted(sums)}
    return UsageSummary(n=len(rows), mean=means, total=dict(sorted(sums.items())))
