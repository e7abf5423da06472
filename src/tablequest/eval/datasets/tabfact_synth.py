"""Synthetic TabFact: TabFact claims over their tables expanded to N×N (TableRAG §4.6, App. C).

What the paper fixes, and we follow: the sizes (50×50, 100×100, 500×500, 1000×1000, plus the
original tables: splits `50x50` … `1000x1000` and `original`; any `<rows>x<cols>` works too),
one claim per table (Table 7: 288 tables, 288 questions), the same claims and key table
content at every size (the original rows and columns are kept verbatim), scoring by accuracy.

What the paper does that we cannot, and our deterministic stand-in (no LM runs here):

- *LM-generated column names* → the names of columns of other TabFact tables (the donor
  pool: every `data/all_csv/*.csv`, sorted), drawn with a seeded RNG; a name already used in
  the table gets " 2", " 3", … appended.
- *LM-written sampling functions* → each new column samples its cells uniformly from its
  donor column's values (few distinct values per column, as Table 7's D column shows for the
  paper's tables).
- *validation by LM solution programs* (synthetic tables whose program answer changes are
  rejected) → we keep labels valid by construction where we can: `fill="blank"` (default)
  leaves the original columns empty in the new rows, so a claim about the original rows,
  counts of matching rows, extremes or averages over non-empty cells keeps its label; only
  claims about the last row or the number of rows can change. `fill="sample"` fills them by
  sampling each column's own values instead (closer to the paper's cell statistics), but
  without the paper's validation a count or superlative claim may then flip its label.

Choices where the paper is silent: the original rows come first and the new columns after the
original ones; a table already larger than the target keeps all its rows/columns; the claim
kept per table is drawn with the seed (`claims_per_table=0` keeps them all); `subset`
defaults to `small_test` (the paper's 288 tables are a sample of the test set it does not
name; TabFact's small_test has 298 tables); the corpus is the claims' tables only (TableRAG
is evaluated with the gold table). Every choice is seeded by `seed` and the table's name, so
a table is the same whichever others are loaded.

Keys: `data/all_csv/<name>@<rows>x<cols>` (`data/all_csv/<name>` for `original`); ids are
TabFact's (`<name>#<claim index>`); `extra` adds `synth_size` to TabFact's fields.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

from tablequest.eval.datasets.common import (
    Dataset,
    DatasetError,
    Question,
    TableRef,
    register_table_format,
)
from tablequest.eval.datasets.tabfact import TabFactSubset, load_tabfact
from tablequest.table import Source, Table

__all__ = ["PAPER_SIZES", "expand_table", "load_tabfact_synth", "parse_size"]

PAPER_SIZES: tuple[str, ...] = ("original", "50x50", "100x100", "500x500", "1000x1000")
"""The splits of TableRAG's Fig. 4 / Table 7."""

Fill = Literal["blank", "sample"]
_SIZE = re.compile(r"^(\d+)x(\d+)$")
_FORMAT = "tabfact_synth"
_Donor = tuple[str, str, tuple[str, ...]]  # (table name, column name, body values)


def parse_size(split: str) -> tuple[int, int] | None:
    """(rows, cols) of a split like "50x50" (`1k` = 1000), None for "original".

    Raises:
        DatasetError: the split is neither "original" nor `<rows>x<cols>` of positive sizes.
    """
    if split == "original":
        return None
    match = _SIZE.match(split.lower().replace("1k", "1000"))
    if match is None or min(int(match[1]), int(match[2])) < 1:
        raise DatasetError(
            f"tabfact-synth: unknown split {split!r}; use one of {', '.join(PAPER_SIZES)} "
            "or <rows>x<cols>"
        )
    return int(match[1]), int(match[2])


def _hash_rows(text: str) -> list[list[str]]:
    return [line.rstrip("\r").split("#") for line in text.split("\n") if line.strip()]


@lru_cache(maxsize=4)
def _donors(csv_dir: str) -> tuple[_Donor, ...]:
    """Every column (with its body values) of every table in `csv_dir`, in name order."""
    donors: list[_Donor] = []
    for path in sorted(Path(csv_dir).glob("*.csv")):
        rows = _hash_rows(path.read_text(encoding="utf-8", errors="replace"))
        if len(rows) < 2:
            continue
        for j, name in enumerate(rows[0]):
            values = tuple(r[j] for r in rows[1:] if j < len(r) and r[j].strip())
            if name.strip() and values:
                donors.append((path.name, name.strip(), values))
    return tuple(donors)


def _unique(name: str, used: set[str]) -> str:
    candidate, k = name, 1
    while candidate.lower() in used:
        k += 1
        candidate = f"{name} {k}"
    used.add(candidate.lower())
    return candidate


