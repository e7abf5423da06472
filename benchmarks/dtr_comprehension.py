"""DTR comprehension speed and coverage on RealHiTBench: meta graph + execution frame per sheet.

LLM-free. Reads every RealHiTBench spreadsheet (`read_tables`), builds the meta graph, the
execution frame and the triples, and reports the wall time, the CPU seconds of reading and of
comprehension (CPU time is what a busy shared machine distorts least), and how many sheets
have headers on both axes with two or more levels, units, aggregation rows (by label or by
arithmetic) and sections. Runs on `--workers` processes (default 2).

Usage: python benchmarks/dtr_comprehension.py [TABLES_DIR] [--workers N]
Default directory: ../shared/data/realhitbench/data/tables.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tablequest.methods.research.frame import build_frame
from tablequest.methods.research.meta import build_meta_graph, triples
from tablequest.table import UnreadableTable, read_tables

DEFAULT = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "realhitbench" / "data" / "tables"
)


def one(path: Path) -> dict[str, object]:
    """Read one workbook and comprehend each sheet; counts and CPU seconds per phase."""
    start = time.process_time()
    try:
        tables = read_tables(path)
    except UnreadableTable as exc:
        return {"error": exc.reason}
    read_s = time.process_time() - start
    out: Counter[str] = Counter()
    start = time.process_time()
    for table in tables:
        graph = build_meta_graph(table)
        build_frame(graph)
        triples(graph)
        out["sheets"] += 1
        out["both_axis"] += graph.both_axis_hierarchy
        out["column_multilevel"] += graph.depth("column") >= 2
        out["row_multilevel"] += graph.depth("row") >= 2
        out["units"] += bool(graph.units)
        out["aggregate_rows"] += bool(graph.aggregate_rows or graph.layout.additive_rows)
        out["aggregate_label_rows"] += bool(graph.aggregate_rows)
        out["aggregate_cols"] += bool(graph.aggregate_cols)
        out["sections"] += bool(graph.layout.section_rows)
        out["temporal"] += bool(graph.temporal_axes())
        out["notes"] += bool(graph.layout.note_rows)
    return {"counts": dict(out), "read_s": read_s, "graph_s": time.process_time() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    files = sorted(args.root.glob("*.xlsx"))
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one, files, chunksize=8))
    wall = time.perf_counter() - start
    totals: Counter[str] = Counter()
    errors = [r["error"] for r in results if "error" in r]
    read_s = sum(float(r.get("read_s", 0.0)) for r in results)  # type: ignore[arg-type]
    graph_s = sum(float(r.get("graph_s", 0.0)) for r in results)  # type: ignore[arg-type]
    for r in results:
        totals.update(r.get("counts", {}))  # type: ignore[arg-type]
    sheets = totals["sheets"] or 1
    print(f"{len(files)} workbooks, {totals['sheets']} sheets, {len(errors)} unreadable")
    print(f"wall time {wall:.1f} s on {args.workers} workers (goal <= 60 s)")
    print(
        f"  CPU seconds: reading (xlsx reader) {read_s:.1f}, comprehension (meta graph, frame, "
        f"triples) {graph_s:.1f}; on {args.workers} idle cores: "
        f"{(read_s + graph_s) / args.workers:.1f} s end to end, "
        f"{graph_s / args.workers:.1f} s comprehension"
    )
    labels = {
        "both_axis": "headers on both axes, 2+ levels each",
        "column_multilevel": "column headers with 2+ levels",
        "row_multilevel": "row headers with 2+ levels",
        "units": "units found",
        "aggregate_rows": "aggregation rows (label or arithmetic)",
        "aggregate_label_rows": "aggregation rows by label",
        "aggregate_cols": "aggregation columns",
        "sections": "section rows",
        "temporal": "a temporal axis",
        "notes": "note rows",
    }
    for key, text in labels.items():
        print(f"  {text:42s} {totals[key]:4d}  ({100 * totals[key] / sheets:.0f}%)")


if __name__ == "__main__":
    main()
