"""TableBench loader: 886 TQA test questions with inline tables (`TableBench.jsonl`).

Each line: `id`, `qtype`, `qsubtype`, `table` ({"columns", "data"}, cells as strings, null →
""), `question`, `answer` (and `chart_type` for Visualization). `extra["metric"]` names the
official metric of the item (README "Evaluation Metrics"): "em" for Fact Checking, Numerical
Reasoning and Impact Analysis; "em_10pct" (±10%) for Correlation, Trend and Statistical
analysis; "rouge_l" for the other analysis types; "pass@1" for charts. Tasks: charts →
"visualization", ROUGE-scored analysis → "free_form", the rest "tableqa". One id occurs twice
upstream (two subtypes on one table); the second becomes `<id>#2`.

A custom question file (`questions_file=`) is JSON lines shaped like `TableBench.jsonl`; its
questions replace the benchmark's. A question whose table equals the benchmark's table of the
same id uses that table; other tables join the corpus under `<absolute file path>#<id>`
(`merge_inline`).
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
    merge_inline,
    read_jsonl,
    require_dir,
    require_keys,
    unique_id,
)
from tablequest.table import Source, Table

__all__ = ["load_tablebench", "tablebench_metric"]

_KEYS = ("id", "qtype", "qsubtype", "table", "question", "answer")
_EM_10 = {"CorrelationAnalysis", "TrendForecasting", "StatisticalAnalysis"}


def tablebench_metric(qtype: str, qsubtype: str) -> str:
    """The official metric for a TableBench item."""
    if qtype == "Visualization":
        return "pass@1"
    if qtype == "DataAnalysis":
        if qsubtype == "ImpactAnalysis":
            return "em"
        return "em_10pct" if qsubtype in _EM_10 else "rouge_l"
    return "em"


def _question(row: dict[str, Any], qid: str, key: str) -> Question:
    qtype, qsubtype = str(row["qtype"]), str(row["qsubtype"])
    metric = tablebench_metric(qtype, qsubtype)
    task: QuestionTask = (
        "visualization" if metric == "pass@1" else "free_form" if metric == "rouge_l" else "tableqa"
    )
    extra = {"qtype": qtype, "qsubtype": qsubtype, "metric": metric}
    if "chart_type" in row:
        extra["chart_type"] = str(row["chart_type"])
    return Question(
        id=qid,
        question=str(row["question"]),
        answers=[str(row["answer"])],
        gold_table_ids=[key],
        task=task,
        extra=extra,
    )


def _read_questions(path: Path, prefix: str) -> tuple[list[Question], dict[str, TableRef], int]:
    """Questions of one TableBench file, their inline tables keyed `<prefix>#<id>`, and how
    many duplicate ids were renamed.

    Raises:
        DatasetError: the file is missing or a record is malformed.
    """
    questions: list[Question] = []
    refs: dict[str, TableRef] = {}
    seen: dict[str, int] = {}
    for lineno, row in enumerate(read_jsonl(path, "TableBench questions"), start=1):
        where = f"TableBench: {prefix} record {lineno}"
        require_keys(row, _KEYS, where)
        table_obj = row["table"]
        require_keys(table_obj, ("columns", "data"), f"{where} table")
        if not isinstance(table_obj["columns"], list) or not isinstance(table_obj["data"], list):
            raise DatasetError(f"{where}: table columns/data must be lists")
        qid = unique_id(str(row["id"]), seen)
        key = f"{prefix}#{qid}"
        table = Table.from_rows(
            [table_obj["columns"], *table_obj["data"]], source=Source(path=key, format="json")
        )
        refs[key] = TableRef(key, path, "inline", table=table)
        questions.append(_question(row, qid, key))
    return questions, refs, sum(n - 1 for n in seen.values())


def load_tablebench(
    root: Path | str, file: str = "TableBench.jsonl", *, questions_file: Path | str | None = None
) -> Dataset:
    """Load TableBench questions and their inline tables.

    Args:
        root: the TableBench folder.
        file: the benchmark's question file under `root`.
        questions_file: read the questions from this file instead (see module doc).

    Raises:
        DatasetError: the file is missing or a record is malformed.
    """
    root = require_dir(Path(root), "TableBench root")
    questions, refs, dupes = _read_questions(root / file, file)
    notes = []
    if questions_file is not None:
        prefix = Path(questions_file).resolve().as_posix()
        custom, custom_refs, dupes = _read_questions(Path(questions_file), prefix)
        questions, refs = merge_inline(custom, custom_refs, refs, prefix=prefix, corpus_prefix=file)
        notes.append(f"questions from {questions_file}")
    notes.append(f"{len(questions)} questions, {len(refs)} inline tables")
    if dupes:
        notes.append(f"{dupes} duplicate id(s) renamed with a #N suffix")
    return Dataset(
        name="tablebench",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"file": file},
        questions_file=None if questions_file is None else Path(questions_file),
    )
