"""DTR header-path correctness: do the meta graph's header paths agree with HiTab's header trees?

For every HiTab test table, the table is read by the tablequest JSON reader (which ignores
HiTab's header trees) and its meta graph is built (LLM-free). Each data cell, i.e. each pair
(leaf of HiTab's left tree, leaf of its top tree), is compared on both axes: our row-header
path against the labels on the left-tree path to that row, our column-header path against the
top-tree path to that column (labels compared after collapsing whitespace and lower-casing).
A cell agrees when both paths are equal.

Usage: python benchmarks/dtr_header_paths.py [HITAB_ROOT] [--show N]
Default root: ../shared/data/hitab.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tablequest.methods.research.meta import build_meta_graph
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


def compare(path: Path) -> tuple[int, int, int, int, list[str]]:
    """(cells, rows agreeing, columns agreeing, both agreeing, examples of disagreement)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    texts = raw["texts"]
    rows = tree_paths(raw["left_root"], texts, "row_index")
    cols = tree_paths(raw["top_root"], texts, "column_index")
    table = read_tables(path)[0]
    graph = build_meta_graph(table)
    head = graph.n_header_rows
    n = row_ok = col_ok = both = 0
    bad: list[str] = []
    ours_rows = {r: tuple(_norm(x) for x in p) for r, p in graph.row_path.items()}
    ours_cols = {c: tuple(_norm(x) for x in p) for c, p in graph.col_path.items()}
    for r, gold_row in rows.items():
        mine_row = ours_rows.get(r - head)
        for c, gold_col in cols.items():
            n += 1
            ok_r = mine_row == gold_row
            ok_c = ours_cols.get(c) == gold_col
            row_ok += ok_r
            col_ok += ok_c
            both += ok_r and ok_c
            if not (ok_r and ok_c) and len(bad) < 2:
                bad.append(
                    f"{path.name} ({r},{c}): row {mine_row} vs {gold_row}; "
                    f"col {ours_cols.get(c)} vs {gold_col}"
                )
    return n, row_ok, col_ok, both, bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--show", type=int, default=0, help="print N disagreeing tables")
    args = parser.parse_args()
    samples = args.root / "data" / "test_samples.jsonl"
    ids = sorted({json.loads(line)["table_id"] for line in samples.read_text().splitlines()})
    totals: Counter[str] = Counter()
    tables_ok = 0
    shown: list[str] = []
    start = time.perf_counter()
    for tid in ids:
        n, row_ok, col_ok, both, bad = compare(
            args.root / "data" / "tables" / "raw" / f"{tid}.json"
        )
        totals.update(cells=n, rows=row_ok, cols=col_ok, both=both)
        tables_ok += both == n
        if bad and len(shown) < args.show:
            shown.extend(bad[:1])
    seconds = time.perf_counter() - start
    cells = totals["cells"] or 1
    print(f"HiTab test tables: {len(ids)}, data cells: {totals['cells']:,} ({seconds:.1f} s)")
    print(f"row-header paths agree:    {100 * totals['rows'] / cells:.2f}%")
    print(f"column-header paths agree: {100 * totals['cols'] / cells:.2f}%")
    print(f"both paths agree:          {100 * totals['both'] / cells:.2f}%  (goal >= 95%)")
    print(f"tables with every cell agreeing: {tables_ok}/{len(ids)}")
    for line in shown:
        print("  " + line)


if __name__ == "__main__":
    main()
