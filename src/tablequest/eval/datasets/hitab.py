"""HiTab loader: hierarchical tables with merged cells (test split).

Files under `root`: `data/test_samples.jsonl` (or the Oct-2025 corrected
`data/test_samples_qualitycheck.jsonl` with `quality_checked=True`) and one table per file,
`data/tables/raw/<table_id>.json` (`texts`, `merged_regions`, header trees, header counts),
read by the tablequest JSON reader (which resolves merges and header rows). Answers are the
gold values as text (52.1 → "52.1", 55.0 → "55"); `extra["answer_raw"]` keeps them as given.

The corpus is the tables the test questions use. A custom question file (`questions_file=`)
is JSON lines shaped like `test_samples.jsonl`; its questions replace the test questions and
its tables (in `data/tables/raw/`) join the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    missing_summary,
    read_jsonl,
    require_dir,
    require_keys,
)
from tablequest.table import cell_text

__all__ = ["load_hitab"]

_KEYS = ("id", "table_id", "question", "answer")


def _read_questions(
    path: Path, source: str, table_dir: Path
) -> tuple[list[Question], dict[str, TableRef]]:
    """Questions of one samples file and the tables they use.

    Raises:
        DatasetError: the file is missing or malformed, or a table file is missing.
    """
    rows = read_jsonl(path, "HiTab questions")
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    missing: set[str] = set()
    for lineno, row in enumerate(rows, start=1):
        require_keys(row, _KEYS, f"HiTab: {source} record {lineno}")
        key = f"data/tables/raw/{row['table_id']}.json"
        if key not in refs:
            table_path = table_dir / f"{row['table_id']}.json"
            if not table_path.is_file():
                missing.add(key)
                continue
            refs[key] = TableRef(key, table_path, "json")
        answers: list[Any] = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
        questions.append(
            Question(
                id=str(row["id"]),
                question=str(row["question"]),
                answers=[cell_text(a) for a in answers],
                gold_table_ids=[key],
                task="tableqa",
                extra={
                    "answer_raw": answers,
                    "aggregation": row.get("aggregation"),
                    "answer_formulas": row.get("answer_formulas"),
                    "table_source": row.get("table_source"),
                },
            )
        )
    if missing:
        raise DatasetError(
            f"HiTab: {len(missing)} table file(s) missing in {str(table_dir)!r} (used in "
            f"{source}): " + missing_summary(sorted(missing))
        )
    return questions, refs


def load_hitab(
    root: Path | str, *, quality_checked: bool = False, questions_file: Path | str | None = None
) -> Dataset:
    """Load the HiTab test questions and the tables they use.

    Args:
        root: the HiTab folder.
        quality_checked: read the Oct-2025 corrected test samples.
        questions_file: read the questions from this file instead (JSON lines shaped like
            `test_samples.jsonl`); the corpus stays the test tables plus the file's tables.

    Raises:
        DatasetError: the samples file or a referenced table file is missing.
    """
    root = require_dir(Path(root), "HiTab root")
    name = "test_samples_qualitycheck.jsonl" if quality_checked else "test_samples.jsonl"
    table_dir = require_dir(root / "data" / "tables" / "raw", "HiTab tables")
    questions, refs = _read_questions(root / "data" / name, f"data/{name}", table_dir)
    notes = [f"{len(questions)} questions ({name}), {len(refs)} tables"]
    if questions_file is not None:
        path, source = Path(questions_file), str(questions_file)
        questions, gold_refs = _read_questions(path, source, table_dir)
        refs |= {k: ref for k, ref in gold_refs.items() if k not in refs}
        notes = [f"{len(questions)} questions from {path}, {len(refs)} tables"]
    return Dataset(
        name="hitab",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"quality_checked": quality_checked},
        questions_file=None if questions_file is None else Path(questions_file),
    )
