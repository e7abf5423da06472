"""TableRAG's reproduction configurations: every row runs here, every number is the paper's.

Rows are checked against what exists (registered method, options the method accepts,
dataset loader and its options, corpus format, metric names the runner records), and every
number typed from the paper is found, in the paper's order, in the text of its table.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablequest.eval.corpora import parse_format
from tablequest.eval.datasets import DATASETS
from tablequest.eval.reproduce import all_reproductions, tablerag
from tablequest.eval.reproduce.spec import Reproduction, Row
from tablequest.methods.rag import RagConfig
from tablequest.methods.registry import get_method
from tablequest.methods.run import resolve_options

PAPER = Path("/work/shared/docs/papers/tablerag.txt")
SOURCE = Path(tablerag.__file__)
NAMES = (
    "tablerag-t2",
    "tablerag-t4",
    "tablerag-t5",
    "tablerag-t6",
    "tablerag-fig4",
    "tablerag-fig5",
    "tablerag-fig6",
    "tablerag-fig7",
)
EFFORT_METRICS = {"usage.prompt_tokens"}
"""Cells read from the run's effort summary (mean per question), not from answer metrics."""
METRICS = {"acc", "em"}
REGIONS = {
    "tablerag-t2": ("Table 2: Performance comparison", "Table 3: Evaluation"),
    "tablerag-t4": ("Table 4: Comparison", "Table 5: Performance"),
    "tablerag-t5": ("Table 5: Performance comparison", "4.6 Scalability"),
    "tablerag-t6": ("Table 6: Ablation", "a hybrid approach"),
    "tablerag-fig4": ("4.6 Scalability", "4.7 Comparison"),
}
"""Where each table's numbers are printed in the paper text (start, end)."""


JOIN = r"[\s%a-z]{1,8}"
"""Between two numbers of a printed row: blanks, a "%" or a short word ("83.1 to 68.4")."""


def paper_text() -> str:
    """The paper's text (the shared docs); the test skips where they are not on the machine."""
    if not PAPER.exists():
        pytest.skip(f"{PAPER} is not on this machine")
    return PAPER.read_text(encoding="utf-8")


def reps() -> list[Reproduction]:
    known = all_reproductions()
    return [known[name] for name in NAMES]


def rows() -> Iterator[tuple[str, Row]]:
    for rep in reps():
        for row in rep.rows:
            yield f"{rep.name}:{row.key}", row


ROWS = dict(rows())


def number_pattern(value: float) -> str:
    """A printed number: `value` as written, trailing zeros allowed (46.1 matches "46.10")."""
    whole, _, frac = repr(float(value)).partition(".")
    return rf"(?<![\d.]){re.escape(whole)}\.{frac.rstrip('0') or '0'}0*(?!\d)"


def printed_sequences(rep: Reproduction) -> list[list[float]]:
    """The numbers each paper row prints, in order: per label, model by model (the paper's
    column groups), each model's values over the label's runs; each Missing's values."""
    out: list[list[float]] = []
    labels = list(dict.fromkeys(row.label for row in rep.rows))
    for label in labels:
        cells = [cell for row in rep.rows if row.label == label for cell in row.cells]
        values = [cell.paper.get(m) for m in rep.models for cell in cells]
        out.append([v for v in values if v is not None])
    out += [[v for v in m.paper.values() if v is not None] for m in rep.missing]
    return [seq for seq in out if seq]


def test_every_configuration_is_registered() -> None:
    known = all_reproductions()
    for rep in tablerag.REPRODUCTIONS_TABLERAG:
        assert known[rep.name] is rep
        assert rep.paper == "tablerag"
        assert rep.models, rep.name
    assert {r.name for r in tablerag.REPRODUCTIONS_TABLERAG} == set(NAMES)


