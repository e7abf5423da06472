"""TabScope reproduction configurations: rows run registered variants on WikiTQ with options
the method accepts, pending rows are exactly those marked, and rows' numbers sit side by side
in papers/tabscope.txt (its table text is escaped, ``81\\.1``). Where each paper number sits
(table, row, column) is checked in CI against the data file of
`tests/eval/test_paper_numbers.py`."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tablequest.eval.corpora import parse_format
from tablequest.eval.datasets import DATASETS
from tablequest.eval.report import summarize
from tablequest.eval.reproduce import all_reproductions
from tablequest.eval.reproduce import tabscope as module
from tablequest.eval.reproduce.execute import metric_value
from tablequest.eval.reproduce.spec import Reproduction, Row
from tablequest.eval.subtab import score_runs
from tablequest.methods.registry import get_method
from tablequest.methods.run import resolve_options
from tablequest.methods.scope.options import ScopeOptions
from tablequest.methods.scope.policy import QUESTION_TYPES

PAPER_TEXT = Path("/work/shared/docs/papers/tabscope.txt")
SOURCE = Path(module.__file__)

SUBTAB = {("tabscope-t3", "decomposition-only")}
"""Rows whose metrics come from `eval.subtab.score_runs` (`Row.subtab`)."""

NAMES = ["tabscope-t2", "tabscope-t3", "tabscope-types", "tabscope-t5"]
ROWS = [(rep, row) for rep in module.TABSCOPE for row in rep.rows]
IDS = [f"{rep.name}:{row.key}" for rep, row in ROWS]


def paper_text() -> str:
    """The paper with its escapes removed (``81\\.1`` → ``81.1``)."""
    if not PAPER_TEXT.exists():
        pytest.skip(f"{PAPER_TEXT} is not on this machine")
    return PAPER_TEXT.read_text(encoding="utf-8").replace("\\", "")


def test_every_table_is_registered() -> None:
    assert [rep.name for rep in module.TABSCOPE] == NAMES
    known = all_reproductions()
    assert all(known[name] is rep for name, rep in zip(NAMES, module.TABSCOPE, strict=True))


@pytest.mark.parametrize(("rep", "row"), ROWS, ids=IDS)
def test_row_runs_something_that_exists(rep: Reproduction, row: Row) -> None:
    assert row.kind == "answer"
    options = resolve_options(get_method(row.method), options=row.options)
    assert get_method(row.method).make_options(dict(row.options)) == options
    assert set(row.options) <= set(type(options).model_fields)
    assert row.dataset == "wtq" and row.dataset in DATASETS
    inspect.signature(DATASETS[row.dataset]).bind("ROOT", **row.load_options)
    parse_format(row.fmt)  # raises on an unknown format
    for cell in row.cells:
        assert cell.percent and set(cell.paper) <= set(rep.models)
        if (rep.name, row.key) not in SUBTAB:  # WikiTQ: the official evaluator's EM
            typed = re.fullmatch(r"em\[question_type=(\w+)\]", cell.metric)
            assert cell.metric == "em" or (typed and typed[1] in QUESTION_TYPES), cell.metric


def test_subtab_rows_are_exactly_those_scored_on_sub_tables() -> None:
    assert {(rep.name, row.key) for rep, row in ROWS if row.subtab} == SUBTAB
    assert "NEEDS:" not in SOURCE.read_text(encoding="utf-8")


def test_subtab_metrics_are_what_score_runs_reports() -> None:
    """The sub-table row's metrics are those `score_runs` reports."""
    record = {"id": "q1", "subtable": {"rows": [0, 1], "col_ids": [0]}}
    reference = {"q1": {"rows": [0], "col_ids": [0]}}
    scores = score_runs([record], reference)["scores"]
    assert scores["row_f1"] == pytest.approx(2 / 3) and scores["col_em"] == 1.0
    for rep, row in ROWS:
        if (rep.name, row.key) in SUBTAB:
            assert {cell.metric for cell in row.cells} <= set(scores)


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        ("tabscope-t2", "decomposition-only", {"scope": "local", "classify": False}),
        ("tabscope-t2", "cot", {"scope": "full", "classify": False}),
        ("tabscope-t2", "tabscope", {"scope": "policy", "aggregate": True, "refine": True}),
        ("tabscope-t5", "no-aggregate", {"scope": "policy", "aggregate": False}),
        ("tabscope-t5", "no-refine", {"scope": "policy", "refine": False}),
        ("tabscope-t5", "no-op-aware", {"scope": "policy", "op_aware": False}),
        ("tabscope-t5", "decomposition-only", {"scope": "local", "op_aware": True}),
        ("tabscope-types", "decomposition-only-typed", {"scope": "local", "classify": True}),
        ("tabscope-types", "cot-typed", {"scope": "full", "classify": True}),
    ],
)
def test_variants_switch_what_the_paper_names(
    name: str, key: str, expected: dict[str, object]
) -> None:
    row = next(r for r in all_reproductions()[name].rows if r.key == key)
    options = resolve_options(get_method("scope"), options=row.options)
    assert isinstance(options, ScopeOptions)
    assert {k: getattr(options, k) for k in expected} == expected


