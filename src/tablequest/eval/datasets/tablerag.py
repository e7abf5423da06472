"""ArcadeQA and BirdQA loaders: TableRAG's million-token benchmarks (Chen et al., 2024, §4.1).

Layout (google-research/google-research `table_rag/`: `README.md` at 8369f2d,
`utils/load_data.py` at 8d8a4f1, `agent/agent.py` and `evaluate.py` at 4c42994): the archives
`arcade_qa.tar.gz` / `bird_qa.tar.gz` unpack to `data/arcade/test.jsonl` and
`data/bird/test.jsonl` (plus `db/<task>_test/`, TableRAG's own prebuilt retrieval databases,
not read here). `root` is the folder they were unpacked in; `split` names the file
(`data/<task>/<split>.jsonl`). Each line is one question with its whole table inline:

- `table_text`: the table as a list of rows, the first row the header (upstream builds
  `pd.DataFrame(table_text[1:], columns=table_text[0])`);
- `question` (or `statement`, which upstream prefers when present);
- `label`: the gold answer (a value, a list, or a string holding a Python list);
- `table_caption` (optional, the prompt's table description) and `table_id` (optional;
  upstream derives it as `table_caption.replace(' ', '_')` when absent);
- `id` (optional; upstream keeps it as `orig_id`, here `extra["orig_id"]`).

Question ids are upstream's `<file stem>-<line index>` (`test-0`, `test-1`, …). Questions on
the same `table_id` share one table, keyed `data/<task>/<split>.jsonl#<table_id>`; a line whose
`table_id` repeats with another header or row count gets its own key (`#<table_id>@<line>`),
since upstream answers each line on its own `table_text`. Tables are read lazily (a table can
hold millions of cells): loading records each table's byte offset, `TableRef.load` re-reads
that one line.

Answers: `answers` are the label's items as TableRAG's evaluator splits them; the raw label is
`extra["label"]`, which `tablerag_eval.tablerag_match` scores exactly as upstream's
`evaluate_qa` (the paper's exact-match accuracy).

Not followed on purpose: upstream `load_dataset` slices `all_lines[:stop_at]` with the default
`stop_at=-1`, which drops the file's last question; we keep every line.

A custom question file (`questions_file=`) has the same JSON-lines shape; its tables join the
corpus under `<absolute file path>#<table_id>`, except a table whose `table_id`, header and row
count equal a benchmark table's, which uses the benchmark's key.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeGuard

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    register_table_format,
    require_dir,
    require_file,
)
from tablequest.eval.datasets.tablerag_eval import tablerag_label_items
from tablequest.table import Source, Table

__all__ = ["load_arcadeqa", "load_birdqa", "read_tablerag_jsonl"]

_FORMAT = "tablerag_jsonl"


def _read_line(ref: TableRef) -> Table:
    try:
        with ref.path.open("rb") as handle:
            handle.seek(int(ref.meta["offset"]))
            row = json.loads(handle.readline())
    except (OSError, ValueError, KeyError) as exc:
        raise DatasetError(f"TableRAG: cannot read table {ref.key!r}: {exc}") from exc
    rows = row.get("table_text") if isinstance(row, dict) else None
    if not _is_rows(rows):
        raise DatasetError(f"TableRAG: table {ref.key!r}: table_text is not a list of rows")
    return Table.from_rows(
        rows, title=ref.meta.get("caption") or None, source=Source(path=ref.key, format="json")
    )


register_table_format(_FORMAT, _read_line)


def _is_rows(rows: Any) -> TypeGuard[list[list[Any]]]:
    return isinstance(rows, list) and bool(rows) and all(isinstance(r, list) for r in rows)


def _table_id(row: dict[str, Any], where: str) -> str:
    if "table_id" in row:
        return str(row["table_id"])
    if "table_caption" not in row:
        raise DatasetError(f"{where}: neither table_id nor table_caption")
    return str(row["table_caption"]).replace(" ", "_")


def _question(row: dict[str, Any], qid: str, key: str, table_id: str, where: str) -> Question:
    text = row["statement"] if "statement" in row else row.get("question")
    if text is None:
        raise DatasetError(f"{where}: missing field(s) question")
    if "label" not in row:
        raise DatasetError(f"{where}: missing field(s) label")
    extra: dict[str, Any] = {
        "label": row["label"],
        "table_id": table_id,
        "caption": str(row.get("table_caption", "")),
    }
    if "id" in row:
        extra["orig_id"] = row["id"]
    return Question(
        id=qid,
        question=str(text),
        answers=tablerag_label_items(row["label"], keep_case=True),
        gold_table_ids=[key],
        task="tableqa",
        extra=extra,
    )


def read_tablerag_jsonl(
    path: Path, prefix: str, what: str
) -> tuple[list[Question], dict[str, TableRef]]:
    """Questions of one TableRAG JSON-lines file and lazy refs to its tables (`<prefix>#<id>`).

    Raises:
        DatasetError: the file is missing or a line is not a well-formed question.
    """
    require_file(path, what)
    questions: list[Question] = []
    refs: dict[str, TableRef] = {}
    offset = 0
    with path.open("rb") as handle:
        for index, line in enumerate(handle):
            start, offset = offset, offset + len(line)
            where = f"{what}: {path}:{index + 1}"
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{where} is not valid JSON: {exc}") from exc
            if not isinstance(row, dict) or not _is_rows(row.get("table_text")):
                raise DatasetError(f"{where}: expected an object with table_text (list of rows)")
            table_id = _table_id(row, where)
            rows = row["table_text"]
            shape = {"n_rows": str(len(rows) - 1), "header": json.dumps(rows[0])}
            key = f"{prefix}#{table_id}"
            known = refs.get(key)
            if known is not None and _shape(known) != shape:
                key = f"{key}@{index + 1}"
            if key not in refs:
                meta = {"offset": str(start), "caption": str(row.get("table_caption", ""))}
                refs[key] = TableRef(key, path, _FORMAT, meta={**meta, **shape})
            questions.append(_question(row, f"{path.stem}-{index}", key, table_id, where))
    if not questions:
        raise DatasetError(f"{what}: no questions in {str(path)!r}")
    return questions, refs


def _shape(ref: TableRef) -> dict[str, str]:
    return {"n_rows": ref.meta["n_rows"], "header": ref.meta["header"]}


def _merge(
    questions: list[Question],
    refs: dict[str, TableRef],
    corpus: dict[str, TableRef],
    *,
    prefix: str,
    rel: str,
) -> tuple[list[Question], dict[str, TableRef]]:
    """Point custom questions at the benchmark's table of the same id and shape."""
    merged = dict(corpus)
    remap: dict[str, str] = {}
    for key, ref in refs.items():
        twin = corpus.get(rel + key.removeprefix(prefix))
        if twin is not None and _shape(twin) == _shape(ref):
            remap[key] = twin.key
        else:
            merged[key] = ref
    out = [
        replace(q, gold_table_ids=[remap.get(k, k) for k in q.gold_table_ids]) for q in questions
    ]
    return out, merged


