"""FeTaQA loader: free-form answers over inline Wikipedia tables (one table per question).

File: `data/fetaQA-v1_test.jsonl` (other splits via `split=`). Each line holds `feta_id`,
`table_array` (first row = header), `table_page_title`, `table_section_title`, `question`,
`answer` and `highlighted_cell_ids` ([row, col] into `table_array`, kept in `extra`). The
table title is "<page title> — <section title>". Table keys: `<file>#<feta_id>`.
"""

from __future__ import annotations

from pathlib import Path

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    read_jsonl,
    require_dir,
    require_keys,
    unique_id,
)
from tablequest.table.model import Source, Table

__all__ = ["load_fetaqa"]

_KEYS = ("feta_id", "table_array", "question", "answer")


def load_fetaqa(root: Path | str, split: str = "test") -> Dataset:
    """Load FeTaQA `split` ("test" by default; the file is `data/fetaQA-v1_<split>.jsonl`).

    Raises:
        DatasetError: the file is missing or a record is malformed.
    """
    root = require_dir(Path(root), "FeTaQA root")
    rel = f"data/fetaQA-v1_{split}.jsonl"
    rows = read_jsonl(root / rel, f"FeTaQA {split} split")
    questions: list[Question] = []
    refs: dict[str, TableRef] = {}
    seen: dict[str, int] = {}
    for lineno, row in enumerate(rows, start=1):
        require_keys(row, _KEYS, f"FeTaQA: {rel} record {lineno}")
        array = row["table_array"]
        if not isinstance(array, list) or not array or not all(isinstance(r, list) for r in array):
            raise DatasetError(f"FeTaQA: {rel} record {lineno}: table_array is not a list of rows")
        qid = unique_id(str(row["feta_id"]), seen)
        key = f"{rel}#{qid}"
        page = str(row.get("table_page_title") or "")
        section = str(row.get("table_section_title") or "")
        title = " — ".join(t for t in (page, section) if t) or None
        table = Table.from_rows(array, title=title, source=Source(path=key, format="json"))
        refs[key] = TableRef(key, root / rel, "inline", table=table)
        questions.append(
            Question(
                id=qid,
                question=str(row["question"]),
                answers=[str(row["answer"])],
                gold_table_ids=[key],
                task="free_form",
                extra={
                    "highlighted_cell_ids": row.get("highlighted_cell_ids", []),
                    "page_title": page,
                    "section_title": section,
                    "url": row.get("page_wikipedia_url"),
                },
            )
        )
    notes = [f"{len(questions)} questions, {len(refs)} inline tables"]
    return Dataset(name="fetaqa", root=root, questions=questions, table_refs=refs, notes=notes)
