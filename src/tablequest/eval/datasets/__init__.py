"""Benchmark loaders: questions with gold answers, gold tables and sibling groups.

`load(name, root, **options)` dispatches through `DATASETS`; each loader validates its files
and raises `DatasetError` naming what is missing and where. `Dataset.tables()` yields
(key, Table) with dataset-relative keys (e.g. WTQ "csv/204-csv/590.csv").

Every loader takes `questions_file=` (questions from a file in the benchmark's own format,
tables from the root); `reload_questions(dataset, path)` reads such a file for a loaded
dataset, and `parse_id_list` tells it from a list of question ids.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablequest.eval.datasets.aitqa import load_aitqa
from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    QuestionTask,
    TableRef,
    parse_id_list,
)
from tablequest.eval.datasets.fetaqa import load_fetaqa
from tablequest.eval.datasets.hitab import load_hitab
from tablequest.eval.datasets.realhitbench import load_realhitbench
from tablequest.eval.datasets.tabfact import load_tabfact
from tablequest.eval.datasets.tabfact_synth import load_tabfact_synth
from tablequest.eval.datasets.tablebench import load_tablebench
from tablequest.eval.datasets.tablerag import load_arcadeqa, load_birdqa
from tablequest.eval.datasets.tcrbench import load_tcrbench
from tablequest.eval.datasets.wtq import load_wtq

__all__ = [
    "DATASETS",
    "QUESTION_FORMATS",
    "Dataset",
    "DatasetError",
    "Question",
    "QuestionTask",
    "TableRef",
    "load",
    "load_aitqa",
    "load_arcadeqa",
    "load_birdqa",
    "load_fetaqa",
    "load_hitab",
    "load_realhitbench",
    "load_tabfact",
    "load_tabfact_synth",
    "load_tablebench",
    "load_tcrbench",
    "load_wtq",
    "parse_id_list",
    "reload_questions",
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
    "arcadeqa": load_arcadeqa,
    "birdqa": load_birdqa,
    "tabfact-synth": load_tabfact_synth,
}


QUESTION_FORMATS: dict[str, str] = {
    "wtq": "a TSV with the header id, utterance, context, targetValue",
    "tabfact": "a JSON object of table file: claims, labels, caption, like test_examples.json",
    "tcrbench": "a JSON list of question objects, like data/TCR_Questions.json",
    "fetaqa": "JSON lines, like data/fetaQA-v1_test.jsonl",
    "hitab": "JSON lines, like data/test_samples.jsonl",
    "aitqa": "JSON lines, like raw_data/aitqa_questions.jsonl",
    "realhitbench": "a JSON object with a queries list, like data/QA_final.json",
    "tablebench": "JSON lines, like TableBench.jsonl",
    "arcadeqa": "JSON lines with table_text, question, label, like data/arcade/test.jsonl",
    "birdqa": "JSON lines with table_text, question, label, like data/bird/test.jsonl",
    "tabfact-synth": "a JSON object of table file: claims, labels, caption (test_examples.json)",
}
"""What each benchmark's question file looks like (for messages)."""


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


def reload_questions(dataset: Dataset, questions_file: Path | str) -> list[Question]:
    """The questions of `questions_file`, read by `dataset`'s loader with its root and options.

    Tables the file's questions use that `dataset` lacks (a TabFact table outside the test
    corpus, a new inline table) are added to `dataset.table_refs`, with a note, so a corpus
    built from `dataset` holds every gold table.

    Raises:
        DatasetError: `dataset` did not come from a loader, or the file is not a question file
            of its benchmark (the message names the file and the problem).
    """
    if dataset.name not in DATASETS:
        raise DatasetError(
            f"{dataset.name}: not a benchmark loaded by `load`; cannot read its questions from "
            f"{str(questions_file)!r}"
        )
    custom = load(dataset.name, dataset.root, questions_file=questions_file, **dataset.options)
    added = {k: ref for k, ref in custom.table_refs.items() if k not in dataset.table_refs}
    dataset.table_refs.update(added)
    dataset.notes.append(
        f"{len(custom.questions)} questions from {questions_file}"
        + (f"; {len(added)} of their tables added to the corpus" if added else "")
    )
    return custom.questions
