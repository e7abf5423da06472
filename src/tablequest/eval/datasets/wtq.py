"""WikiTableQuestions 1.0.2 loader (questions TSV, tables as CSV, `targetCanon` if tagged).

Layout under `root`: `data/<split>.tsv` (columns id, utterance, context, targetValue),
`csv/20x-csv/N.csv` (plus `.html` and `.table` renderings) and, for the official evaluator,
`tagged/data/<split>.tagged` (upstream layout; `tagged/<split>.tagged` is accepted too) with
`targetCanon`. Fields are TSV-unescaped (`\\n` newline, `\\p` pipe, `\\\\` backslash) and list
answers split on `|`, as in the official evaluator. The dataset's tables are *all* CSV tables
under `csv/` (the WTQ corpus), not just the split's gold tables.

A custom question file (`questions_file=`) is a TSV with the same header; its questions get
`targetCanon` only where the id is in a tagged file with the same `targetValue`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    missing_summary,
    require_dir,
    require_file,
)

__all__ = ["SPLITS", "load_wtq", "tsv_unescape", "tsv_unescape_list"]

WtqSplit = Literal["pristine-unseen-tables", "training", "all"]
SPLITS: tuple[str, ...] = ("pristine-unseen-tables", "training")
_COLUMNS = ("id", "utterance", "context", "targetValue")


def tsv_unescape(text: str) -> str:
    """Undo WTQ TSV escaping (same order as the official evaluator)."""
    return text.replace(r"\n", "\n").replace(r"\p", "|").replace("\\\\", "\\")


def tsv_unescape_list(text: str) -> list[str]:
    """Split a `|`-joined TSV field into unescaped items."""
    return [tsv_unescape(item) for item in text.split("|")]


def _read_tsv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].rstrip("\r").split("\t")
    missing = [c for c in required if c not in header]
    if missing:
        raise DatasetError(f"WTQ: {str(path)!r} lacks column(s) {', '.join(missing)}")
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DatasetError(
                f"WTQ: {path}:{lineno} has {len(fields)} fields, the header has {len(header)}"
            )
        rows.append(dict(zip(header, fields, strict=True)))
    return rows


def _tagged_path(root: Path, split: str) -> Path | None:
    for candidate in (root / "tagged" / "data", root / "tagged"):
        path = candidate / f"{split}.tagged"
        if path.is_file():
            return path
    return None


# id -> (targetValue as written, targetCanon values, targetCanonType)
_Canon = dict[str, tuple[str, list[str], str]]


def _canon(root: Path, split: str, notes: list[str]) -> _Canon:
    path = _tagged_path(root, split)
    if path is None:
        notes.append(f"{split}: no tagged file, targetCanon unavailable")
        return {}
    out = {}
    for row in _read_tsv(path, ("id", "targetValue", "targetCanon")):
        out[row["id"]] = (
            row["targetValue"],
            tsv_unescape_list(row["targetCanon"]),
            row.get("targetCanonType", ""),
        )
    notes.append(f"{split}: targetCanon from {path.relative_to(root)} ({len(out)} ids)")
    return out


def _read_questions(path: Path, canon: _Canon, split: str, notes: list[str]) -> list[Question]:
    """Questions of one WTQ TSV; `targetCanon` from `canon` for ids tagged with the same
    `targetValue` (and as many canonical values as answers)."""
    questions: list[Question] = []
    bad_canon = 0
    for row in _read_tsv(path, _COLUMNS):
        answers = tsv_unescape_list(row["targetValue"])
        extra: dict[str, Any] = {"split": split}
        value, values, kind = canon.get(row["id"], (None, [], ""))
        if value == row["targetValue"]:
            if len(values) == len(answers):
                extra["target_canon"] = values
                extra["target_canon_type"] = kind
            else:
                bad_canon += 1
        questions.append(
            Question(
                id=row["id"],
                question=tsv_unescape(row["utterance"]),
                answers=answers,
                gold_table_ids=[row["context"]],
                task="tableqa",
                extra=extra,
            )
        )
    if bad_canon:
        notes.append(f"{split}: {bad_canon} targetCanon lists differ in length; ignored")
    return questions


def _corpus(root: Path) -> dict[str, TableRef]:
    csv_root = require_dir(root / "csv", "WTQ tables")
    refs: dict[str, TableRef] = {}
    for path in sorted(csv_root.glob("*-csv/*.csv"), key=_table_sort_key):
        key = path.relative_to(root).as_posix()
        meta = {
            name: path.with_suffix(ext).relative_to(root).as_posix()
            for name, ext in (("html", ".html"), ("markdown", ".table"))
            if path.with_suffix(ext).is_file()
        }
        refs[key] = TableRef(key=key, path=path, format="csv", meta=meta)
    if not refs:
        raise DatasetError(f"WTQ: no tables matching csv/*-csv/*.csv under {str(root)!r}")
    return refs


def _table_sort_key(path: Path) -> tuple[str, int, str]:
    stem = path.stem
    return (path.parent.name, int(stem) if stem.isdigit() else -1, stem)


def load_wtq(
    root: Path | str,
    split: WtqSplit = "pristine-unseen-tables",
    *,
    questions_file: Path | str | None = None,
) -> Dataset:
    """Load WTQ questions of `split` ("pristine-unseen-tables", "training" or "all").

    Args:
        root: the WTQ folder.
        split: which of the benchmark's question files to read.
        questions_file: read the questions from this TSV instead (same columns as
            `data/<split>.tsv`; `split` is then unused). `targetCanon` comes from the tagged
            files of the benchmark's splits for ids tagged with the same `targetValue`.

    Raises:
        DatasetError: the root, a questions file, the tables or a gold table is missing.
    """
    root = require_dir(Path(root), "WTQ root")
    if split not in (*SPLITS, "all"):
        raise DatasetError(f"WTQ: unknown split {split!r}; use one of {', '.join(SPLITS)}, all")
    notes: list[str] = []
    refs = _corpus(root)
    if questions_file is None:
        names = SPLITS if split == "all" else (split,)
        sources = [f"data/{name}.tsv" for name in names]
        questions: list[Question] = []
        for name, rel in zip(names, sources, strict=True):
            path = require_file(root / rel, f"WTQ {name} questions")
            questions += _read_questions(path, _canon(root, name, notes), name, notes)
    else:
        path = require_file(Path(questions_file), "WTQ questions")
        sources = [str(questions_file)]
        canon: _Canon = {}
        for name in SPLITS:
            canon.update(_canon(root, name, notes))
        questions = _read_questions(path, canon, path.stem, notes)
        tagged = sum("target_canon" in q.extra for q in questions)
        notes.append(f"questions from {path}; targetCanon for {tagged} of {len(questions)}")
    missing = sorted({q.gold_table_ids[0] for q in questions} - refs.keys())
    if missing:
        raise DatasetError(
            f"WTQ: {len(missing)} gold table(s) missing under {str(root)!r} (questions of "
            f"{', '.join(sources)}): " + missing_summary(missing)
        )
    notes.append(f"{len(questions)} questions, {len(refs)} tables")
    return Dataset(
        name="wtq",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"split": split},
        questions_file=None if questions_file is None else Path(questions_file),
    )
