"""DTR header-path correctness: do the meta graph's header paths agree with HiTab's header trees?

For every HiTab table of a split, the table is read by the tablequest JSON reader (which ignores
HiTab's header trees) and its meta graph is built (LLM-free). Each data cell, i.e. each pair
(leaf of HiTab's left tree, leaf of its top tree), is compared on both axes: our row-header
path against the labels on the left-tree path to that row, our column-header path against the
top-tree path to that column (labels compared after collapsing whitespace and lower-casing).
A cell agrees when both paths are equal. The meta graph never reads the header trees.

Two readings of each table (``--no-annotation`` picks the second):

- **With HiTab's layout annotation** (the default). The reader takes the stub columns from
  HiTab's ``left_header_columns_num`` and bounds its header rows by ``top_header_rows_num``
  (jsonfmt.py); DTR extends the stub only where the annotation leaves it short.
- **Without it.** Both keys are removed before reading, so the reader gives one header row and
  no stub columns; DTR infers the header rows and the stub columns from the sheet alone
  (`tablequest.methods.research.header`).

Two HiTab conventions are normalised; the strict figures (printed beside them) score every
pair:

- **Rows without data.** HiTab keeps section and note rows ("defenders", "sources:", a label
  over a merged blank row) as left-tree leaves even when the row holds no value in any data
  column (a top-tree leaf outside the left tree's columns). Such a row has no data cell, so its
  pairs are skipped (442 of 69,321 test pairs, in 39 tables).
- **Flat ToTTo left trees.** HiTab built the left trees of its ToTTo (Wikipedia) tables from
  each row's own cells: none of the 278 ToTTo test tables puts a row under a label of another
  row, and their full-width section rows ("goalkeepers", "career") are leaves. For these
  tables the labels our path takes from section rows (and from a section row the reader took
  for the last header row) are dropped before comparing: 116 rows of 8 test tables. Labels of
  additive parents and the row's own stub cells are still compared. StatCan and NSF trees do
  nest rows under section rows (591 of 608 stub-labelled rows without data are parents), so
  their paths are compared whole.

Splits: ``--split test`` (default) reads ``ROOT/data/test_samples.jsonl`` (the shared data
holds the test split only). ``--split train`` reads ``ROOT/data/train_samples.jsonl`` or, when
it is absent, the question shards ``ROOT/data/processed_input/no_split/*.jsonl`` (their
``context`` is the table id; a table is ToTTo when its id says "totto"). Every heuristic of
the header inference was chosen on the train split (2,519 tables); the test split is only
measured. A train root, from HiTab's repository (the tables were zipped after commit 469b5c7)::

    git clone https://github.com/microsoft/HiTab /tmp/HiTab
    git -C /tmp/HiTab checkout 469b5c7 -- data/tables/raw
    python benchmarks/dtr_header_paths.py /tmp/HiTab --split train --no-annotation

Usage: python benchmarks/dtr_header_paths.py [ROOT] [--split test|train|dev] [--no-annotation]
[--show N]. Default root: ../shared/data/hitab.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tablequest.methods.research.meta import MetaGraph, build_meta_graph
from tablequest.table import Table
from tablequest.table.readers.jsonfmt import parse_json_value

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "hitab"
ANNOTATION = ("left_header_columns_num", "top_header_rows_num")
TREES = ("top_root", "left_root")


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def tree_paths(
    root: dict[str, Any], texts: list[list[str]], key: str
) -> dict[int, tuple[str, ...]]:
    """Leaf index (row for the left tree, column for the top tree) → labels from the root."""
    out: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        (child, ()) for child in root.get("children", [])
    ]
    while stack:
        node, prefix = stack.pop()
        label = _norm(str(texts[node["row_index"]][node["column_index"]]))
        path = (*prefix, label) if label else prefix
        children = node.get("children") or []
        if not children:
            out[int(node[key])] = path
        stack.extend((child, path) for child in children)
    return out


def _tree_columns(root: dict[str, Any]) -> set[int]:
    """Grid columns that hold a node of the tree (the left tree's stub columns)."""
    out: set[int] = set()
    stack = list(root.get("children") or [])
    while stack:
        node = stack.pop()
        out.add(int(node["column_index"]))
        stack.extend(node.get("children") or [])
    return out


def read_hitab(raw: dict[str, Any], *, annotation: bool = True) -> Table:
    """The table as the JSON reader reads it; without the header trees (and the annotation)."""
    drop = TREES if annotation else TREES + ANNOTATION
    return parse_json_value({k: v for k, v in raw.items() if k not in drop})[0]


def our_row_paths(graph: MetaGraph, *, flat: bool) -> dict[int, tuple[str, ...]]:
    """Body row → our row path; `flat` drops the labels that come from section rows."""
    layout = graph.layout
    if not flat:
        return {r: tuple(_norm(x) for x in p) for r, p in graph.row_path.items()}
    sections = {labels[-1] for labels in layout.section_rows.values() if labels}
    if layout.unit_header_row is not None:  # a section row the reader took for a header row
        sections.update(graph.table.cells[layout.unit_header_row])
    out: dict[int, tuple[str, ...]] = {}
    for r in graph.row_path:
        above = tuple(x for x in layout.section_of.get(r, ()) if x not in sections)
        out[r] = tuple(_norm(x) for x in (*above, *layout.stub_labels.get(r, ())))
    return out


def compare(
    path: Path, *, source: str = "", annotation: bool = True
) -> tuple[Counter[str], list[str]]:
    """Counts per mode ("cells", "rows", "cols", "both"; strict ones prefixed "strict_",
    "skipped") and examples of normalised disagreement."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    texts = raw["texts"]
    rows = tree_paths(raw["left_root"], texts, "row_index")
    cols = tree_paths(raw["top_root"], texts, "column_index")
    graph = build_meta_graph(read_hitab(raw, annotation=annotation))
    head = graph.n_header_rows
    strict_rows = our_row_paths(graph, flat=False)
    normal_rows = our_row_paths(graph, flat=True) if source == "totto" else strict_rows
    ours_cols = {c: tuple(_norm(x) for x in p) for c, p in graph.col_path.items()}
    ok_cols = {c: ours_cols.get(c) == gold for c, gold in cols.items()}
    counts: Counter[str] = Counter()
    bad: list[str] = []
    data_cols = set(cols) - _tree_columns(raw["left_root"])
    for r, gold_row in rows.items():
        ok_strict = strict_rows.get(r - head) == gold_row
        counts.update(
            strict_cells=len(cols),
            strict_rows=len(cols) * ok_strict,
            strict_cols=sum(ok_cols.values()),
            strict_both=sum(ok_strict and ok for ok in ok_cols.values()),
        )
        if not any(str(texts[r][c]).strip() for c in data_cols):
            counts["skipped"] += len(cols)
            continue
        mine_row = normal_rows.get(r - head)
        ok_r = mine_row == gold_row
        counts.update(
            cells=len(cols),
            rows=len(cols) * ok_r,
            cols=sum(ok_cols.values()),
            both=sum(ok_r and ok for ok in ok_cols.values()),
        )
        for c, gold_col in cols.items():
            if not (ok_r and ok_cols[c]) and len(bad) < 2:
                bad.append(
                    f"{path.name} ({r},{c}): row {mine_row} vs {gold_row}; "
                    f"col {ours_cols.get(c)} vs {gold_col}"
                )
    return counts, bad


def split_tables(root: Path, split: str) -> dict[str, str]:
    """Table id → source ("totto", "statcan", "nsf" or "") of the split's questions."""
    samples = root / "data" / f"{split}_samples.jsonl"
    files = [samples] if samples.exists() else []
    if not files and split == "train":  # HiTab's question shards (train_samples is over 1 MB)
        files = sorted((root / "data" / "processed_input" / "no_split").glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no {split} questions under {root / 'data'} (see --help)")
    out: dict[str, str] = {}
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                tid = str(item.get("table_id") or item["context"])
                out[tid] = str(item.get("table_source") or ("totto" if "totto" in tid else ""))
    return out


def _report(totals: Counter[str], prefix: str, label: str) -> None:
    cells = totals[prefix + "cells"] or 1
    print(f"  {label} ({totals[prefix + 'cells']:,} pairs)")
    print(f"    row (left) paths agree:     {100 * totals[prefix + 'rows'] / cells:.2f}%")
    print(f"    column (top) paths agree:   {100 * totals[prefix + 'cols'] / cells:.2f}%")
    print(f"    both paths agree:           {100 * totals[prefix + 'both'] / cells:.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--split", default="test", choices=("test", "train", "dev"))
    parser.add_argument(
        "--no-annotation",
        action="store_true",
        help="drop HiTab's left_header_columns_num and top_header_rows_num (DTR infers both)",
    )
    parser.add_argument("--show", type=int, default=0, help="print N disagreeing tables")
    args = parser.parse_args()
    sources = split_tables(args.root, args.split)
    totals: Counter[str] = Counter()
    tables_ok = 0
    shown: list[str] = []
    start = time.perf_counter()
    for tid in sorted(sources):
        raw = args.root / "data" / "tables" / "raw" / f"{tid}.json"
        counts, bad = compare(raw, source=sources[tid], annotation=not args.no_annotation)
        totals.update(counts)
        tables_ok += counts["both"] == counts["cells"]
        if bad and len(shown) < args.show:
            shown.extend(bad[:1])
    seconds = time.perf_counter() - start
    mode = "without" if args.no_annotation else "with"
    print(
        f"HiTab {args.split} tables: {len(sources)}, {mode} HiTab's layout annotation "
        f"({seconds:.1f} s)"
    )
    _report(totals, "", f"normalised, {totals['skipped']:,} pairs in rows without data skipped")
    _report(totals, "strict_", "strict")
    print(f"  tables with every cell agreeing (normalised): {tables_ok}/{len(sources)}")
    for line in shown:
        print("  " + line)


if __name__ == "__main__":
    main()
