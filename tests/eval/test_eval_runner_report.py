"""Run reports: the paper's table layouts and numbers computed from hand-made records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tablequest.eval.report import summarize, to_markdown, write_report

TABFACT_RUN = {
    "dataset": "tabfact",
    "method": "seek",
    "config": "10step-5s1-small",
    "format": "csv",
    "model": "m",
}


def fact(qid: str, acc: float, supported: bool, r: float) -> dict[str, Any]:
    return {
        "id": qid,
        "status": "answered",
        "supported": supported,
        "metrics": {"acc": acc, "r_all": r, "r_final": r},
        "steps": 4,
        "actions": {"qa": 1, "pattern_gen": 1},
        "usage": {"calls": 4, "seconds": 2.0},
        "rounds_top1": ["g", "g"] if r else ["x", "g"],
        "gold_tables": ["g"],
        "run": TABFACT_RUN,
    }


def test_tabfact_layout() -> None:
    rows = [
        fact("a", 1.0, True, 1.0),
        fact("b", 0.0, True, 0.0),
        fact("c", 1.0, False, 1.0),
        fact("d", 1.0, False, 0.0),
    ]
    s = summarize(rows)
    assert s["tabfact"] == {"acc": 0.75, "acc_sup": 0.5, "acc_ref": 1.0, "n_sup": 2, "n_ref": 2}
    assert s["recall"] == {"name": "r_all", "value": 0.5}
    assert s["top1_by_round"] == [0.5, 1.0]
    assert s["effort"]["mean"]["steps"] == 4.0 and s["effort"]["mean"]["usage.calls"] == 4.0
    md = to_markdown(s)
    assert "| Method | Config | Recall | Acc | Acc-Sup | Acc-Ref |" in md
    assert "| TableSeek | 10step-5s1-small | 0.500 | 0.750 | 0.500 | 1.000 |" in md
    assert "Recall is R@all." in md and "## Top-1 hit rate per round" in md


def test_groups_ds_and_eff() -> None:
    run = {
        "dataset": "tcrbench",
        "method": "seek",
        "config": "5step-5s1-small",
        "format": "mixed",
        "model": "",
    }
    rows = [
        {
            "id": "1",
            "status": "answered",
            "run": run,
            "metrics": {"f1": 0.5, "r_all": 1.0, "r_final": 1.0, "gr_all": 1.0, "gr_final": 1.0},
        },
        {
            "id": "2",
            "status": "insufficient",
            "error": "x",
            "run": run,
            "metrics": {"f1": 0.0, "r_all": 0.0, "r_final": 0.0, "gr_all": 1.0, "gr_final": 1.0},
        },
    ]
    s = summarize(rows)
    m = s["metrics"]
    assert m["ds_all"] == 0.5 and m["ds_final"] == 0.5 and m["eff"] == 0.5
    assert s["status"] == {"answered": 1, "insufficient": 1} and s["errors"] == 1
    md = to_markdown(s)
    assert "| TableSeek | 5step-5s1-small | mixed | 0.500 | 0.250 |" in md
    assert "| DS@all | 0.500 |" in md and "1 errors" in md


def test_baselines_report_r_at_1_and_nan_is_clean(tmp_path: Path) -> None:
    run = {
        "dataset": "wtq",
        "method": "dense",
        "config": "minilm top-1",
        "format": "csv",
        "model": "m",
    }
    rows = [
        {
            "id": "1",
            "status": "answered",
            "run": run,
            "metrics": {
                "em": 1.0,
                "r_all": 1.0,
                "r_final": 1.0,
                "r_at_1": 1.0,
                "gr_all": 0.0,
                "gr_final": 0.0,
            },
        },
        {
            "id": "2",
            "status": "failed",
            "run": run,
            "metrics": {
                "em": 0.0,
                "r_all": 0.0,
                "r_final": 0.0,
                "r_at_1": 0.0,
                "gr_all": 0.0,
                "gr_final": 0.0,
            },
        },
    ]
    s = summarize(rows)
    assert s["recall"] == {"name": "r_at_1", "value": 0.5} and s["metrics"]["ds_all"] == 0.0
    assert "Recall is R@1." in to_markdown(s)
    md, js = write_report(tmp_path / "x.jsonl", rows)
    assert md.name == "x.report.md" and js.name == "x.report.json"
    data = json.loads(js.read_text())
    assert data["metrics"]["em"] == 0.5
    free = [
        {"id": "1", "status": "answered", "run": run, "metrics": {"rouge_l": 0.4}},
        {"id": "2", "status": "answered", "run": run, "metrics": {}},
    ]
    s2 = summarize(free)
    assert s2["primary"] == "rouge_l" and "ROUGE-L" in to_markdown(s2)
    tabfact_sup_only = [fact("a", 1.0, True, 1.0)]
    only = summarize(tabfact_sup_only)
    assert math.isnan(only["tabfact"]["acc_ref"])
    assert "| – |" in to_markdown(only)
    _, js2 = write_report(tmp_path / "y.jsonl", tabfact_sup_only)
    assert json.loads(js2.read_text())["tabfact"]["acc_ref"] is None


def test_empty() -> None:
    with pytest.raises(ValueError, match="no records"):
        summarize([])


def test_accuracy_without_claims_has_no_supported_refuted_split() -> None:
    """ArcadeQA/BirdQA score `acc` on questions, not claims: no Acc-Sup/Acc-Ref columns."""
    from tablequest.eval.report import summarize, to_markdown

    records = [
        {"id": "q1", "status": "answered", "metrics": {"acc": 1.0}, "run": {"dataset": "arcadeqa"}},
        {"id": "q2", "status": "answered", "metrics": {"acc": 0.0}, "run": {"dataset": "arcadeqa"}},
    ]
    summary = summarize(records)
    assert "tabfact" not in summary and summary["metrics"]["acc"] == 0.5
    assert "Acc-Ref" not in to_markdown(summary)
    claims = [{**r, "supported": i == 0} for i, r in enumerate(records)]
    assert summarize(claims)["tabfact"]["acc_sup"] == 1.0
