"""Benchmark loaders: questions with gold answers, gold tables and sibling groups.

`load(name, root, **options)` dispatches through `DATASETS`; each loader validates its files
and raises `DatasetError` naming what is missing and where. `Dataset.tables()` yields
(key, Table) with dataset-relative keys (e.g. WTQ "csv/204-csv/590.csv").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablequest.eval.datasets.aitqa import load_aitqa
from tablequest.eval.datasets.common import Dataset, DatasetError, Question, TableRef, Task
from tablequest.eval.datasets.fetaqa import load_fetaqa
from tablequest.eval.datasets.hitab import load_hitab
from tablequest.eval.datasets.realhitbench import load_realhitbench
from tablequest.eval.datasets.tabfact import load_tabfact
from tablequest.eval.datasets.tablebench import load_tablebench
from tablequest.eval.datasets.tcrbench import load_tcrbench
from tablequest.eval.datasets.wtq import load_wtq

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetError",
    "Question",
    "TableRef",
    "Task",
    "load",
    "load_aitqa",
    "load_fetaqa",
    "load_hitab",
    "load_realhitbench",
    "load_tabfact",
    "load_tablebench",
    "load_tcrbench",
    "load_wtq",
]

DATASETS: dict[str, Callable[..., Dataset]] = {
    "wtq": load_wtq,
    "tabfact": load_tabfact,
    "tcrbench": load_tcrbench,
    "fetaqa": load_fetaqa,
    "hitab": load_hitab,
    "aitqa": load_aitqa,
    "realhitbench": load_realhitbench,
    "tablebench": load_tablebench,
}


def load(name: str, root: Path | str, **options: Any) -> Dataset:
    """Load benchmark `name` from `root` (options go to its loader, e.g. `split=`).

    Raises:
        DatasetError: unknown name, bad option, or missing/malformed files.
    """
    try:
        loader = DATASETS[name.lower()]
    except KeyError:
        raise DatasetError(
            f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}"
        ) from None
    try:
        inspect.signature(loader).bind(root, **options)
    except TypeError as exc:
        raise DatasetError(f"{name}: bad option(s) {sorted(options)}: {exc}") from None
    return loader(root, **options)
