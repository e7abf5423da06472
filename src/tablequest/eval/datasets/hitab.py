"""HiTab loader: hierarchical tables with merged cells (test split).

Files under `root`: `data/test_samples.jsonl` (or the Oct-2025 corrected
`data/test_samples_qualitycheck.jsonl` with `quality_checked=True`) and one table per file,
`data/tables/raw/<table_id>.json` (`texts`, `merged_regions`, header trees, header counts),
read by the tablequest JSON reader (which resolves merges and header rows). Answers are the
gold values as text (52.1 → "52.1", 55.0 → "55"); `extra["answer_raw"]` keeps them as given.
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
from tablequest.table.model import cell_text

__all__ = ["load_hitab"]

_KEYS = ("id", "table_id", "question", "answer")


def load_hitab(root: Path | str, *, quality_checked: bool = False) -> Dataset:
    """Load the HiTab test questions and the tables they use.

    Raises:
        DatasetError: the samples file or a referenced table file is missing.
    """
    root = require_dir(Path(root), "HiTab root")
    name = "test_samples_qualitycheck.jsonl" if quality_checked else "test_samples.jsonl"
    rows = read_jsonl(root / "data" / name, "HiTab test samples")
    table_dir = require_dir(root / "data" / "tables" / "raw", "HiTab tables")
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    missing: set[str] = set()
    for lineno, row in enumerate(rows, start=1):
        require_keys(row, _KEYS, f"HiTab: {name} record {lineno}")
        key = f"data/tables/raw/{row['table_id']}.json"
        if key not in refs:
            path = table_dir / f"{row['table_id']}.json"
            if not path.is_file():
                missing.add(key)
                continue
            refs[key] = TableRef(key, path, "json")
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
            f"HiTab: {len(missing)} table file(s) missing in {str(table_dir)!r}: "
            + missing_summary(sorted(missing))
        )
    notes = [f"{len(questions)} questions ({name}), {len(refs)} tables"]
    return Dataset(name="hitab", root=root, questions=questions, table_refs=refs, notes=notes)
