"""DTR's reproduction configurations: rows run with what exists, numbers are the paper's.

Every row resolves its options (the ablation switches of ``research``), loader and format;
LLM-EVAL and call counts are added by the executor after a run (`JUDGED_OR_EFFORT`); every
per-family metric is one the run summary answers; every number is printed, in order, in its
table of papers/dtr.txt.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tablequest.eval.corpora import parse_format
from tablequest.eval.datasets import DATASETS
from tablequest.eval.metrics.realhitbench import FAMILIES
from tablequest.eval.reproduce import all_reproductions, dtr
from tablequest.eval.reproduce.execute import metric_value
from tablequest.eval.reproduce.spec import Reproduction, Row
from tablequest.methods.registry import get_method
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.run import resolve_options

PAPER = Path("/work/shared/docs/papers/dtr.txt")
SOURCE = Path(dtr.__file__)
NAMES = ("dtr-t2", "dtr-t3", "dtr-t4")
JUDGED_OR_EFFORT = {"llm_eval", "usage.calls"}
"""Metrics the executor adds after a run: LLM-EVAL from the judge, calls from the effort."""
RECORDED = {"em", "f1", "rouge_l", "pass_at_1", "ecr"}
"""What `eval.runner.realhitbench_metrics` records per question."""
REGIONS = {
    "dtr-t2": ("Table 2. Comparisons over the RealHitBench", "Beyond quality"),
    "dtr-t3": ("Table 3. Architecture ablation", "Table 4. Exploration"),
    "dtr-t4": ("Table 4. Exploration", "### 4.2.2."),
}
JOIN = r"[\s%a-z→]{1,8}"
GROUP = re.compile(r"^(?P<name>[^\[\]]+)\[family=(?P<family>[^\]]+)\]$")

ROWS: dict[str, Row] = {
    f"{rep.name}:{row.key}": row for rep in dtr.REPRODUCTIONS_DTR for row in rep.rows
}


def paper_text() -> str:
    """The paper's text (the shared docs); the test skips where they are not on the machine."""
    if not PAPER.exists():
        pytest.skip(f"{PAPER} is not on this machine")
    return PAPER.read_text(encoding="utf-8")


def number_pattern(value: float) -> str:
    whole, _, frac = repr(float(value)).partition(".")
    return rf"(?<![\d.]){re.escape(whole)}\.{frac.rstrip('0') or '0'}0*(?!\d)"


def printed_sequences(rep: Reproduction) -> list[list[float]]:
    """Per row and paper model (the paper prints one row per backbone), the row's values
    over its cells; per Missing, its values grouped by the model after " · "."""
    out: list[list[float]] = []
    for row in rep.rows:
        models = list(dict.fromkeys(m for cell in row.cells for m in cell.paper))
        out += [[v for c in row.cells if (v := c.paper.get(m)) is not None] for m in models]
    for missing in rep.missing:
        groups: dict[str, list[float]] = {}
        for column, value in missing.paper.items():
            if value is not None:
                groups.setdefault(column.partition(" · ")[2], []).append(value)
        out += list(groups.values())
    return [seq for seq in out if seq]


def test_every_configuration_is_registered() -> None:
    known = all_reproductions()
    assert {r.name for r in dtr.REPRODUCTIONS_DTR} == set(NAMES)
    for rep in dtr.REPRODUCTIONS_DTR:
        assert known[rep.name] is rep
        assert rep.paper == "dtr" and rep.models


@pytest.mark.parametrize("ident", sorted(ROWS))
def test_row_runs_with_what_exists(ident: str) -> None:
    row = ROWS[ident]
    spec = get_method(row.method)
    assert row.dataset in DATASETS
    inspect.signature(DATASETS[row.dataset]).bind(Path("root"), **row.load_options)
    parse_format(row.fmt)
    resolve_options(spec, options=row.options, config_paths=[])


def test_no_row_waits_for_a_missing_piece() -> None:
    assert "NEEDS:" not in SOURCE.read_text(encoding="utf-8")


@pytest.mark.parametrize("ident", sorted(ROWS))
def test_cells_name_metrics_the_summary_answers(ident: str) -> None:
    """Each family metric is read from the run's ``breakdown["family"]`` (the runner's key
    for RealHiTBench question types) by `metric_value`."""
    for cell in ROWS[ident].cells:
        group = GROUP.match(cell.metric)
        name = group["name"] if group else cell.metric
        assert name in RECORDED or name in JUDGED_OR_EFFORT, cell.metric
        if group is None:
            continue
        assert group["family"] in FAMILIES
        summary: dict[str, Any] = {
            "breakdown": {"family": {group["family"]: {"metrics": {name: 0.25}}}}
        }
        assert metric_value(summary, cell.metric) == 0.25


def test_component_ablation_adds_one_component_per_row() -> None:
    """Table 3's ladder: Meta, + QDO, + Expectation, + Abstracted experience (full)."""
    spec = get_method("research")
    flags = ("meta_graph", "operations", "expectation", "abstraction")
    ladder = {
        key: tuple(
            getattr(
                resolve_options(spec, options=ROWS[f"dtr-t3:{key}"].options, config_paths=[]), f
            )
            for f in flags
        )
        for key in ("meta", "qdo", "expectation", "full")
    }
    assert ladder == {
        "meta": (True, False, False, False),
        "qdo": (True, True, False, False),
        "expectation": (True, True, True, False),
        "full": (True, True, True, True),
    }
    prompting = {}
    for row in all_reproductions()["dtr-t4"].rows:
        options = resolve_options(spec, options=row.options, config_paths=[])
        assert isinstance(options, ResearchOptions)
        prompting[row.key] = options.prompting
    assert prompting == {
        "no-think": "direct", "think-hint": "hint", "think-code": "think_code",
        "reflection": "reflection",
    }  # fmt: skip


def test_structure_comprehending_is_not_scored_but_shown() -> None:
    """The SC cells carry the paper's numbers; no run can fill them (UNSCORED)."""
    rep = all_reproductions()["dtr-t2"]
    dtr_row = next(r for r in rep.rows if r.key == "dtr")
    sc = [c for c in dtr_row.cells if c.column.startswith("Structure Comprehending")]
    assert [c.paper[dtr.DSV3] for c in sc] == [56.57, 77.95]
    assert any("not scored" in note for note in rep.notes)


@pytest.mark.parametrize("name", NAMES)
def test_paper_numbers_are_printed_in_order(name: str) -> None:
    text = paper_text()
    start, end = REGIONS[name]
    begin = text.index(start)
    region = text[begin : text.index(end, begin)]
    sequences = printed_sequences(all_reproductions()[name])
    assert sequences, name
    for seq in sequences:
        pattern = JOIN.join(number_pattern(v) for v in seq)
        assert re.search(pattern, region), f"{name}: {seq} not printed in this order"


def test_pure_llm_start_of_the_ablation_is_in_the_text() -> None:
    text = paper_text()
    assert re.search(r"33\.5% → 37\.5%", text)
    rep = all_reproductions()["dtr-t3"]
    assert rep.missing[0].paper == {"Acc.": 33.5}


def test_ablation_rows_measure_realhitbench_without_paper_numbers() -> None:
    for name in ("dtr-t3", "dtr-t4"):
        rep = all_reproductions()[name]
        assert all(r.dataset == "realhitbench" for r in rep.rows)
        assert all(not c.paper for r in rep.rows for c in r.cells), name
        assert len(rep.missing) >= len(rep.rows), name
