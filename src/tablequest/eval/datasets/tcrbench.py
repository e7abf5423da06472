"""TCR-Bench loader: questions with a gold table and a sibling group of hard negatives.

Files under `root`: `data/TCR_Questions.json` (question_id, db_id, highlighted_table,
all_tables_in_group, question, answer, answer_index, question_type), `data/TCR_Tables.json`
(db_id, table_path, table_name, table_format) and the table files
`tables/TCR_8k/<db_id>/<table_path>.csv` (CSV text whatever `table_format` says; that field is
the format the table is *rendered* in for the Mixed corpus and is kept as
`meta["render_format"]`).

Only questions whose gold table and whole sibling group are on disk are kept (a staged
subset may hold few table files); the count is in `Dataset.notes`. Answers are the gold
values as text (35156.0 → "35156"); `extra["answer_raw"]` keeps the JSON values.

A custom question file (`questions_file=`) is a JSON list shaped like `TCR_Questions.json`;
the tables still come from `TCR_Tables.json` and the table files, with the same rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    question_source,
    read_json,
    require_dir,
    require_keys,
)
from tablequest.table import cell_text

__all__ = ["load_tcrbench"]

_Q_KEYS = ("question_id", "db_id", "highlighted_table", "all_tables_in_group", "question", "answer")
_T_KEYS = ("db_id", "table_path", "table_format")


def _key(db_id: str, table_path: str) -> str:
    return f"tables/TCR_8k/{db_id}/{table_path}.csv"


def _tables(root: Path) -> tuple[dict[str, TableRef], int]:
    """The tables listed in `TCR_Tables.json` whose file is present, and how many are listed."""
    raw_tables = read_json(root / "data" / "TCR_Tables.json", "TCR-Bench table metadata")
    if not isinstance(raw_tables, list):
        raise DatasetError("TCR-Bench: data/TCR_Tables.json must be a list of tables")
    refs: dict[str, TableRef] = {}
    for i, meta in enumerate(raw_tables):
        require_keys(meta, _T_KEYS, f"TCR-Bench: TCR_Tables.json entry {i}")
        key = _key(meta["db_id"], meta["table_path"])
        path = root / key
        if path.is_file():
            refs[key] = TableRef(
                key,
                path,
                "csv",
                meta={
                    "render_format": str(meta["table_format"]),
                    "table_name": str(meta.get("table_name", "")),
                    "db_id": str(meta["db_id"]),
                },
            )
    return refs, len(raw_tables)


def _read_questions(raw_questions: Any, source: str, refs: dict[str, TableRef]) -> list[Question]:
    """The questions of one parsed question file whose gold table and group are in `refs`."""
    if not isinstance(raw_questions, list):
        raise DatasetError(f"TCR-Bench: {source} must be a list of questions")
    questions: list[Question] = []
    for i, raw in enumerate(raw_questions):
        require_keys(raw, _Q_KEYS, f"TCR-Bench: {source} question {i}")
        db_id = str(raw["db_id"])
        gold = [_key(db_id, t) for t in raw["highlighted_table"]]
        group = [_key(db_id, t) for t in raw["all_tables_in_group"]]
        if not gold or any(k not in refs for k in (*gold, *group)):
            continue
        answers: list[Any] = list(raw["answer"])
        questions.append(
            Question(
                id=str(raw["question_id"]),
                question=str(raw["question"]),
                answers=[cell_text(a) for a in answers],
                gold_table_ids=gold,
                group=group,
                task="tableqa",
                extra={
                    "question_type": raw.get("question_type"),
                    "answer_index": raw.get("answer_index"),
                    "answer_raw": answers,
                    "db_id": db_id,
                },
            )
        )
    return questions


def load_tcrbench(root: Path | str, *, questions_file: Path | str | None = None) -> Dataset:
    """Load TCR-Bench questions whose tables are present, with their sibling groups.

    Args:
        root: the TCR-Bench folder.
        questions_file: read the questions from this file instead (shaped like
            `data/TCR_Questions.json`).

    Raises:
        DatasetError: a JSON file is missing or malformed, or no question has its tables.
    """
    root = require_dir(Path(root), "TCR-Bench root")
    path, source = question_source(root, "data/TCR_Questions.json", questions_file)
    raw_questions = read_json(path, "TCR-Bench questions")
    refs, listed = _tables(root)
    questions = _read_questions(raw_questions, source, refs)
    if not questions:
        raise DatasetError(
            f"TCR-Bench: none of the {len(raw_questions)} questions has its gold table and "
            f"sibling group under {str(root / 'tables' / 'TCR_8k')!r} (questions: {source})"
        )
    notes = [
        f"{len(questions)} of {len(raw_questions)} questions kept (tables present)",
        f"{len(refs)} of {listed} listed tables present",
    ]
    if questions_file is not None:
        notes.insert(0, f"questions from {path}")
    return Dataset(
        name="tcrbench",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        questions_file=None if questions_file is None else Path(questions_file),
    )
