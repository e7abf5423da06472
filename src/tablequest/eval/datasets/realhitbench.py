"""RealHiTBench loader: questions over real spreadsheets (`data/QA_final.json` + xlsx).

`QA_final.json` = {"queries": [...]}, each with id, FileName, Question, QuestionType,
SubQType, CompStrucCata, FinalAnswer, ProcessedAnswer. The table is
`data/tables/<FileName>.xlsx`, read by the tablequest xlsx reader (merged cells, multi-level
headers). Answers are `[ProcessedAnswer]` (for Visualization, the reference y-values; empty
for Structure Comprehending, which upstream scores on swapped tables). Tasks: Visualization →
"visualization", Data Analysis → "free_form", the rest "tableqa".

Choice (ours): questions whose xlsx is missing (upstream LFS pointers; only a LaTeX rendering
in `data/latex/`) are skipped and counted in `Dataset.notes`; LaTeX tables are not parsed.
"""

from __future__ import annotations

from pathlib import Path

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    Task,
    read_json,
    require_dir,
    require_keys,
)

__all__ = ["load_realhitbench"]

_KEYS = ("id", "FileName", "Question", "QuestionType", "ProcessedAnswer")
_TASKS: dict[str, Task] = {"Visualization": "visualization", "Data Analysis": "free_form"}


def load_realhitbench(root: Path | str) -> Dataset:
    """Load RealHiTBench questions whose spreadsheet is present.

    Raises:
        DatasetError: QA_final.json or the tables directory is missing or malformed.
    """
    root = require_dir(Path(root), "RealHiTBench root")
    raw = read_json(root / "data" / "QA_final.json", "RealHiTBench questions")
    if not isinstance(raw, dict) or not isinstance(raw.get("queries"), list):
        raise DatasetError('RealHiTBench: QA_final.json must be {"queries": [...]}')
    table_dir = require_dir(root / "data" / "tables", "RealHiTBench tables")
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    skipped: dict[str, int] = {}
    for i, row in enumerate(raw["queries"]):
        require_keys(row, _KEYS, f"RealHiTBench: query {i}")
        file_name = str(row["FileName"])
        key = f"data/tables/{file_name}.xlsx"
        path = table_dir / f"{file_name}.xlsx"
        if key not in refs:
            if not path.is_file():
                skipped[file_name] = skipped.get(file_name, 0) + 1
                continue
            refs[key] = TableRef(key, path, "xlsx")
        answer = str(row["ProcessedAnswer"])
        qtype = str(row["QuestionType"])
        questions.append(
            Question(
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
                },
            )
        )
    notes = [f"{len(questions)} questions, {len(refs)} tables"]
    if skipped:
        notes.append(
            f"skipped {sum(skipped.values())} questions on {len(skipped)} tables without xlsx: "
            + ", ".join(sorted(skipped))
        )
    if not questions:
        raise DatasetError(f"RealHiTBench: no question has its xlsx in {str(table_dir)!r}")
    return Dataset(
        name="realhitbench", root=root, questions=questions, table_refs=refs, notes=notes
    )
