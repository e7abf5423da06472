"""TableSeek reproduction configurations: every row runs something that exists, with options
the method accepts, on a dataset and format this project loads; each row's numbers sit side by
side in papers/tableseek.txt. Where each paper number sits (table, row, column) is checked in
CI against the data file of `tests/eval/test_paper_numbers.py`."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus.retrieval.retrievers import RETRIEVERS, RetrieverSettings
from tablequest.eval.corpora import parse_format
from tablequest.eval.datasets import DATASETS
from tablequest.eval.report import summarize
from tablequest.eval.reproduce import all_reproductions
from tablequest.eval.reproduce import tableseek as module
from tablequest.eval.reproduce.execute import metric_value
from tablequest.eval.reproduce.spec import Reproduction, Row
from tablequest.methods.registry import get_method
from tablequest.methods.run import resolve_options
from tablequest.methods.seek.config import SeekConfig

PAPER_TEXT = Path("/work/shared/docs/papers/tableseek.txt")
SOURCE = Path(module.__file__)

PENDING: set[tuple[str, str]] = set()
"""(configuration, row key) of rows marked ``# NEEDS:`` (none in TableSeek)."""
EFFORT_METRICS = {"steps"}
"""Cell metrics read from the summary's effort (`metric_value`), not from its metrics."""

RECORD_METRICS = {"f1", "acc", "acc_sup", "acc_ref", "r_all", "r_final", "r_at_1", "ds_all",
                  "ds_final", "eff"}  # fmt: skip
NAMES = [
    "tableseek-t2",
    "tableseek-t3",
    "tableseek-t4",
    "tableseek-ablation",
    "tableseek-formats",
    "tableseek-backbones",
    "tableseek-oracle",
    "tableseek-retrieval",
    "tableseek-refine",
    "tableseek-strategies",
    "tableseek-evidence",
    "tableseek-transposed",
]

ROWS = [(rep, row) for rep in module.TABLESEEK for row in rep.rows]
IDS = [f"{rep.name}:{row.key}" for rep, row in ROWS]


def paper_text() -> str:
    if not PAPER_TEXT.exists():
        pytest.skip(f"{PAPER_TEXT} is not on this machine")
    return PAPER_TEXT.read_text(encoding="utf-8")


def test_every_table_is_registered_in_paper_order() -> None:
    assert [rep.name for rep in module.TABLESEEK] == NAMES
    known = all_reproductions()
    assert all(known[name] is rep for name, rep in zip(NAMES, module.TABLESEEK, strict=True))
    assert {rep.paper for rep in module.TABLESEEK} == {"TableSeek"}


@pytest.mark.parametrize(("rep", "row"), ROWS, ids=IDS)
def test_row_runs_something_that_exists(rep: Reproduction, row: Row) -> None:
    if row.kind == "answer":
        options = resolve_options(get_method(row.method), options=row.options)
        assert get_method(row.method).make_options(dict(row.options)) == options
        assert set(row.options) <= set(type(options).model_fields)
    else:
        assert row.method in RETRIEVERS
        RetrieverSettings(**row.options)  # type: ignore[arg-type]
    assert row.dataset in DATASETS
    inspect.signature(DATASETS[row.dataset]).bind("ROOT", **row.load_options)
    parse_format(row.fmt)  # raises on an unknown format
    assert row.data_folder in {"tcrbench", "tabfact"}


@pytest.mark.parametrize(("rep", "row"), ROWS, ids=IDS)
def test_row_metrics_are_what_a_run_reports(rep: Reproduction, row: Row) -> None:
    for cell in row.cells:
        if row.kind == "retrieval":
            assert re.fullmatch(r"recall@\d+", cell.metric), cell.metric
        else:
            assert cell.metric in RECORD_METRICS | EFFORT_METRICS, cell.metric
        assert not cell.percent  # the paper prints fractions
        assert set(cell.paper) <= set(rep.models), (cell.column, set(cell.paper))


def test_every_answer_metric_is_read_from_a_run_summary() -> None:
    """`eval reproduce` reads each cell through `metric_value`: ds_*/eff/acc_sup/acc_ref are
    derived by `summarize`, steps comes from the effort section."""
    base = {"f1": 0.5, "r_all": 1.0, "gr_all": 1.0, "r_final": 0.0, "gr_final": 1.0,
            "r_at_1": 1.0}  # fmt: skip
    records: list[dict[str, Any]] = [
        {"metrics": {**base, "acc": 1.0}, "supported": True, "steps": 4},
        {"metrics": {**base, "acc": 0.0}, "supported": False, "steps": 2},
    ]
    summary = summarize(records)
    metrics = {c.metric for _, row in ROWS if row.kind == "answer" for c in row.cells}
    values = {m: metric_value(summary, m) for m in sorted(metrics)}
    assert [m for m, v in values.items() if v is None] == []
    assert values["steps"] == 3.0 and values["acc_sup"] == 1.0 and values["acc_ref"] == 0.0
    assert values["ds_final"] == 0.0 and values["eff"] == 0.5


def test_pending_rows_are_exactly_those_marked() -> None:
    marked = {(rep.name, row.key) for rep, row in ROWS if "NEEDS:" in row.note}
    assert marked == PENDING
    tags = re.findall(r"# NEEDS: ([\w-]+)", SOURCE.read_text(encoding="utf-8"))
    assert tags == []
    assert module.STEPS_METRIC in EFFORT_METRICS


