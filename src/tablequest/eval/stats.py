"""Paired significance tests for per-question scores (TableSeek App. F, Table 28).

The paper's primary test is a paired bootstrap with 10,000 resamples, reporting the mean
difference, a 95% confidence interval and a two-sided p-value; Wilcoxon signed-rank and the
paired t-test are supplementary. Choices where the paper is silent (ours):

- The bootstrap resamples question indices with replacement (numpy `default_rng(seed)`),
  the CI is the percentile interval of the resampled mean differences, and the two-sided
  p-value is `min(1, 2·min(P*(Δ ≤ 0), P*(Δ ≥ 0)))` over the resampled differences Δ.
- All-zero differences (identical systems): Wilcoxon and t-test report statistic 0 and
  p = 1.0 instead of scipy's error/NaN. A constant non-zero difference gives t = ±inf, p = 0.
- Fewer than two pairs: Wilcoxon and t-test report NaN (undefined), the bootstrap still runs.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from tablequest.errors import UsageError

__all__ = [
    "AUTO_METRICS",
    "BootstrapResult",
    "Comparison",
    "ComparisonError",
    "PairedTestResult",
    "compare_runs",
    "load_run_metrics",
    "paired_bootstrap",
    "paired_t",
    "wilcoxon",
]

_CHUNK_CELLS = 4_000_000  # resample-matrix cells per chunk (bounds memory at ~32 MB)


class BootstrapResult(TypedDict):
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float


class PairedTestResult(TypedDict):
    statistic: float
    p_value: float


def _paired(a: Sequence[float], b: Sequence[float]) -> npt.NDArray[np.float64]:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ComparisonError(
            f"paired samples must be 1-D and equally long: {x.shape} vs {y.shape}"
        )
    if x.size == 0:
        raise ComparisonError("paired samples are empty")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ComparisonError("paired samples contain NaN or infinite values")
    return x - y


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of mean(a − b): mean difference, percentile CI, two-sided p."""
    if resamples < 1:
        raise ComparisonError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ComparisonError(f"confidence must be in (0, 1), got {confidence}")
    diff = _paired(a, b)
    n = diff.size
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = diff[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    p = min(1.0, 2.0 * min(float(np.mean(means <= 0.0)), float(np.mean(means >= 0.0))))
    return BootstrapResult(
        mean_diff=float(diff.mean()), ci_low=float(low), ci_high=float(high), p_value=p
    )


def _degenerate(diff: npt.NDArray[np.float64]) -> PairedTestResult | None:
    if diff.size < 2:
        return PairedTestResult(statistic=math.nan, p_value=math.nan)
    if np.all(diff == 0.0):
        return PairedTestResult(statistic=0.0, p_value=1.0)
    return None


def wilcoxon(a: Sequence[float], b: Sequence[float]) -> PairedTestResult:
    """Wilcoxon signed-rank test on the paired differences (scipy, two-sided)."""
    from scipy import stats

    diff = _paired(a, b)
    special = _degenerate(diff)
    if special is not None:
        return special
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small-sample / ties notes from scipy
        res = stats.wilcoxon(diff)
    return PairedTestResult(statistic=float(res.statistic), p_value=float(res.pvalue))


def paired_t(a: Sequence[float], b: Sequence[float]) -> PairedTestResult:
    """Paired t-test (scipy `ttest_rel`, two-sided)."""
    from scipy import stats

    diff = _paired(a, b)
    special = _degenerate(diff)
    if special is not None:
        return special
    if np.all(diff == diff[0]):
        return PairedTestResult(statistic=math.copysign(math.inf, float(diff[0])), p_value=0.0)
    res = stats.ttest_rel(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return PairedTestResult(statistic=float(res.statistic), p_value=float(res.pvalue))


# -- comparing two run files ---------------------------------------------------------------

AUTO_METRICS = ("f1", "em", "exact_match", "acc", "accuracy", "correct", "rouge_l", "bleu")


class ComparisonError(UsageError):
    """Two run files (or paired samples) cannot be compared, or a setting is out of range
    (resamples < 1); the message names the file or value and the fix."""


@dataclass(frozen=True)
class Comparison:
    """Result of comparing run A against run B on one per-question metric."""

    metric: str
    n_paired: int
    n_only_a: int
    n_only_b: int
    n_missing_metric: int
    mean_a: float
    mean_b: float
    bootstrap: BootstrapResult
    wilcoxon: PairedTestResult
    paired_t: PairedTestResult

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; NaN becomes None."""

        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, float) and math.isnan(value):
                return None
            return value

        return {
            "metric": self.metric,
            "n_paired": self.n_paired,
            "n_only_a": self.n_only_a,
            "n_only_b": self.n_only_b,
            "n_missing_metric": self.n_missing_metric,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_diff": self.bootstrap["mean_diff"],
            "bootstrap": clean(dict(self.bootstrap)),
            "wilcoxon": clean(dict(self.wilcoxon)),
            "paired_t": clean(dict(self.paired_t)),
        }


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def load_run_metrics(path: Path) -> dict[str, dict[str, float]]:
    """Read a run JSONL file: id → numeric metrics (booleans become 1.0/0.0).

    Raises:
        ComparisonError: missing file, bad JSON, a record without `id` or `metrics`,
            or an id that appears twice.
    """
    if not path.is_file():
        raise ComparisonError(f"run file not found: {str(path)!r}")
    out: dict[str, dict[str, float]] = {}
    first_line: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ComparisonError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or "id" not in record:
                raise ComparisonError(f"{path}:{lineno}: record has no 'id'")
            metrics = record.get("metrics")
            if not isinstance(metrics, dict):
                raise ComparisonError(f"{path}:{lineno}: record has no 'metrics' object")
            qid = str(record["id"])
            if qid in out:
                raise ComparisonError(
                    f"{path}:{lineno}: id {qid!r} already appeared on line {first_line[qid]}"
                )
            first_line[qid] = lineno
            out[qid] = {k: num for k, v in metrics.items() if (num := _as_number(v)) is not None}
    return out


def _pick_metric(
    a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], ids: list[str]
) -> str:
    names_a = {k for qid in ids for k in a[qid]}
    names_b = {k for qid in ids for k in b[qid]}
    common = names_a & names_b
    if len(common) == 1:
        return next(iter(common))
    for name in AUTO_METRICS:
        if name in common:
            return name
    if not common:
        raise ComparisonError("the two runs share no numeric metric; pass --metric NAME")
    raise ComparisonError(
        f"several metrics are present ({', '.join(sorted(common))}); pass --metric NAME"
    )


def compare_runs(
    a: Path, b: Path, *, metric: str = "auto", resamples: int = 10_000, seed: int = 0
) -> Comparison:
    """Pair two run files by id and test whether run A differs from run B on `metric`.

    `metric="auto"` takes the only shared numeric metric, else the first of
    `AUTO_METRICS` present in both runs. Questions where either run lacks the metric are
    left out and counted in `n_missing_metric`.
    """
    runs_a, runs_b = load_run_metrics(a), load_run_metrics(b)
    ids = [qid for qid in runs_a if qid in runs_b]
    if not ids:
        raise ComparisonError(
            f"no question id appears in both runs ({len(runs_a)} ids in {str(a)!r}, "
            f"{len(runs_b)} in {str(b)!r})"
        )
    name = _pick_metric(runs_a, runs_b, ids) if metric == "auto" else metric
    kept = [qid for qid in ids if name in runs_a[qid] and name in runs_b[qid]]
    if not kept:
        available = sorted(
            {k for qid in ids for k in runs_a[qid]} | {k for qid in ids for k in runs_b[qid]}
        )
        raise ComparisonError(
            f"metric {name!r} not found in the paired records; available: "
            f"{', '.join(available) or '(none)'}"
        )
    xs = [runs_a[qid][name] for qid in kept]
    ys = [runs_b[qid][name] for qid in kept]
    return Comparison(
        metric=name,
        n_paired=len(kept),
        n_only_a=len(runs_a) - len(ids),
        n_only_b=len(runs_b) - len(ids),
        n_missing_metric=len(ids) - len(kept),
        mean_a=sum(xs) / len(xs),
        mean_b=sum(ys) / len(ys),
        bootstrap=paired_bootstrap(xs, ys, resamples=resamples, seed=seed),
        wilcoxon=wilcoxon(xs, ys),
        paired_t=paired_t(xs, ys),
    )
