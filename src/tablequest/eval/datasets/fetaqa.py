"""FeTaQA loader: free-form answers over inline Wikipedia tables (one table per question).

File: `data/fetaQA-v1_test.jsonl` (other splits via `split=`). Each line holds `feta_id`,
`table_array` (first row = header), `table_page_title`, `table_section_title`, `question`,
`answer` and `highlighted_cell_ids` ([row, col] into `table_array`, kept in `extra`). The
table title is "<page title> — <section title>". Table keys: `<file>#<feta_id>`.

A custom question file (`questions_file=`) is JSON lines shaped like the split file; its
questions replace the split's. A question whose table equals the split's table of the same id
uses that table; other tables join the corpus under `<absolute file path>#<feta_id>`
(`merge_inline`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    merge_inline,
    read_jsonl,
    require_dir,
    require_keys,
    unique_id,
)
from tablequest.table import Source, Table

__all__ = ["load_fetaqa"]

_KEYS = ("feta_id", "table_array", "question", "answer")


def _question(row: dict[str, Any], qid: str, key: str, page: str, section: str) -> Question:
    return Question(
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


def _read_questions(
    path: Path, prefix: str, what: str
) -> tuple[list[Question], dict[str, TableRef]]:
    """Questions of one FeTaQA file (`what` in errors) and their inline tables keyed
    `<prefix>#<id>`.

    Raises:
        DatasetError: the file is missing or a record is malformed.
    """
    questions: list[Question] = []
    refs: dict[str, TableRef] = {}
    seen: dict[str, int] = {}
    for lineno, row in enumerate(read_jsonl(path, what), start=1):
        require_keys(row, _KEYS, f"FeTaQA: {prefix} record {lineno}")
        array = row["table_array"]
        if not isinstance(array, list) or not array or not all(isinstance(r, list) for r in array):
            raise DatasetError(
                f"FeTaQA: {prefix} record {lineno}: table_array is not a list of rows"
            )
        qid = unique_id(str(row["feta_id"]), seen)
        key = f"{prefix}#{qid}"
        page = str(row.get("table_page_title") or "")
        section = str(row.get("table_section_title") or "")
        title = " — ".join(t for t in (page, section) if t) or None
        table = Table.from_rows(array, title=title, source=Source(path=key, format="json"))
        refs[key] = TableRef(key, path, "inline", table=table)
        questions.append(_question(row, qid, key, page, section))
    return questions, refs


def load_fetaqa(
    root: Path | str, split: str = "test", *, questions_file: Path | str | None = None
) -> Dataset:
    """Load FeTaQA `split` ("test" by default; the file is `data/fetaQA-v1_<split>.jsonl`).

    Args:
        root: the FeTaQA folder.
        split: which of the benchmark's files to read.
        questions_file: read the questions from this file instead (see module doc).

    Raises:
        DatasetError: the file is missing or a record is malformed.
    """
    root = require_dir(Path(root), "FeTaQA root")
    rel = f"data/fetaQA-v1_{split}.jsonl"
    questions, refs = _read_questions(root / rel, rel, f"FeTaQA {split} split")
    notes = []
    if questions_file is not None:
        prefix = Path(questions_file).resolve().as_posix()
        custom, custom_refs = _read_questions(Path(questions_file), prefix, "FeTaQA questions")
        questions, refs = merge_inline(custom, custom_refs, refs, prefix=prefix, corpus_prefix=rel)
        notes.append(f"questions from {questions_file}")
    notes.append(f"{len(questions)} questions, {len(refs)} inline tables")
    return Dataset(
        name="fetaqa",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"split": split},
        questions_file=None if questions_file is None else Path(questions_file),
    )