def test_recall_follows_the_papers_convention() -> None:
    """Recall = R@1 for single-pass baselines, R@all for TableSeek and oracle QA (Table 2)."""
    for rep, row in ROWS:
        recall = [c.metric for c in row.cells if c.column in ("Recall", "Recall_T")]
        if recall:
            expected = "r_at_1" if row.method in ("dense", "rerank") else "r_all"
            assert recall == [expected], (rep.name, row.key)


def test_main_tables_use_the_papers_default_configurations() -> None:
    """TableSeek (5-step / 10-step) = 5step-5s1-small / 10step-5s1-small (App. C, Table 7);
    rerank (top-k) reranks the dense top-k and passes one table to QA (Table 10)."""
    t2 = {row.key: row for row in all_reproductions()["tableseek-t2"].rows}
    for key, name in (("seek5", "5step-5s1-small"), ("seek10", "10step-5s1-small")):
        options = resolve_options(get_method("seek"), options=t2[key].options)
        assert options == SeekConfig.from_config(name)
    for key, pool in (("rerank3", 3), ("rerank5", 5)):
        options = resolve_options(get_method("rerank"), options=t2[key].options)
        assert (options.rerank_pool, options.top_k) == (pool, 1)  # type: ignore[attr-defined]
        assert options.rerank_model == module.R4B  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["tableseek-ablation", "tableseek-refine"])
def test_ablation_rows_switch_what_their_label_says(name: str) -> None:
    for row in all_reproductions()[name].rows:
        label = resolve_options(get_method("seek"), options=row.options).label()
        variant = row.label.split(" ", 1)[1]
        if variant.startswith("w/o"):
            assert variant in label, (row.key, label)
        elif variant.startswith("match-only"):
            assert label.endswith(variant), (row.key, label)
        else:
            assert "w/o" not in label and "match-only" not in label


def test_strategy_and_evidence_rows_name_their_configuration() -> None:
    reps = all_reproductions()
    for row in reps["tableseek-strategies"].rows:  # labels: 5step-5s1, 10step-r5, …
        options = resolve_options(get_method("seek"), options=row.options)
        assert options == SeekConfig.from_config(row.label + "-small")
    for row in reps["tableseek-evidence"].rows:  # labels: 5-step small, 10-step full, …
        options = resolve_options(get_method("seek"), options=row.options)
        steps, size = row.label.split("-step ")
        assert options == SeekConfig.from_config(f"{steps}step-5s1-{size}")


def _identity(row: Row) -> tuple[object, ...]:
    options, loading = tuple(sorted(row.options.items())), tuple(sorted(row.load_options.items()))
    return (row.kind, row.dataset, row.data_folder, row.method, options, row.fmt, loading,
            row.siblings)  # fmt: skip


def test_one_run_one_key_across_configurations() -> None:
    """Rows share a key exactly when they are the same run (`eval reproduce` names run files
    by key, so configurations sharing an --out folder reuse runs and never collide)."""
    by_key: dict[str, set[tuple[object, ...]]] = {}
    by_run: dict[tuple[object, ...], set[str]] = {}
    for _, row in ROWS:
        by_key.setdefault(row.key, set()).add(_identity(row))
        by_run.setdefault(_identity(row), set()).add(row.key)
    assert {k: v for k, v in by_key.items() if len(v) > 1} == {}
    assert {k: v for k, v in by_run.items() if len(v) > 1} == {}
    assert len(by_key) < len(ROWS)  # Table 2's runs serve Tables 4, 6, 25, 35, 37, 40, 43


SIDE_BY_SIDE = [name for name in NAMES if name != "tableseek-t4"]
"""Table 4 prints its metrics as rows, so its numbers are checked one by one only."""
SMALL = ("Qwen3-4B", "LLaMA")


@pytest.mark.parametrize("name", SIDE_BY_SIDE)
def test_each_rows_numbers_sit_side_by_side_in_the_paper(name: str) -> None:
    """Catches swapped or misplaced numbers: a row's values of one backbone, in column order,
    are one tab-separated run of a line of the paper's table."""
    text = paper_text()
    rep = all_reproductions()[name]
    # Table 24 interleaves the backbones' F1 columns: there only Qwen3-30B's run is whole.
    every = name in ("tableseek-t3", "tableseek-oracle", "tableseek-backbones")
    models = rep.models if every else [m for m in rep.models if m not in SMALL]
    for row in rep.rows:
        runs = [[c.paper[m] for c in row.cells if m in c.paper] for m in models]
        runs = [values for values in runs if values]
        assert runs, row.key
        for values in runs:
            run = "\t".join(f"{v:.3f}" for v in values if v is not None)
            assert len(values) == len(row.cells) and run in text, (row.key, run)


def test_format_rows_cover_every_method_and_format() -> None:
    rows = all_reproductions()["tableseek-formats"].rows
    pairs = {(row.method, row.fmt) for row in rows}
    for method in ("dense", "rerank", "seek"):
        assert {fmt for m, fmt in pairs if m == method} == set(module.FORMATS)
    transposed = all_reproductions()["tableseek-transposed"].rows
    assert {parse_format(row.fmt) for row in transposed} == {(True, "mixed")}
