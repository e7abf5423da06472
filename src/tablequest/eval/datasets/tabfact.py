"""TabFact loader: test claims (`tokenized_data/test_examples.json`) + `#`-separated tables.

`test_examples.json` maps a table file name to `[claims, labels, caption]` (label 1 =
entailed, 0 = refuted). Tables are `data/all_csv/<name>`: UTF-8, `#` between cells, no
quoting, first row = header. Answers are "true" / "false"; `extra["label"]` keeps 1 / 0.
Question ids are `<table name>#<claim index>` (the release has no claim ids).

`subset` keeps the claims of the official subsets listed in `data/<subset>_id.json`
(`small_test`, `simple_test`, `complex_test`); the tables stay the full test corpus, as in
TARGET-TabFact's corpus of all test tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    missing_summary,
    read_json,
    register_reader,
    require_dir,
)
from tablequest.table.model import Source, Table

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


register_reader("tabfact_csv", _read_hash_csv)


def load_tabfact(root: Path | str, subset: TabFactSubset = "test") -> Dataset:
    """Load the TabFact test claims (optionally one official subset) and test tables.

    Raises:
        DatasetError: the examples file, a subset id file or a table file is missing or
            malformed.
    """
    root = require_dir(Path(root), "TabFact root")
    examples = read_json(root / "tokenized_data" / "test_examples.json", "TabFact test claims")
    if not isinstance(examples, dict) or not examples:
        raise DatasetError("TabFact: test_examples.json must map table names to examples")
    keep: set[str] | None = None
    if subset != "test":
        ids = read_json(root / "data" / f"{subset}_id.json", f"TabFact {subset} ids")
        if not isinstance(ids, list):
            raise DatasetError(f"TabFact: data/{subset}_id.json must be a list of table names")
        keep = {str(i) for i in ids}
    csv_dir = require_dir(root / "data" / "all_csv", "TabFact tables")
    refs: dict[str, TableRef] = {}
    questions: list[Question] = []
    missing: list[str] = []
    for name, entry in examples.items():
        if not (isinstance(entry, list) and len(entry) == 3 and len(entry[0]) == len(entry[1])):
            raise DatasetError(f"TabFact: entry {name!r} is not [claims, labels, caption]")
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
            f"TabFact: {len(missing)} table file(s) missing in {str(csv_dir)!r}: "
            + missing_summary(missing)
        )
    notes = [f"{len(questions)} claims ({subset}), {len(refs)} tables"]
    return Dataset(name="tabfact", root=root, questions=questions, table_refs=refs, notes=notes)
