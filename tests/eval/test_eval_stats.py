"""Paired bootstrap, Wilcoxon and paired t-test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tablequest.eval.stats import ComparisonError, paired_bootstrap, paired_t, wilcoxon


def test_bootstrap_hand_computed_distribution() -> None:
    # diffs [1, 0, 1, 0]: resampled means take 0, .25, .5, .75, 1 with Binomial(4, 1/2)
    # weights 1/16, 4/16, 6/16, 4/16, 1/16 → 95% CI [0, 1]; P(mean ≤ 0) = 1/16 → p ≈ 0.125
    result = paired_bootstrap([1, 0, 1, 1], [0, 0, 0, 1], resamples=20_000, seed=3)
    assert result["mean_diff"] == 0.5
    assert (result["ci_low"], result["ci_high"]) == (0.0, 1.0)
    assert result["p_value"] == pytest.approx(0.125, abs=0.015)


def test_bootstrap_degenerate_cases() -> None:
    same = paired_bootstrap([0.3, 0.5, 0.2], [0.3, 0.5, 0.2])
    assert same == {"mean_diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0}
    better = paired_bootstrap([1.0] * 10, [0.0] * 10, resamples=500)
    assert better["p_value"] == 0.0 and better["ci_low"] == 1.0
    single = paired_bootstrap([1.0], [0.0], resamples=10)
    assert single["mean_diff"] == 1.0


def test_bootstrap_is_seeded_and_chunked() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(1_500), rng.random(1_500)  # 1,500 × 10,000 cells → several chunks
    first = paired_bootstrap(list(a), list(b), seed=1)
    assert first == paired_bootstrap(list(a), list(b), seed=1)
    assert first != paired_bootstrap(list(a), list(b), seed=2)
    assert first["ci_low"] < first["mean_diff"] < first["ci_high"]
    assert 0.0 <= first["p_value"] <= 1.0


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ComparisonError, match="equally long"):
        paired_bootstrap([1, 2], [1])
    with pytest.raises(ComparisonError, match="empty"):
        paired_bootstrap([], [])
    with pytest.raises(ComparisonError, match="NaN"):
        paired_bootstrap([math.nan], [1.0])
    with pytest.raises(ComparisonError, match="resamples"):
        paired_bootstrap([1.0], [0.0], resamples=0)
    with pytest.raises(ComparisonError, match="confidence"):
        paired_bootstrap([1.0], [0.0], confidence=1.0)


def test_wilcoxon_and_t_match_scipy() -> None:
    a = [0.9, 0.4, 0.7, 0.3, 0.8, 0.6, 0.2]
    b = [0.5, 0.5, 0.1, 0.2, 0.3, 0.6, 0.1]
    w = wilcoxon(a, b)
    ref = stats.wilcoxon(np.subtract(a, b))
    assert (w["statistic"], w["p_value"]) == pytest.approx((ref.statistic, ref.pvalue))
    t = paired_t(a, b)
    ref_t = stats.ttest_rel(a, b)
    assert (t["statistic"], t["p_value"]) == pytest.approx((ref_t.statistic, ref_t.pvalue))


def test_tests_handle_identical_and_constant_differences() -> None:
    assert wilcoxon([1, 0, 1], [1, 0, 1]) == {"statistic": 0.0, "p_value": 1.0}
    assert paired_t([1, 0, 1], [1, 0, 1]) == {"statistic": 0.0, "p_value": 1.0}
    assert paired_t([1, 1, 1], [0, 0, 0]) == {"statistic": math.inf, "p_value": 0.0}
    assert paired_t([0, 0], [1, 1])["statistic"] == -math.inf
    one = wilcoxon([1.0], [0.0])
    assert math.isnan(one["statistic"]) and math.isnan(one["p_value"])
    assert math.isnan(paired_t([1.0], [0.0])["p_value"])
