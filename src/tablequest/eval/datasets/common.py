"""Shared types for benchmark loaders: `Question`, `TableRef`, `Dataset`, `DatasetError`.

Table keys are dataset-relative: the file's path under the dataset root for one-table files
(`csv/204-csv/590.csv`), and `<file>#<id>` for tables stored inside a shared file
(`raw_data/aitqa_tables.jsonl#tab-0`, `data/fetaQA-v1_test.jsonl#2206`). Inline tables of a
custom question file outside the root are keyed by that file's absolute path (`merge_inline`).

Every loader takes `questions_file=`: the questions then come from that file (same format as
the benchmark's own question file, parsed by the same function), the tables from the root.
`parse_id_list` tells an id list from such a question file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tablequest.errors import UsageError
from tablequest.table import Format, Table

__all__ = [
    "Dataset",
    "DatasetError",
    "Question",
    "QuestionTask",
    "TableRef",
    "merge_inline",
    "missing_summary",
    "parse_id_list",
    "question_source",
    "read_json",
    "read_jsonl",
    "read_one_table",
    "register_table_format",
    "require_dir",
    "require_file",
    "require_keys",
    "unique_id",
]

QuestionTask = Literal["tableqa", "fact_verification", "free_form", "visualization"]


class DatasetError(UsageError):
    """A benchmark's files are missing or malformed; the message names what and where."""


@dataclass(frozen=True)
class Question:
    """One benchmark question with its gold answers and gold tables.

    Attributes:
        id: the benchmark's question id (made unique per dataset).
        question: the question or claim text.
        answers: gold answers as text (several items = a list answer, not alternatives).
        gold_table_ids: dataset-relative keys of the gold table(s).
        group: keys of the sibling group (gold included); empty when the benchmark has none.
        task: what kind of answer is expected.
        extra: benchmark-specific fields (target_canon, label, question type, …).
    """

    id: str
    question: str
    answers: list[str]
    gold_table_ids: list[str]
    group: list[str] = field(default_factory=list)
    task: QuestionTask = "tableqa"
    extra: dict[str, Any] = field(default_factory=dict)


TableReader = Callable[["TableRef"], Table]
_READERS: dict[str, TableReader] = {}


def register_table_format(fmt: str, reader: TableReader) -> None:
    """Register how `TableRef.load` reads tables whose `format` is `fmt`."""
    _READERS[fmt] = reader


@dataclass(frozen=True)
class TableRef:
    """Where one table of a benchmark lives and how to read it.

    Attributes:
        key: dataset-relative key (see module doc).
        path: the file holding the table.
        format: reader name: "csv" / "xlsx" (tablequest readers), "inline" (already built,
            in `table`) or a benchmark format registered with `register_table_format`.
        table: the built table for inline tables, else None.
        meta: extra facts about the table (e.g. TCR-Bench's `render_format`).
    """

    key: str
    path: Path
    format: str
    table: Table | None = None
    meta: Mapping[str, str] = field(default_factory=dict)

    def load(self) -> Table:
        """Read (or return) the table.

        Raises:
            DatasetError: the file cannot be read as a table.
        """
        if self.table is not None:
            return self.table
        reader = _READERS.get(self.format)
        if reader is None:
            raise DatasetError(f"no reader for table format {self.format!r} ({self.key})")
        return reader(self)


@dataclass
class Dataset:
    """A loaded benchmark: its questions, its tables (lazily read) and loader notes.

    Attributes:
        name: the loader's name in `DATASETS` (or a derived name, e.g. `wtq+siblings3`).
        root: the benchmark folder.
        questions: the questions, in file order.
        table_refs: every table of the corpus by key (gold tables included).
        notes: what the loader kept, skipped or assumed.
        options: the loader options it was loaded with (`split`, `subset`, …), so the same
            benchmark can be loaded again with another `questions_file`.
        questions_file: the custom question file, or None for the benchmark's own.
    """

    name: str
    root: Path
    questions: list[Question]
    table_refs: dict[str, TableRef]
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    questions_file: Path | None = None

    def __len__(self) -> int:
        return len(self.questions)

    def table(self, key: str) -> Table:
        """The table with this key (raises KeyError naming the key)."""
        try:
            ref = self.table_refs[key]
        except KeyError:
            raise KeyError(f"{self.name}: no table {key!r}") from None
        return ref.load()

    def tables(self) -> Iterator[tuple[str, Table]]:
        """Yield (key, Table) for every table of the dataset, in a stable order."""
        for key, ref in self.table_refs.items():
            yield key, ref.load()


def require_dir(path: Path, what: str) -> Path:
    """Return `path` if it is a directory, else raise DatasetError naming `what`."""
    if not path.is_dir():
        raise DatasetError(f"{what}: directory not found: {str(path)!r}")
    return path


def require_file(path: Path, what: str) -> Path:
    """Return `path` if it is a file, else raise DatasetError naming `what`."""
    if not path.is_file():
        raise DatasetError(f"{what}: file not found: {str(path)!r}")
    return path


