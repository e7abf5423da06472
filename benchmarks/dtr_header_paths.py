"""DTR header-path correctness: do the meta graph's header paths agree with HiTab's header trees?

For every HiTab test table, the table is read by the tablequest JSON reader (which ignores
HiTab's header trees) and its meta graph is built (LLM-free). Each data cell, i.e. each pair
(leaf of HiTab's left tree, leaf of its top tree), is compared on both axes: our row-header
path against the labels on the left-tree path to that row, our column-header path against the
top-tree path to that column (labels compared after collapsing whitespace and lower-casing).
A cell agrees when both paths are equal. The meta graph never reads the header trees; the
reader does take its number of header rows from the depth of HiTab's top tree (jsonfmt.py,
``_tree_depth``), which is worth 0.3 points here (a reader rule from merges and year rows
alone scores 95.30% instead of 95.61% on both paths).

Two HiTab conventions are normalised (``--strict`` turns both off and scores every pair):

- **Rows without data.** HiTab keeps section and note rows ("defenders", "sources:", a label
  over a merged blank row) as left-tree leaves even when the row holds no value in any data
  column (a top-tree leaf outside the left tree's columns). Such a row has no data cell, so its
  pairs are skipped (442 of 69,321 pairs, in 39 tables).
- **Flat ToTTo left trees.** HiTab built the left trees of its ToTTo (Wikipedia) tables from
  each row's own cells: none of the 278 ToTTo test tables puts a row under a label of another
  row, and their full-width section rows ("goalkeepers", "career") are leaves. For these
  tables the labels our path takes from section rows (and from a section row the reader took
  for the last header row) are dropped before comparing: 116 rows of 8 tables. Labels of
  additive parents and the row's own stub cells are still compared. StatCan and NSF trees do
  nest rows under section rows (591 of 608 stub-labelled rows without data are parents), so
  their paths are compared whole.

Usage: python benchmarks/dtr_header_paths.py [HITAB_ROOT] [--show N] [--strict]
Default root: ../shared/data/hitab.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tablequest.methods.research.meta import MetaGraph, build_meta_graph
from tablequest.table import read_tables

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "hitab"


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
    path: Path, *, source: str = "", strict: bool = False
) -> tuple[Counter[str], list[str]]:
    """Counts (cells, rows, cols, both agreeing, skipped) and examples of disagreement."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    texts = raw["texts"]
    rows = tree_paths(raw["left_root"], texts, "row_index")
    cols = tree_paths(raw["top_root"], texts, "column_index")
    graph = build_meta_graph(read_tables(path)[0])
    head = graph.n_header_rows
    ours_rows = our_row_paths(graph, flat=source == "totto" and not strict)
    ours_cols = {c: tuple(_norm(x) for x in p) for c, p in graph.col_path.items()}
    counts: Counter[str] = Counter()
    bad: list[str] = []
    data_cols = set(cols) - _tree_columns(raw["left_root"])
    for r, gold_row in rows.items():
        if not strict and not any(str(texts[r][c]).strip() for c in data_cols):
            counts["skipped"] += len(cols)
            continue
        mine_row = ours_rows.get(r - head)
        for c, gold_col in cols.items():
            ok_r, ok_c = mine_row == gold_row, ours_cols.get(c) == gold_col
            counts.update(cells=1, rows=ok_r, cols=ok_c, both=ok_r and ok_c)
            if not (ok_r and ok_c) and len(bad) < 2:
                bad.append(
                    f"{path.name} ({r},{c}): row {mine_row} vs {gold_row}; "
                    f"col {ours_cols.get(c)} vs {gold_col}"
                )
    return counts, bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--show", type=int, default=0, help="print N disagreeing tables")
    parser.add_argument("--strict", action="store_true", help="no normalisation (see above)")
    args = parser.parse_args()
    samples = args.root / "data" / "test_samples.jsonl"
    lines = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    sources = {str(s["table_id"]): str(s.get("table_source", "")) for s in lines}
    totals: Counter[str] = Counter()
    tables_ok = 0
    shown: list[str] = []
    start = time.perf_counter()
    for tid in sorted(sources):
        raw = args.root / "data" / "tables" / "raw" / f"{tid}.json"
        counts, bad = compare(raw, source=sources[tid], strict=args.strict)
        totals.update(counts)
        tables_ok += counts["both"] == counts["cells"]
        if bad and len(shown) < args.show:
            shown.extend(bad[:1])
    seconds = time.perf_counter() - start
    cells = totals["cells"] or 1
    mode = "strict" if args.strict else f"{totals['skipped']:,} pairs in rows without data skipped"
    print(f"HiTab test tables: {len(sources)}, data cells: {totals['cells']:,} ({seconds:.1f} s)")
    print(f"  ({mode})")
    print(f"row-header paths agree:    {100 * totals['rows'] / cells:.2f}%")
    print(f"column-header paths agree: {100 * totals['cols'] / cells:.2f}%")
    print(f"both paths agree:          {100 * totals['both'] / cells:.2f}%  (goal >= 95%)")
    print(f"tables with every cell agreeing: {tables_ok}/{len(sources)}")
    for line in shown:
        print("  " + line)


if __name__ == "__main__":
    main()
