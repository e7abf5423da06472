"""`tablequest eval compare A.jsonl B.jsonl`: paired significance of two runs.

A thin skin over `tablequest.eval.stats.compare_runs`. The lead registers it on the `eval`
sub-app with `register(eval_app)`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli._output import fail_on

if TYPE_CHECKING:
    from tablequest.eval.stats import Comparison

__all__ = ["compare", "register"]


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.4f}" if abs(value) < 1000 else f"{value:.6g}"


def _p(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def render(result: Comparison, a: Path, b: Path) -> str:
    """Plain-text report of a comparison."""
    bs = result.bootstrap
    lines = [
        f"metric: {result.metric}   paired questions: {result.n_paired}",
        f"A = {a}   mean {_fmt(result.mean_a)}",
        f"B = {b}   mean {_fmt(result.mean_b)}",
        f"Δ (A − B) = {bs['mean_diff']:+.4f}",
        f"paired bootstrap: 95% CI [{bs['ci_low']:+.4f}, {bs['ci_high']:+.4f}]  "
        f"p = {_p(bs['p_value'])}",
        f"Wilcoxon signed-rank: W = {_fmt(result.wilcoxon['statistic'])}  "
        f"p = {_p(result.wilcoxon['p_value'])}",
        f"paired t-test: t = {_fmt(result.paired_t['statistic'])}  "
        f"p = {_p(result.paired_t['p_value'])}",
    ]
    skipped = []
    if result.n_only_a:
        skipped.append(f"{result.n_only_a} only in A")
    if result.n_only_b:
        skipped.append(f"{result.n_only_b} only in B")
    if result.n_missing_metric:
        skipped.append(f"{result.n_missing_metric} without {result.metric!r}")
    if skipped:
        lines.append("not paired: " + ", ".join(skipped))
    return "\n".join(lines)


def compare(
    a: Annotated[Path, typer.Argument(help="Run A (JSONL with 'id' and 'metrics').")],
    b: Annotated[Path, typer.Argument(help="Run B, compared against A.")],
    metric: Annotated[
        str, typer.Option("--metric", help="Per-question metric to compare, or 'auto'.")
    ] = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
) -> None:
    """Paired bootstrap, Wilcoxon signed-rank and paired t-test of run A against run B."""
    from tablequest.eval.stats import ComparisonError, compare_runs

    try:
        result = compare_runs(a, b, metric=metric, resamples=resamples, seed=seed)
    except ComparisonError as exc:  # the runs, or a bad option (e.g. --resamples 0)
        fail_on(exc, json_out=json_out)
    if json_out:
        payload = {"a": str(a), "b": str(b), **result.to_dict()}
        typer.echo(json.dumps(payload, indent=2))
    else:
        typer.echo(render(result, a, b))


def register(app: typer.Typer) -> None:
    """Add the `compare` command to the given (eval) sub-app."""
    app.command("compare")(compare)
