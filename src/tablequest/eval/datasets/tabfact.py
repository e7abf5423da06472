"""TabFact loader: test claims (`tokenized_data/test_examples.json`) + `#`-separated tables.

`test_examples.json` maps a table file name to `[claims, labels, caption]` (label 1 =
entailed, 0 = refuted). Tables are `data/all_csv/<name>`: UTF-8, `#` between cells, no
quoting, first row = header. Answers are "true" / "false"; `extra["label"]` keeps 1 / 0.
Question ids are `<table name>#<claim index>` (the release has no claim ids), the index
counted in the file read.

`subset` keeps the claims of the official subsets listed in `data/<subset>_id.json`
(`small_test`, `simple_test`, `complex_test`); the tables stay the full test corpus, as in
TARGET-TabFact's corpus of all test tables.

A custom question file (`questions_file=`) has the shape of `test_examples.json`; its claims
replace the test claims (`subset` is then unused), their tables must be in `data/all_csv/`,
and the corpus stays the test tables (plus any other table the file's claims use).
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
    read_json,
    register_table_format,
    require_dir,
)
from tablequest.table import Source, Table

__all__ = ["load_tabfact", "parse_hash_csv"]

TabFactSubset = Literal["test", "small_test", "simple_test", "complex_test"]


def parse_hash_csv(text: str, *, path: str | None = None, title: str | None = None) -> Table:
    """Build a table from TabFact's `#`-separated text (first row = header)."""
    rows = [line.rstrip("\r").split("#") for line in text.split("\n") if line.strip()]
    if not rows:
        raise DatasetError(f"TabFact: empty table {path!r}")
    return Table.from_rows(rows, title=title, source=Source(path=path, format="csv"))


def _read_hash_csv(ref: TableRef) -> Table:
    try:
        text = ref.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"TabFact: cannot read table {str(ref.path)!r}: {exc}") from exc
    return parse_hash_csv(text, path=str(ref.path), title=ref.meta.get("caption") or None)


register_table_format("tabfact_csv", _read_hash_csv)


_EXAMPLES = "tokenized_data/test_examples.json"


def _read_claims(
    examples: Any, source: str, csv_dir: Path, keep: set[str] | None
) -> tuple[list[Question], dict[str, TableRef]]:
    """Claims and tables of one examples object ({table name: [claims, labels, caption]}),
    claims only of the tables in `keep` (when given).

    Raises:
        DatasetError: the object is malformed or a table file is missing.
    """
    if not isinstance(examples, dict) or not examples:
        raise DatasetError(f"TabFact: {source} must map table names to examples")
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    missing: list[str] = []
    for name, entry in examples.items():
        if not (isinstance(entry, list) and len(entry) == 3 and len(entry[0]) == len(entry[1])):
            raise DatasetError(
                f"TabFact: entry {name!r} of {source} is not [claims, labels, caption]"
            )
        claims, labels, caption = entry
        path = csv_dir / name
        if not path.is_file():
            missing.append(name)
            continue
        key = f"data/all_csv/{name}"
        refs[key] = TableRef(key, path, "tabfact_csv", meta={"caption": str(caption)})
        if keep is not None and name not in keep:
            continue
        for i, (claim, label) in enumerate(zip(claims, labels, strict=True)):
            if label not in (0, 1):
                raise DatasetError(f"TabFact: label {label!r} of {name}#{i} is not 0 or 1")
            questions.append(
                Question(
                    id=f"{name}#{i}",
                    question=str(claim),
                    answers=["true" if label == 1 else "false"],
                    gold_table_ids=[key],
                    task="fact_verification",
                    extra={"label": int(label), "caption": str(caption)},
                )
            )
    if missing:
        raise DatasetError(
            f"TabFact: {len(missing)} table file(s) missing in {str(csv_dir)!r} (named in "
            f"{source}): " + missing_summary(missing)
        )
    return questions, refs


def _subset_ids(root: Path, subset: str) -> set[str] | None:
    if subset == "test":
        return None
    ids = read_json(root / "data" / f"{subset}_id.json", f"TabFact {subset} ids")
    if not isinstance(ids, list):
        raise DatasetError(f"TabFact: data/{subset}_id.json must be a list of table names")
    return {str(i) for i in ids}


def load_tabfact(
    root: Path | str,
    subset: TabFactSubset = "test",
    *,
    questions_file: Path | str | None = None,
) -> Dataset:
    """Load the TabFact test claims (optionally one official subset) and test tables.

    Args:
        root: the TabFact folder.
        subset: "test" or an official subset of its claims.
        questions_file: read the claims from this file instead (the shape of
            `test_examples.json`); the corpus stays the test tables.

    Raises:
        DatasetError: the examples file, a subset id file or a table file is missing or
            malformed.
    """
    root = require_dir(Path(root), "TabFact root")
    examples = read_json(root / _EXAMPLES, "TabFact test claims")
    custom = None
    if questions_file is not None:
        custom = read_json(Path(questions_file), "TabFact claims")
    keep = _subset_ids(root, subset) if custom is None else None
    csv_dir = require_dir(root / "data" / "all_csv", "TabFact tables")
    questions, refs = _read_claims(examples, _EXAMPLES, csv_dir, keep)
    notes = []
    if custom is not None:
        questions, gold_refs = _read_claims(custom, str(questions_file), csv_dir, None)
        refs |= {k: ref for k, ref in gold_refs.items() if k not in refs}  # keep test captions
        notes.append(f"claims from {questions_file}")
    notes.append(
        f"{len(questions)} claims ({subset if custom is None else 'custom'}), {len(refs)} tables"
    )
    return Dataset(
        name="tabfact",
        root=root,
        questions=questions,
        table_refs=refs,
        notes=notes,
        options={"subset": subset},
        questions_file=None if questions_file is None else Path(questions_file),
    )
