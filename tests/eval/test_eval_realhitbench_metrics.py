"""RealHiTBench metrics per family: EM/F1, ROUGE-L, ECR and Pass@1 against reference chart data."""

from __future__ import annotations

import pytest

from tablequest.eval.metrics.realhitbench import (
    aggregate_realhitbench,
    chart_type,
    pass_at_1,
    preprocess,
    qa_scores,
    score_realhitbench,
    structure_consistency,
)


def test_preprocess_rounds_decimals_and_normalizes() -> None:
    assert preprocess("Mean = 5.80%, Std = 1.62%") == "mean 58 std 16"
    assert preprocess("The answer is 1955, 62170.") == "answer is 1955 62170"
    assert preprocess("   ") == "#" and preprocess("", count_blank=False) == ""


def test_qa_scores() -> None:
    assert qa_scores("1955, 62170", "1955, 62170") == {"EM": 1.0, "F1": 1.0, "ROUGE-L": 1.0}
    partial = qa_scores("1955", "1955, 62170")
    assert partial["EM"] == 0.0 and partial["F1"] == pytest.approx(2 / 3)
    assert qa_scores(None, "x")["F1"] == 0.0
    assert qa_scores("5.83", "5.8")["EM"] == 1.0  # one decimal place, as upstream
    # ROUGE-L through rouge_score, as upstream's evaluate.load("rouge"): LCS "b c d" of
    # "b c d e" and "x b c d" → P = R = 3/4 → F = 0.75 (hand-computed)
    assert qa_scores("b c d e", "x b c d")["ROUGE-L"] == pytest.approx(0.75)
    # its tokenizer keeps only [a-z0-9] runs: "café" is the tokens "caf" (ours kept "café")
    assert qa_scores("café 12", "caf 12")["ROUGE-L"] == pytest.approx(1.0)


def test_pass_at_1_per_chart_type() -> None:
    line = {"lines": [[56787, 59091], [6260, 4744]], "bars": [], "pie": [], "scatter": []}
    assert pass_at_1("[[56787, 59091], [6260, 4744]]\n", line, "LineChart")
    assert pass_at_1("[[6260, 4744], [56787, 59091]]", line, "LineChart")  # order-free
    assert not pass_at_1("[[56787, 59091]]", line, "LineChart")
    bars = {"bars": [12.6400001, 3.86], "lines": []}
    assert pass_at_1("[12.64, 3.858333333333333]", bars, "BarChart")
    pie = {"pie": [0.0452, 0.9548]}
    assert pass_at_1("[0.05, 0.95]\n", pie, "PieChart")
    assert pass_at_1("[2668, 56423]", pie, "PieChart")  # raw values are normalised first
    scatter = {"scatter": [[9.9, 7.4, 7.0]]}
    assert pass_at_1("[[9.9, 7.4, 7.0]]", scatter, "ScatterChart")
    assert not pass_at_1("not a list", scatter, "ScatterChart")
    assert not pass_at_1("[1]", None, "BarChart")
    assert chart_type("PieChart Generation") == "PieChart" and chart_type("Summary") is None


def test_score_by_family_and_aggregate() -> None:
    vis = score_realhitbench(
        "Visualization", "BarChart Generation", "chart", "[1, 2]", chart_data={"bars": [2, 1]}
    )
    assert vis == {"ECR": 1.0, "Pass@1": 1.0}
    failed = score_realhitbench("Visualization", "BarChart Generation", None, "[1, 2]")
    assert failed == {"ECR": 0.0, "Pass@1": 0.0}
    errored = score_realhitbench(
        "Visualization", "LineChart Generation", "x", "[1]", chart_data={"error": "boom"}
    )
    assert errored == {"ECR": 0.0, "Pass@1": 0.0}
    da = score_realhitbench("Data Analysis", "Summary Analysis", "sales grew fast", "sales grew")
    assert set(da) == {"ROUGE-L"} and da["ROUGE-L"] == pytest.approx(0.8)
    fc = score_realhitbench("Fact Checking", "Value-Matching", "1955", "1955")
    assert fc == {"EM": 1.0, "F1": 1.0}
    table = aggregate_realhitbench(
        [("Fact Checking", fc), ("Fact Checking", {"EM": 0.0, "F1": 0.5}), ("Visualization", vis)]
    )
    assert table["Fact Checking"] == {"EM": 50.0, "F1": 75.0, "n": 2}
    assert table["Visualization"] == {"ECR": 100.0, "Pass@1": 100.0, "n": 1}
    assert structure_consistency("3 levels", "3 levels") == {"EM": 1.0, "F1": 1.0}
