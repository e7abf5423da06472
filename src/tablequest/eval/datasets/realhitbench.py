"""RealHiTBench loader: questions over real spreadsheets (`data/QA_final.json` + xlsx).

`QA_final.json` = {"queries": [...]}, each with id, FileName, Question, QuestionType,
SubQType, CompStrucCata, FinalAnswer, ProcessedAnswer. The table is
`data/tables/<FileName>.xlsx`, read by the tablequest xlsx reader (merged cells, multi-level
headers). Answers are the reference upstream scores against (`inference/inference_llm.py`
and its siblings in cspzyy/RealHiTBench): `[FinalAnswer]`, and for Visualization
`[ProcessedAnswer]` (the reference y-values; its `FinalAnswer` is the chart code); empty for
Structure Comprehending, which upstream scores on swapped tables. The two differ on one
non-chart question, id 374 (FinalAnswer "1297800", ProcessedAnswer "31297800"); both are
kept in `extra` (`final_answer`, `processed_answer`). Tasks: Visualization →
"visualization", Data Analysis → "free_form", the rest "tableqa".

Choice (ours): questions whose xlsx is missing (upstream LFS pointers; only a LaTeX rendering
in `data/latex/`) are skipped and counted in `Dataset.notes`; LaTeX tables are not parsed.

The corpus is the spreadsheets the questions of `QA_final.json` use. A custom question file
(`questions_file=`) is shaped like `QA_final.json`; its questions replace those (same skipping
rule) and its spreadsheets join the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    QuestionTask,
    TableRef,
    read_json,
    require_dir,
    require_keys,
)

__all__ = ["load_realhitbench"]

_KEYS = ("id", "FileName", "Question", "QuestionType")
_TASKS: dict[str, QuestionTask] = {"Visualization": "visualization", "Data Analysis": "free_form"}


def _reference_field(row: dict[str, Any]) -> str:
    """The key of the reference upstream scores `row` against."""
    return "ProcessedAnswer" if str(row["QuestionType"]) == "Visualization" else "FinalAnswer"


def _question(row: dict[str, Any], key: str) -> Question:
    qtype = str(row["QuestionType"])
    answer = str(row.get(_reference_field(row)) or "")
    return Question(
        id=str(row["id"]),
        question=str(row["Question"]),
        answers=[answer] if answer else [],
        gold_table_ids=[key],
        task=_TASKS.get(qtype, "tableqa"),
        extra={
            "question_type": qtype,
            "sub_type": row.get("SubQType"),
            "structure": row.get("CompStrucCata"),
            "final_answer": row.get("FinalAnswer"),
            "processed_answer": row.get("ProcessedAnswer"),
        },
    )


def _read_queries(
    path: Path, source: str, table_dir: Path
) -> tuple[list[Question], dict[str, TableRef], list[str]]:
    """Questions of one queries file whose xlsx is present, their tables, and notes.

    Raises:
        DatasetError: the file is missing or malformed, or no question has its xlsx.
    """
    raw = read_json(path, "RealHiTBench questions")
    if not isinstance(raw, dict) or not isinstance(raw.get("queries"), list):
        raise DatasetError(f'RealHiTBench: {source} must be {{"queries": [...]}}')
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    skipped: dict[str, int] = {}
    for i, row in enumerate(raw["queries"]):
        require_keys(row, _KEYS, f"RealHiTBench: {source} query {i}")
        require_keys(row, (_reference_field(row),), f"RealHiTBench: {source} query {i}")
        file_name = str(row["FileName"])
        key = f"data/tables/{file_name}.xlsx"
        if key not in refs:
            table_path = table_dir / f"{file_name}.xlsx"
            if not table_path.is_file():
                skipped[file_name] = skipped.get(file_name, 0) + 1
                continue
            refs[key] = TableRef(key, table_path, "xlsx")
        questions.append(_question(row, key))
    if not questions:
        raise DatasetError(
            f"RealHiTBench: no question has its xlsx in {str(table_dir)!r} (questions: {source})"
        )
    notes = []
    if skipped:
        notes.append(
            f"skipped {sum(skipped.values())} questions on {len(skipped)} tables without xlsx: "
            + ", ".join(sorted(skipped))
        )
    return questions, refs, notes


def load_realhitbench(root: Path | str, *, questions_file: Path | str | None = None) -> Dataset:
    """Load RealHiTBench questions whose spreadsheet is present.

    Args:
        root: the RealHiTBench folder.
        questions_file: read the questions from this file instead (shaped like
            `data/QA_final.json`); the corpus stays the benchmark's spreadsheets plus the
            file's.

    Raises:
        DatasetError: QA_final.json or the tables directory is missing or malformed.
    """
    root = require_dir(Path(root), "RealHiTBench root")
    default = "data/QA_final.json"
    table_dir = require_dir(root / "data" / "tables", "RealHiTBench tables")
    questions, refs, notes = _read_queries(root / default, default, table_dir)
    if questions_file is not None:
        source = str(questions_file)
        questions, gold_refs, notes = _read_queries(Path(source), source, table_dir)
        refs |= {k: ref for k, ref in gold_refs.items() if k not in refs}
    notes.insert(0, f"{len(questions)} questions, {len(refs)} tables")
    if questions_file is not None:
        notes.insert(0, f"questions from {questions_file}")
    return Dataset(
        name="realhitbench",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        questions_file=None if questions_file is None else Path(questions_file),
    )
