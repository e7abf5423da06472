"""Retrieval, robustness, efficiency and sub-table metrics against hand-computed values."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tablequest.eval.metrics import (
    discriminative_score,
    efficiency,
    frs,
    gr_all,
    gr_final,
    group_coverage_at_k,
    group_recall_at_k,
    mean,
    r_all,
    r_final,
    recall_at_k,
    set_prf,
    subtable_scores,
    top1_hit_rate_by_round,
    usage_summary,
    wcd,
)

RANKED = ["t3", "g1", "gold", "t4"]
GROUP = ["gold", "g1", "g2"]


def test_recall_at_k() -> None:
    assert recall_at_k(RANKED, "gold", 2) == 0.0
    assert recall_at_k(RANKED, "gold", 3) == 1.0
    assert recall_at_k(RANKED, ["x", "t3"], 1) == 1.0  # any gold table counts
    assert recall_at_k([], "gold", 5) == 0.0
    with pytest.raises(ValueError, match="k must be >= 1"):
        recall_at_k(RANKED, "gold", 0)


def test_group_recall_and_tcr_coverage() -> None:
    assert group_recall_at_k(RANKED, GROUP, 1) == 0.0
    assert group_recall_at_k(RANKED, GROUP, 2) == 1.0
    # TCR-Bench GR@k: group hits in top-k over min(|G|, k)
    assert group_coverage_at_k(RANKED, GROUP, 2) == pytest.approx(1 / 2)
    assert group_coverage_at_k(RANKED, GROUP, 4) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="non-empty group"):
        group_coverage_at_k(RANKED, [], 2)


def test_trajectory_recalls() -> None:
    assert r_all(["t3", "gold"], "gold") == 1.0
    assert r_all(["t3"], "gold") == 0.0
    assert r_final("gold", "gold") == 1.0
    assert r_final(["t3", "gold"], ["gold"]) == 1.0
    assert r_final(None, "gold") == 0.0
    assert gr_final("g2", GROUP) == 1.0
    assert gr_final("gold", [], "gold") == 1.0  # the group always includes the gold table
    assert gr_final("t3", GROUP) == 0.0
    # GR@all: R@all → 1; else the final table decides
    assert gr_all(["t3", "gold"], "t3", "gold", GROUP) == 1.0
    assert gr_all(["g1", "t3"], "t3", "gold", GROUP) == 0.0  # g1 consulted, final not in group
    assert gr_all(["t3", "g1"], "g1", "gold", GROUP) == 1.0


def test_discriminative_score_on_aggregates() -> None:
    # mean R = 1/4, mean GR = 3/4 → DS = 1/3 (not the mean of per-query ratios)
    assert discriminative_score([1, 0, 0, 0], [1, 1, 1, 0]) == pytest.approx(1 / 3)
    assert discriminative_score([0, 0], [0, 0]) == 0.0
    with pytest.raises(ValueError, match="group-recall"):
        discriminative_score([1], [1, 0])
    with pytest.raises(ValueError, match="at least one"):
        discriminative_score([], [])


def test_format_robustness() -> None:
    # Table 40, TableSeek (10-step): 0.346 / 0.361 / 0.364 / 0.364 → FRS 95.1%
    f1 = {"csv": 0.346, "mixed": 0.361, "html": 0.364, "markdown": 0.364}
    assert frs(f1) == pytest.approx(100 * 0.346 / 0.364)
    assert round(frs(f1), 1) == 95.1
    assert wcd(f1) == pytest.approx((0.364 - 0.346) / 0.364)
    assert frs([0.5, 0.5]) == 100.0
    assert math.isnan(frs([0.0, 0.0]))
    assert math.isnan(wcd([0.0]))
    with pytest.raises(ValueError, match="at least one format"):
        frs({})


def test_efficiency() -> None:
    # Table 37: 10step-5s1 R@all 0.507, F1 0.361 → Eff 0.712
    assert round(efficiency(0.361, 0.507), 3) == 0.712
    assert math.isnan(efficiency(0.3, 0.0))


def test_top1_hit_rate_by_round_carries_last_round() -> None:
    trajectories: list[list[str | None]] = [["a", "gold1"], ["gold2"], ["x", "y", None], []]
    golds = ["gold1", "gold2", "y", "z"]
    # round 0: gold2 → 1/4; round 1: gold1, gold2 (carried), y → 3/4; round 2: None → 2/4
    assert top1_hit_rate_by_round(trajectories, golds) == pytest.approx([0.25, 0.75, 0.5])
    assert top1_hit_rate_by_round(trajectories, golds, rounds=1) == pytest.approx([0.25])
    assert top1_hit_rate_by_round([], []) == []
    with pytest.raises(ValueError, match="trajectories"):
        top1_hit_rate_by_round([["a"]], [])


def test_usage_summary() -> None:
    records: list[dict[str, Any]] = [
        {"steps": 3, "actions": {"qa": 1, "refine": 2}, "usage": {"calls": 3, "seconds": 1.5}},
        {"steps": 5, "actions": {"qa": 2}, "usage": {"calls": 5, "seconds": 2.5, "x": "n/a"}},
        {"usage": {"calls": True}},  # booleans and strings are not counters
    ]
    summary = usage_summary(records)
    assert summary["n"] == 3
    assert summary["mean"]["steps"] == 4.0
    assert summary["mean"]["usage.calls"] == 4.0
    assert summary["mean"]["actions.qa"] == 1.0  # (1 + 2 + 0) / 3
    assert summary["mean"]["actions.refine"] == pytest.approx(2 / 3)
    assert summary["total"]["usage.seconds"] == 4.0
    assert "usage.x" not in summary["mean"]
    assert mean([]) != mean([])  # NaN


def test_set_prf_and_subtable_scores() -> None:
    assert set_prf([], []) == (1.0, 1.0, 1.0)
    assert set_prf([1], []) == (0.0, 0.0, 0.0)
    # rows: pred {0,1,2}, gold {1,2} → P 2/3, R 1, F1 0.8
    # cols: pred {a}, gold {a,b} → P 1, R 1/2, F1 2/3
    # cells: 3 predicted, 4 gold, 2 shared → P 2/3, R 1/2, F1 4/7
    s = subtable_scores([0, 1, 2], ["a"], [1, 2], ["a", "b"])
    assert (s["row_p"], s["row_r"], s["row_f1"]) == pytest.approx((2 / 3, 1.0, 0.8))
    assert (s["col_p"], s["col_r"], s["col_f1"]) == pytest.approx((1.0, 0.5, 2 / 3))
    assert (s["cell_p"], s["cell_r"], s["cell_f1"]) == pytest.approx((2 / 3, 0.5, 4 / 7))
    assert s["exact_match"] is False
    same = subtable_scores([2, 1], ["b", "a"], [1, 2], ["a", "b"])
    assert same["exact_match"] is True and same["cell_f1"] == 1.0
