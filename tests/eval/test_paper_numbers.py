"""The papers' numbers in `eval reproduce` sit where the papers print them (issue 41, 4b).

`tests/eval/paper_numbers.json` holds the cells of the TableSeek and TabScope papers' tables
that the configurations use, by (table, row, column), with the sha256 of the text they were
read from. In CI (no paper texts) every number of every configuration is checked against the
cell at its place — the row and column its meaning names — so a number moved to another row,
column, backbone or format fails. With the papers present the data file is re-derived from
them. Regenerate: ``python tests/eval/paper_numbers.py``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from tests.eval.paper_numbers import (
    DATA,
    PAPER_OF,
    PAPERS,
    SOURCES,
    cells_of,
    code_numbers,
    derive,
    load,
    numbers,
    reproductions,
    sha256,
)

from tablequest.eval.reproduce import all_reproductions
from tablequest.eval.reproduce.spec import Reproduction

REPS = [rep for paper in SOURCES for rep in reproductions(paper)]


def misplaced(rep: Reproduction) -> list[str]:
    """The numbers of `rep` that differ from the paper's cell at their place."""
    cells = cells_of(load()[PAPER_OF[rep.paper]])
    wrong = []
    for where, value in numbers(rep):
        printed = cells.get(where)
        if printed is None:
            wrong.append(f"{where}: no such cell in the paper's data")
        elif value is None:
            if printed not in ("-", "–"):
                wrong.append(f"{where}: the paper prints {printed}, the code has none")
        elif printed in ("-", "–") or not math.isclose(float(printed.rstrip("%")), value):
            wrong.append(f"{where}: the paper prints {printed}, the code has {value}")
    return wrong


@pytest.mark.parametrize("rep", REPS, ids=[rep.name for rep in REPS])
def test_every_paper_number_sits_where_the_paper_prints_it(rep: Reproduction) -> None:
    assert list(numbers(rep)), rep.name
    assert misplaced(rep) == []


def test_swapped_rows_or_backbones_are_caught() -> None:
    """What the old "appears somewhere in the paper" check let through."""
    t2 = next(rep for rep in REPS if rep.name == "tableseek-t2")
    seek5, seek10 = t2.rows[3], t2.rows[4]
    swapped = replace(t2, rows=(*t2.rows[:3], replace(seek5, cells=seek10.cells),
                                replace(seek10, cells=seek5.cells)))  # fmt: skip
    assert len(misplaced(swapped)) == 2 * 2 * 3  # 2 rows x 2 cells x 3 backbones
    f1 = seek5.cells[1]
    models = replace(f1, paper={**f1.paper, "Qwen3-30B": f1.paper["Qwen3-4B"],
                                "Qwen3-4B": f1.paper["Qwen3-30B"]})  # fmt: skip
    moved = replace(t2, rows=(*t2.rows[:3], replace(seek5, cells=(seek5.cells[0], models)),
                              seek10))  # fmt: skip
    assert len(misplaced(moved)) == 2
    t5 = next(rep for rep in REPS if rep.name == "tabscope-t5")
    flipped = replace(t5, rows=(t5.rows[1], t5.rows[0], *t5.rows[2:]))
    assert misplaced(flipped) == []  # rows are found by what they are, not where they stand
    relabelled = replace(t5, rows=(replace(t5.rows[0], label="w/o scope selection"),
                                   *t5.rows[1:]))  # fmt: skip
    assert len(misplaced(relabelled)) == 1


@pytest.mark.parametrize("paper", list(SOURCES))
def test_the_data_holds_the_numbers_the_code_prints(paper: str) -> None:
    names = {rep.name for rep in reproductions(paper)}
    assert names == {name for name in all_reproductions() if name.startswith(f"{paper}-")}
    entry = load()[paper]
    assert entry["source"] == SOURCES[paper] and len(entry["sha256"]) == 64
    assert set(cells_of(entry)) == set(code_numbers(paper))  # nothing stale, nothing missing


@pytest.mark.parametrize("paper", list(SOURCES))
def test_the_data_is_read_from_the_papers(paper: str) -> None:
    """Re-derives the data file from the paper text (skipped where the papers are absent)."""
    path: Path = PAPERS / SOURCES[paper]
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    text = path.read_text(encoding="utf-8")
    entry = load()[paper]
    assert entry["sha256"] == sha256(text), f"{path} changed: regenerate {DATA.name}"
    assert derive(paper, text, set(cells_of(entry))) == entry
