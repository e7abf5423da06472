"""`eval compare`: library function and the typer command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli.eval_compare import register
from tablequest.eval.stats import ComparisonError, compare_runs, load_run_metrics


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = _write(
        tmp_path / "a.jsonl",
        [
            {"id": "q1", "metrics": {"f1": 1.0, "em": True}},
            {"id": "q2", "metrics": {"f1": 0.5, "em": False}},
            {"id": "q3", "metrics": {"f1": 1.0, "em": True}},
            {"id": "q4", "metrics": {"em": True}},
            {"id": "only-a", "metrics": {"f1": 0.0}},
        ],
    )
    b = _write(
        tmp_path / "b.jsonl",
        [
            {"id": "q3", "metrics": {"f1": 0.0, "em": False}},
            {"id": "q1", "metrics": {"f1": 0.5, "em": False}},
            {"id": "q2", "metrics": {"f1": 0.5, "em": False}},
            {"id": "q4", "metrics": {"f1": 1.0, "em": True, "note": "text"}},
        ],
    )
    return a, b


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Keep `compare` a named sub-command."""

    return app


def test_compare_runs_pairs_by_id(runs: tuple[Path, Path]) -> None:
    a, b = runs
    result = compare_runs(a, b, resamples=2_000)
    assert result.metric == "f1"  # preferred over em when both are present
    assert (result.n_paired, result.n_only_a, result.n_only_b) == (3, 1, 0)
    assert result.n_missing_metric == 1  # q4 has no f1 in A
    assert result.mean_a == pytest.approx(2.5 / 3)
    assert result.mean_b == pytest.approx(1.0 / 3)
    assert result.bootstrap["mean_diff"] == pytest.approx(0.5)
    em = compare_runs(a, b, metric="em", resamples=500)
    assert em.n_paired == 4 and em.mean_a == 0.75 and em.mean_b == 0.25


def test_compare_runs_errors(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = runs
    with pytest.raises(ComparisonError, match="not found"):
        compare_runs(tmp_path / "missing.jsonl", b)
    with pytest.raises(ComparisonError, match="metric 'bleu' not found"):
        compare_runs(a, b, metric="bleu")
    other = _write(tmp_path / "other.jsonl", [{"id": "z", "metrics": {"f1": 1}}])
    with pytest.raises(ComparisonError, match="no question id appears in both"):
        compare_runs(a, other)
    x = _write(tmp_path / "x.jsonl", [{"id": "q1", "metrics": {"acc": 1, "rouge_x": 1}}])
    y = _write(tmp_path / "y.jsonl", [{"id": "q1", "metrics": {"rouge_x": 0, "acc": 0}}])
    assert compare_runs(x, y, resamples=10).metric == "acc"
    u = _write(tmp_path / "u.jsonl", [{"id": "q1", "metrics": {"p": 1, "q": 1}}])
    v = _write(tmp_path / "v.jsonl", [{"id": "q1", "metrics": {"p": 0, "q": 0}}])
    with pytest.raises(ComparisonError, match="several metrics"):
        compare_runs(u, v)
    w = _write(tmp_path / "w.jsonl", [{"id": "q1", "metrics": {"r": 0}}])
    with pytest.raises(ComparisonError, match="share no numeric metric"):
        compare_runs(u, w)
    single = compare_runs(
        _write(tmp_path / "s1.jsonl", [{"id": "q1", "metrics": {"only": 1}}]),
        _write(tmp_path / "s2.jsonl", [{"id": "q1", "metrics": {"only": 0}}]),
        resamples=10,
    )
    assert single.metric == "only"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json}\n", "not valid JSON"),
        ('{"metrics": {}}\n', "has no 'id'"),
        ('{"id": 1}\n', "no 'metrics' object"),
        ('{"id": 1, "metrics": {}}\n\n{"id": 1, "metrics": {}}\n', "already appeared on line 1"),
    ],
)
def test_load_run_metrics_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ComparisonError, match=message):
        load_run_metrics(path)


def test_cli_text_and_json(runs: tuple[Path, Path]) -> None:
    a, b = runs
    runner = CliRunner()
    text = runner.invoke(_app(), ["compare", str(a), str(b), "--resamples", "500"])
    assert text.exit_code == 0, text.output
    assert "metric: f1   paired questions: 3" in text.output
    assert "paired bootstrap: 95% CI" in text.output
    assert "Wilcoxon signed-rank" in text.output and "paired t-test" in text.output
    assert "not paired: 1 only in A, 1 without 'f1'" in text.output
    out = runner.invoke(_app(), ["compare", str(a), str(b), "--metric", "em", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["metric"] == "em" and payload["n_paired"] == 4
    assert set(payload["bootstrap"]) == {"mean_diff", "ci_low", "ci_high", "p_value"}
    assert payload["mean_diff"] == pytest.approx(0.5)


def test_cli_reports_nan_as_null_and_na(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": "q", "metrics": {"f1": 1}}])
    b = _write(tmp_path / "b.jsonl", [{"id": "q", "metrics": {"f1": 0}}])
    runner = CliRunner()
    out = runner.invoke(_app(), ["compare", str(a), str(b), "--json", "--resamples", "10"])
    assert json.loads(out.output)["wilcoxon"] == {"statistic": None, "p_value": None}
    text = runner.invoke(_app(), ["compare", str(a), str(b), "--resamples", "10"])
    assert "W = n/a  p = n/a" in text.output
    assert "p = <0.001" in text.output  # bootstrap p = 0 for a constant positive difference


def test_cli_errors_are_clean(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = runs
    runner = CliRunner()
    missing = runner.invoke(_app(), ["compare", str(a), str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2
    assert "error: run file not found" in missing.output
    assert missing.exception is None or isinstance(missing.exception, SystemExit)
    bad = runner.invoke(_app(), ["compare", str(a), str(a), "--resamples", "0"])
    assert bad.exit_code == 2 and "resamples must be >= 1" in bad.output
