"""AIT-QA loader: airline SEC-filing tables with hierarchical row and column headers.

Files under `root`: `raw_data/aitqa_questions.jsonl` (id, table_id, question, answers, type,
row_hierarchy_needed, paraphrase_group) and `raw_data/aitqa_tables.jsonl` (id, column_header
paths, row_header paths, data). Tables are built by the tablequest JSON reader (AIT-QA shape:
header paths become header rows / columns); keys are `raw_data/aitqa_tables.jsonl#<id>`.

A custom question file (`questions_file=`) is JSON lines shaped like `aitqa_questions.jsonl`;
its `table_id`s must name tables of `aitqa_tables.jsonl` (the corpus, unchanged).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    missing_summary,
    question_source,
    read_jsonl,
    read_one_table,
    require_dir,
    require_keys,
)
from tablequest.table import Source

__all__ = ["load_aitqa"]

_Q_FILE = "raw_data/aitqa_questions.jsonl"
_T_FILE = "raw_data/aitqa_tables.jsonl"


def _tables(root: Path) -> dict[str, TableRef]:
    """Every table of `aitqa_tables.jsonl`, built inline."""
    refs: dict[str, TableRef] = {}
    for lineno, row in enumerate(read_jsonl(root / _T_FILE, "AIT-QA tables"), start=1):
        require_keys(row, ("id", "column_header", "data"), f"AIT-QA: {_T_FILE} line {lineno}")
        key = f"{_T_FILE}#{row['id']}"
        table = read_one_table(key, fmt="json", data=json.dumps(row).encode("utf-8"))
        table = replace(table, source=Source(path=key, format="json"))
        refs[key] = TableRef(key, root / _T_FILE, "inline", table=table)
    return refs


def _read_questions(path: Path, source: str, refs: dict[str, TableRef]) -> list[Question]:
    """Questions of one questions file; every `table_id` must be a table in `refs`.

    Raises:
        DatasetError: the file is missing, a record is malformed or names an unknown table.
    """
    questions: list[Question] = []
    unknown: set[str] = set()
    for lineno, row in enumerate(read_jsonl(path, "AIT-QA questions"), start=1):
        require_keys(row, ("id", "table_id", "question", "answers"), f"AIT-QA: {source} {lineno}")
        if not isinstance(row["answers"], list):
            raise DatasetError(f"AIT-QA: {source} line {lineno}: 'answers' is not a list")
        key = f"{_T_FILE}#{row['table_id']}"
        if key not in refs:
            unknown.add(str(row["table_id"]))
            continue
        questions.append(
            Question(
                id=str(row["id"]),
                question=str(row["question"]),
                answers=[str(a) for a in row["answers"]],
                gold_table_ids=[key],
                task="tableqa",
                extra={
                    "type": row.get("type"),
                    "row_hierarchy_needed": row.get("row_hierarchy_needed"),
                    "paraphrase_group": row.get("paraphrase_group"),
                },
            )
        )
    if unknown:
        raise DatasetError(
            f"AIT-QA: questions of {source} name {len(unknown)} table id(s) absent from "
            f"{_T_FILE}: " + missing_summary(sorted(unknown))
        )
    return questions


def load_aitqa(root: Path | str, *, questions_file: Path | str | None = None) -> Dataset:
    """Load all released AIT-QA questions and tables.

    Args:
        root: the AIT-QA folder.
        questions_file: read the questions from this file instead (JSON lines shaped like
            `raw_data/aitqa_questions.jsonl`).

    Raises:
        DatasetError: a file is missing, a record is malformed or a question names an
            unknown table.
    """
    root = require_dir(Path(root), "AIT-QA root")
    refs = _tables(root)
    path, source = question_source(root, _Q_FILE, questions_file)
    questions = _read_questions(path, source, refs)
    notes = [f"{len(questions)} questions, {len(refs)} tables"]
    if questions_file is not None:
        notes.insert(0, f"questions from {path}")
    return Dataset(
        name="aitqa",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        questions_file=None if questions_file is None else Path(questions_file),
    )