@pytest.mark.parametrize("ident", sorted(ROWS))
def test_row_runs_with_what_exists(ident: str) -> None:
    row = ROWS[ident]
    spec = get_method(row.method)
    options = resolve_options(spec, options=row.options, config_paths=[])
    assert isinstance(options, RagConfig)
    assert options.sc == tablerag.SC  # the paper's 10 majority-voted runs
    assert row.dataset in DATASETS
    inspect.signature(DATASETS[row.dataset]).bind(Path("root"), **row.load_options)
    parse_format(row.fmt)
    assert row.kind == "answer"
    for cell in row.cells:
        assert cell.metric in METRICS or cell.metric in EFFORT_METRICS, cell.metric


def test_effort_metrics_are_read_from_the_effort_summary() -> None:
    from tablequest.eval.reproduce.execute import metric_value

    assert "NEEDS:" not in SOURCE.read_text(encoding="utf-8")
    used = {cell.metric for row in ROWS.values() for cell in row.cells}
    assert used >= EFFORT_METRICS
    summary = {"effort": {"n": 1, "mean": {m: 7.0 for m in EFFORT_METRICS}, "total": {}}}
    assert all(metric_value(summary, m) == 7.0 for m in EFFORT_METRICS)


@pytest.mark.parametrize("name", ["tablerag-t2", "tablerag-t5", "tablerag-t6", "tablerag-fig4"])
def test_paper_protocol_fixed(name: str) -> None:
    """B = 10,000 and K = 5 for TableRAG, K = 30 for the row baselines (§4.3)."""
    rep = all_reproductions()[name]
    for row in rep.rows:
        opts = resolve_options(get_method("rag"), options=row.options, config_paths=[])
        assert isinstance(opts, RagConfig)
        if opts.baseline is None or opts.baseline == "rowcol":
            assert opts.budget == 10_000, row.key
        if opts.baseline is None:
            assert opts.top_k == 5, row.key
        if opts.baseline in ("rand-rows", "rowcol"):
            assert opts.baseline_k == 30, row.key


def test_ablations_change_only_their_knob() -> None:
    known = all_reproductions()
    t6 = {r.key: r.options for r in known["tablerag-t6"].rows}
    assert t6["schema-all.cell-none.arcadeqa"]["schema_mode"] == "all"
    assert t6["schema-all.cell-none.birdqa"]["cell_mode"] == "none"
    t5 = {r.key: r.options for r in known["tablerag-t5"].rows}
    assert t5["bm25.arcadeqa"]["encoder"] == "bm25"
    assert t5["hybrid.birdqa"]["retrieval"] == "hybrid"
    fig7 = {r.key: r.options for r in known["tablerag-fig7"].rows}
    assert fig7["no-expansion.arcadeqa"]["expansion"] is False
    ks = [r.options["top_k"] for r in known["tablerag-fig5"].rows if "top_k" in r.options]
    assert sorted(set(ks)) == [1, 3, 5, 10]
    budgets = {r.options["budget"] for r in known["tablerag-fig6"].rows}
    assert budgets == set(tablerag.BUDGETS)
    sizes = {r.load_options["split"] for r in known["tablerag-fig4"].rows}
    assert sizes == set(tablerag.SYNTH_SIZES)


@pytest.mark.parametrize("name", sorted(REGIONS))
def test_paper_numbers_are_printed_in_order(name: str) -> None:
    text = paper_text()
    start, end = REGIONS[name]
    region = text[text.index(start) : text.index(end, text.index(start))]
    sequences = printed_sequences(all_reproductions()[name])
    assert sequences, name
    for seq in sequences:
        pattern = JOIN.join(number_pattern(v) for v in seq)
        assert re.search(pattern, region), f"{name}: {seq} not printed in this order"


def test_figures_without_printed_values_carry_none() -> None:
    for name in ("tablerag-fig5", "tablerag-fig6", "tablerag-fig7"):
        rep = all_reproductions()[name]
        values = [v for row in rep.rows for cell in row.cells for v in cell.paper.values()]
        assert values and all(v is None for v in values), name


def test_number_pattern_matches_printed_forms() -> None:
    assert re.search(number_pattern(46.1), "x 46.10 y")
    assert re.search(number_pattern(100.0), "| 100.00 |")
    assert not re.search(number_pattern(4.6), "14.6 and 4.61")