def test_one_run_one_key_across_configurations() -> None:
    """Rows share a key exactly when they are the same run (run files are named by key)."""
    runs: dict[str, set[tuple[object, ...]]] = {}
    for _, row in ROWS:
        run = (row.method, tuple(sorted(row.options.items())), row.fmt, row.dataset)
        runs.setdefault(row.key, set()).add(run)
    assert all(len(v) == 1 for v in runs.values())
    assert len({next(iter(v)) for v in runs.values()}) == len(runs)
    assert {"tabscope", "decomposition-only"} <= set(runs)


def _pair(gpt: float | None, llama: float | None) -> str:
    return "".join("–" if v is None else f"{v:.1f}" for v in (gpt, llama))


def test_table2_pairs_sit_side_by_side() -> None:
    """GPT-5-mini and LLaMA-3.3-70B numbers of one method and dataset are adjacent."""
    text = paper_text()
    rep = all_reproductions()["tabscope-t2"]
    pairs = [_pair(c.paper[module.GPT], c.paper[module.LLAMA]) for r in rep.rows for c in r.cells]
    for missing in rep.missing:
        for dataset in ("WikiTQ", "SLQA"):
            gpt = missing.paper.get(f"{dataset} · {module.GPT}")
            llama = missing.paper.get(f"{dataset} · {module.LLAMA}")
            if f"{dataset} · {module.LLAMA}" in missing.paper:
                pairs.append(_pair(gpt, llama))
    assert len(pairs) == 2 * len(rep.rows) + 2 * 5  # rows (WikiTQ, SLQA), 5 baselines (both)
    assert [p for p in pairs if p not in text] == []


def test_table3_and_table5_rows_match_the_papers_lines() -> None:
    text = paper_text()
    t3 = all_reproductions()["tabscope-t3"]
    lines = [[c.paper[module.NOT_STATED] for c in r.cells] for r in t3.rows]
    lines += [list(m.paper.values()) for m in t3.missing]
    assert all("".join(f"{v:.2f}" for v in line) in text for line in lines if None not in line)
    for row in all_reproductions()["tabscope-t5"].rows:
        value = row.cells[0].paper[module.LLAMA]
        label = "TabScope" if row.key == "tabscope" else row.label
        assert f"{label}{value:.1f}" in text, row.key


def test_type_rows_match_table7_and_cover_every_type() -> None:
    """Each type's localized and full-table accuracy sit side by side in Table 7."""
    text = paper_text()
    local, full = all_reproductions()["tabscope-types"].rows
    types = [re.findall(r"=(\w+)\]", c.metric)[0] for c in local.cells]
    assert (
        types == list(QUESTION_TYPES) == [re.findall(r"=(\w+)\]", c.metric)[0] for c in full.cells]
    )
    for a, b in zip(local.cells, full.cells, strict=True):
        pair = f"{a.column}{a.paper[module.NOT_STATED]:.2f}%{b.paper[module.NOT_STATED]:.2f}%"
        assert pair in text, pair


def test_typed_metrics_are_read_from_the_runs_breakdown() -> None:
    records: list[dict[str, Any]] = [
        {"metrics": {"em": 1.0}, "breakdown": {"question_type": "lookup"}},
        {"metrics": {"em": 0.0}, "breakdown": {"question_type": "compare"}},
    ]
    summary = summarize(records)
    local = all_reproductions()["tabscope-types"].rows[0]
    values = {c.column: metric_value(summary, c.metric) for c in local.cells}
    assert values["Lookup"] == 1.0 and values["Compare"] == 0.0
    assert values["Count-Diff"] is None  # no such question in the run
