"""What `tablequest eval reproduce NAME` runs: one named configuration per main table of a paper.

A `Reproduction` mirrors one table of a paper: its rows (`Row`: one method with fixed options
on one benchmark, i.e. one evaluation run) in the paper's order, each with the cells of that
row (`Cell`: a paper column, the metric that fills it, and the paper's numbers, by the paper's
backbone model), and the rows this project does not implement (`Missing`, with why). The
report lays the measured numbers out beside the paper's (`tablequest.eval.reproduce.report`).

Numbers are kept as the paper prints them (percentages, 0–100); measured metrics (0–1) are
shown ×100 where `Cell.percent` is true. A paper number that is not printed (a dash) is None.

Choices (ours):
- One run per row: the model is whatever `--llm-url`/`--model` serve; a paper column for
  another backbone still shows the paper's value for each of its backbones beside ours, so a
  user running Qwen3-8B on vLLM compares with the paper's Qwen3-8B numbers.
- Configurations register in `REPRODUCTIONS` by name (``tableseek-t2``, ``dtr-t3``, …) from
  the per-paper modules in this package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tablequest.errors import BadValue

__all__ = [
    "REPRODUCTIONS",
    "Cell",
    "Missing",
    "Reproduction",
    "Row",
    "RowKind",
    "register",
]

RowKind = Literal["answer", "retrieval"]
"""answer: a registered method answers the questions (`eval run`); retrieval: an LLM-free
ranking is scored by R@k (`eval retrieval`)."""

_KEY = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class Cell:
    """One cell of a paper's table that a row fills.

    `metric` names a value of the run's summary: a record metric (``em``, ``f1``, ``acc``,
    ``rouge_l``, ``r_all``…), ``acc_sup``/``acc_ref`` (TabFact), ``recall@K`` for retrieval
    rows, or ``llm_eval``/``win_rate`` once judged. `paper` maps the paper's backbone model
    name to its printed number (None where the paper prints none).
    """

    column: str
    metric: str
    paper: Mapping[str, float | None] = field(default_factory=dict)
    percent: bool = True


@dataclass(frozen=True)
class Row:
    """One row of a paper's table: one evaluation run and the cells it fills.

    `dataset` is a loader name (`tablequest.eval.datasets.DATASETS`), read from the folder
    `folder` (default: the dataset name) under the data root, with `load_options` (e.g.
    ``{"split": "small_test"}``). `method` is a registered method (answer rows) or retriever
    (retrieval rows); `options` are its ``-o`` options; `fmt` the corpus format. `subtab`:
    score the sub-tables the run's method chose against silver references (TabScope Table 3:
    ``cell_f1``, ``row_f1``, ``col_f1``, ``cell_em``, ``row_em``, ``col_em``).
    """

    key: str
    label: str
    dataset: str
    method: str
    cells: tuple[Cell, ...]
    options: Mapping[str, object] = field(default_factory=dict)
    kind: RowKind = "answer"
    fmt: str = "csv"
    folder: str | None = None
    load_options: Mapping[str, object] = field(default_factory=dict)
    siblings: int = 0
    subtab: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"row key {self.key!r}: use lower-case letters, digits, _ . -")
        if not self.cells:
            raise ValueError(f"row {self.key!r} fills no cell")

    @property
    def data_folder(self) -> str:
        return self.folder or self.dataset


@dataclass(frozen=True)
class Missing:
    """A row of the paper's table this project does not run, and why.

    `paper` maps a column (optionally ``"column · model"``) to the paper's number.
    """

    label: str
    why: str
    paper: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    """One named configuration: a paper's table, its rows, and the rows not implemented."""

    name: str
    paper: str
    table: str
    title: str
    rows: tuple[Row, ...]
    missing: tuple[Missing, ...] = ()
    models: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        keys = [r.key for r in self.rows]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"{self.name}: duplicate row keys {dupes}")

    @property
    def columns(self) -> list[str]:
        """The paper's columns in first-seen order over the rows."""
        seen: dict[str, None] = {}
        for row in self.rows:
            for cell in row.cells:
                seen.setdefault(cell.column, None)
        return list(seen)

    def select(self, keys: list[str] | None) -> list[Row]:
        """The rows named by `keys` (all when None).

        Raises:
            BadValue: a key names no row (the message lists the known keys).
        """
        if not keys:
            return list(self.rows)
        known = {r.key: r for r in self.rows}
        unknown = [k for k in keys if k not in known]
        if unknown:
            raise BadValue(
                f"{self.name}: no row {', '.join(map(repr, unknown))}; rows: {', '.join(known)}"
            )
        return [known[k] for k in keys]


REPRODUCTIONS: dict[str, Reproduction] = {}
"""Every configuration by name, filled by the per-paper modules (see `all_reproductions`)."""


def register(*reproductions: Reproduction) -> None:
    """Add configurations to `REPRODUCTIONS` (a name is registered once)."""
    for rep in reproductions:
        if rep.name in REPRODUCTIONS and REPRODUCTIONS[rep.name] is not rep:
            raise ValueError(f"reproduction {rep.name!r} registered twice")
        REPRODUCTIONS[rep.name] = rep