def _load(
    name: str, folder: str, label: str, root: Path | str, split: str, questions_file: Any
) -> Dataset:
    root = require_dir(Path(root), f"{label} root")
    rel = f"data/{folder}/{split}.jsonl"
    questions, refs = read_tablerag_jsonl(root / rel, rel, f"{label} {split} questions")
    notes: list[str] = []
    if questions_file is not None:
        prefix = Path(questions_file).resolve().as_posix()
        custom, custom_refs = read_tablerag_jsonl(
            Path(questions_file), prefix, f"{label} questions"
        )
        questions, refs = _merge(custom, custom_refs, refs, prefix=prefix, rel=rel)
        notes.append(f"questions from {questions_file}")
    notes.append(f"{len(questions)} questions, {len(refs)} tables (read lazily)")
    return Dataset(
        name=name,
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"split": split},
        questions_file=None if questions_file is None else Path(questions_file),
    )


def load_arcadeqa(
    root: Path | str, split: str = "test", *, questions_file: Path | str | None = None
) -> Dataset:
    """Load TableRAG's ArcadeQA (`data/arcade/<split>.jsonl`; see module doc).

    Raises:
        DatasetError: the root or file is missing or a line is malformed.
    """
    return _load("arcadeqa", "arcade", "ArcadeQA", root, split, questions_file)


def load_birdqa(
    root: Path | str, split: str = "test", *, questions_file: Path | str | None = None
) -> Dataset:
    """Load TableRAG's BirdQA (`data/bird/<split>.jsonl`; see module doc).

    Raises:
        DatasetError: the root or file is missing or a line is malformed.
    """
    return _load("birdqa", "bird", "BirdQA", root, split, questions_file)