def expand_table(
    rows: list[list[str]],
    *,
    size: tuple[int, int],
    donors: tuple[_Donor, ...],
    rng: random.Random,
    fill: Fill = "blank",
    exclude: str = "",
) -> list[list[str]]:
    """Grow a table (header first) to at least `size` = (body rows, columns) (module doc).

    Raises:
        DatasetError: new columns are needed and no donor column comes from another table.
    """
    header, body = rows[0], [r + [""] * (len(rows[0]) - len(r)) for r in rows[1:]]
    n_rows, n_cols = max(size[0], len(body)), max(size[1], len(header))
    pool = [d for d in donors if d[0] != exclude]
    if n_cols > len(header) and not pool:
        raise DatasetError(f"tabfact-synth: no donor columns outside {exclude!r}")
    used = {h.lower() for h in header}
    new_names: list[str] = []
    new_values: list[tuple[str, ...]] = []
    for _ in range(n_cols - len(header)):
        _, name, values = rng.choice(pool)
        new_names.append(_unique(name, used))
        new_values.append(values)
    own = [tuple(r[j] for r in body if r[j].strip()) for j in range(len(header))]
    grown = [list(r) for r in body]
    for _ in range(n_rows - len(body)):
        if fill == "sample":
            grown.append([rng.choice(v) if v else "" for v in own])
        else:
            grown.append([""] * len(header))
    for row in grown:
        row.extend(rng.choice(v) for v in new_values)
    return [list(header) + new_names, *grown]


def _read_synth(ref: TableRef) -> Table:
    meta = ref.meta
    try:
        text = ref.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"tabfact-synth: cannot read table {str(ref.path)!r}: {exc}") from exc
    rows = _hash_rows(text)
    if not rows:
        raise DatasetError(f"tabfact-synth: empty table {str(ref.path)!r}")
    size = (int(meta["rows"]), int(meta["cols"]))
    rng = random.Random(f"tabfact-synth:{meta['seed']}:{ref.path.name}:{size[0]}x{size[1]}")
    grid = expand_table(
        rows,
        size=size,
        donors=_donors(str(ref.path.parent)),
        rng=rng,
        fill="sample" if meta["fill"] == "sample" else "blank",
        exclude=ref.path.name,
    )
    source = Source(path=str(ref.path), format="csv")
    return Table.from_rows(grid, title=meta.get("caption") or None, source=source)


register_table_format(_FORMAT, _read_synth)


def _pick_claims(questions: list[Question], per_table: int, seed: int) -> list[Question]:
    """`per_table` claims of each table (all when 0), drawn with `seed`; file order kept."""
    if per_table == 0:
        return questions
    by_table: dict[str, list[Question]] = {}
    for q in questions:
        by_table.setdefault(q.gold_table_ids[0], []).append(q)
    keep: set[str] = set()
    for key, claims in by_table.items():
        rng = random.Random(f"tabfact-synth-claims:{seed}:{key}")
        keep.update(q.id for q in rng.sample(claims, min(per_table, len(claims))))
    return [q for q in questions if q.id in keep]


def load_tabfact_synth(
    root: Path | str,
    split: str = "50x50",
    *,
    subset: TabFactSubset = "small_test",
    seed: int = 0,
    fill: Fill = "blank",
    claims_per_table: int = 1,
    questions_file: Path | str | None = None,
) -> Dataset:
    """Load TabFact claims over tables synthetically expanded to `split` (see module doc).

    Args:
        root: the TabFact folder (as for `load_tabfact`).
        split: "original", "50x50", "100x100", "500x500", "1000x1000" or `<rows>x<cols>`.
        subset: which TabFact claims to start from.
        seed: seeds every random choice (claims kept, donor columns, sampled cells).
        fill: what the original columns hold in the new rows: "blank" or "sample".
        claims_per_table: claims kept per table (the paper: 1); 0 keeps all.
        questions_file: claims from this file (the shape of `test_examples.json`).

    Raises:
        DatasetError: a bad option, or TabFact's files are missing or malformed.
    """
    size = parse_size(split)
    if fill not in ("blank", "sample"):
        raise DatasetError(f"tabfact-synth: fill must be 'blank' or 'sample', not {fill!r}")
    if claims_per_table < 0:
        raise DatasetError("tabfact-synth: claims_per_table must be >= 0")
    base = load_tabfact(root, subset, questions_file=questions_file)
    questions = _pick_claims(base.questions, claims_per_table, seed)
    refs: dict[str, TableRef] = {}
    out: list[Question] = []
    for q in questions:
        old = base.table_refs[q.gold_table_ids[0]]
        key = old.key if size is None else f"{old.key}@{size[0]}x{size[1]}"
        if key not in refs:
            meta = dict(old.meta)
            if size is not None:
                meta |= {"rows": str(size[0]), "cols": str(size[1])}
                meta |= {"seed": str(seed), "fill": fill}
            refs[key] = TableRef(key, old.path, old.format if size is None else _FORMAT, meta=meta)
        out.append(replace(q, gold_table_ids=[key], extra={**q.extra, "synth_size": split}))
    return Dataset(
        name="tabfact-synth",
        root=base.root,
        questions=out,
        table_refs=refs,
        notes=[*base.notes, f"{len(out)} claims on {len(refs)} tables expanded to {split}"],
        options={
            "split": split,
            "subset": subset,
            "seed": seed,
            "fill": fill,
            "claims_per_table": claims_per_table,
        },
        questions_file=base.questions_file,
    )
