"""AIT-QA loader: airline SEC-filing tables with hierarchical row and column headers.

Files under `root`: `raw_data/aitqa_questions.jsonl` (id, table_id, question, answers, type,
row_hierarchy_needed, paraphrase_group) and `raw_data/aitqa_tables.jsonl` (id, column_header
paths, row_header paths, data). Tables are built by the tablequest JSON reader (AIT-QA shape:
header paths become header rows / columns); keys are `raw_data/aitqa_tables.jsonl#<id>`.
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
    read_jsonl,
    read_one_table,
    require_dir,
    require_keys,
)
from tablequest.table.model import Source

__all__ = ["load_aitqa"]

_Q_FILE = "raw_data/aitqa_questions.jsonl"
_T_FILE = "raw_data/aitqa_tables.jsonl"


def load_aitqa(root: Path | str) -> Dataset:
    """Load all released AIT-QA questions and tables.

    Raises:
        DatasetError: a file is missing, a record is malformed or a question names an
            unknown table.
    """
    root = require_dir(Path(root), "AIT-QA root")
    table_rows = read_jsonl(root / _T_FILE, "AIT-QA tables")
    question_rows = read_jsonl(root / _Q_FILE, "AIT-QA questions")
    refs: dict[str, TableRef] = {}
    for lineno, row in enumerate(table_rows, start=1):
        require_keys(row, ("id", "column_header", "data"), f"AIT-QA: {_T_FILE} line {lineno}")
        key = f"{_T_FILE}#{row['id']}"
        table = read_one_table(key, fmt="json", data=json.dumps(row).encode("utf-8"))
        table = replace(table, source=Source(path=key, format="json"))
        refs[key] = TableRef(key, root / _T_FILE, "inline", table=table)
    questions: list[Question] = []
    unknown: set[str] = set()
    for lineno, row in enumerate(question_rows, start=1):
        require_keys(row, ("id", "table_id", "question", "answers"), f"AIT-QA: {_Q_FILE} {lineno}")
        if not isinstance(row["answers"], list):
            raise DatasetError(f"AIT-QA: {_Q_FILE} line {lineno}: 'answers' is not a list")
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
            f"AIT-QA: questions name {len(unknown)} table id(s) absent from {_T_FILE}: "
            + missing_summary(sorted(unknown))
        )
    notes = [f"{len(questions)} questions, {len(refs)} tables"]
    return Dataset(name="aitqa", root=root, questions=questions, table_refs=refs, notes=notes)