def question_source(
    root: Path, default: str, questions_file: Path | str | None
) -> tuple[Path, str]:
    """The question file to read and its name in messages: `root / default` (named `default`)
    or `questions_file` (named as given)."""
    if questions_file is None:
        return root / default, default
    return Path(questions_file), str(questions_file)


def parse_id_list(text: str) -> list[str] | None:
    """The ids of an id-list file, or None when `text` is a benchmark question file.

    An id list is one id per line (blank lines and `#` comments ignored) or a JSON list of ids
    (strings or numbers). A question file is recognised by its first character or line: `{`
    (a JSON object such as TabFact's, or JSON lines of objects), a JSON list of objects
    (TCR-Bench) or a tab in the first line (a TSV header such as WTQ's).

    Raises:
        ValueError: `text` starts with `[` but is not a JSON list of ids or of objects.
    """
    body = text.lstrip("\ufeff").strip()
    if body.startswith("{"):
        return None
    if body.startswith("["):
        try:
            items = json.loads(body)
        except ValueError:
            raise ValueError("is not a JSON list") from None
        if items and all(isinstance(i, dict) for i in items):
            return None
        if not all(isinstance(i, str | int | float) and not isinstance(i, bool) for i in items):
            raise ValueError("is a JSON list of neither ids nor question objects")
        return [str(i) for i in items]
    lines = [ln.strip() for ln in body.splitlines()]
    ids = [ln for ln in lines if ln and not ln.startswith("#")]
    if ids and "\t" in ids[0]:
        return None
    return ids


def merge_inline(
    questions: list[Question],
    refs: dict[str, TableRef],
    corpus: Mapping[str, TableRef],
    *,
    prefix: str,
    corpus_prefix: str,
) -> tuple[list[Question], dict[str, TableRef]]:
    """Join the inline tables of a custom question file to the benchmark's inline corpus.

    Custom tables are keyed `<prefix>#<id>`, the benchmark's `<corpus_prefix>#<id>`. A
    question whose table equals (same content) the benchmark's table of the same id is pointed
    at the benchmark's key, so a custom subset of the benchmark gets the benchmark's corpus and
    gold keys; any other table joins the corpus under its own key.

    Returns:
        The questions (gold keys remapped) and the corpus with the new tables.
    """
    merged = dict(corpus)
    out: list[Question] = []
    for q in questions:
        gold: list[str] = []
        for key in q.gold_table_ids:
            ref = refs[key]
            twin = None
            if key.startswith(f"{prefix}#"):
                twin = corpus.get(corpus_prefix + key.removeprefix(prefix))
            if twin is not None and _same_table(ref, twin):
                gold.append(twin.key)
            else:
                merged[key] = ref
                gold.append(key)
        out.append(replace(q, gold_table_ids=gold))
    return out, merged


def _same_table(a: TableRef, b: TableRef) -> bool:
    return (
        a.table is not None and b.table is not None and a.table.content_hash == b.table.content_hash
    )


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file, with errors naming the file."""
    require_file(path, what)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{what}: {str(path)!r} is not valid JSON: {exc}") from exc


def read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    """Parse a JSON-lines file of objects, with errors naming the file and line."""
    require_file(path, what)
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{what}: {path}:{lineno} is not valid JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise DatasetError(f"{what}: {path}:{lineno} is not a JSON object")
            rows.append(row)
    return rows


def require_keys(row: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    """Raise DatasetError if `row` is not an object or lacks any of `keys`."""
    if not isinstance(row, Mapping):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in keys if k not in row]
    if missing:
        raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")


def missing_summary(missing: list[str], limit: int = 5) -> str:
    """Format as `a, b, c (and 7 more)` for error messages."""
    head = ", ".join(missing[:limit])
    return head + (f" (and {len(missing) - limit} more)" if len(missing) > limit else "")


def unique_id(qid: str, seen: dict[str, int]) -> str:
    """Return `qid`, or `qid#2`, `qid#3`… when it was already used."""
    count = seen.get(qid, 0) + 1
    seen[qid] = count
    return qid if count == 1 else f"{qid}#{count}"


_FILE_FORMATS: dict[str, Format] = {"csv": "csv", "json": "json", "xlsx": "xlsx"}


def read_one_table(name: str, *, fmt: Format, data: bytes | None = None) -> Table:
    """First table of a file (or of `data`, named `name`) via the tablequest readers.

    Raises:
        DatasetError: the input holds no readable table.
    """
    from tablequest.table import UnreadableTable, read_tables

    try:
        return read_tables(name, format=fmt, data=data)[0]
    except UnreadableTable as exc:
        raise DatasetError(f"unreadable table {exc.path}: {exc.reason}") from exc


def _read_file(ref: TableRef) -> Table:
    return read_one_table(str(ref.path), fmt=_FILE_FORMATS[ref.format])


for _fmt in _FILE_FORMATS:
    register_table_format(_fmt, _read_file)
