"""How `read_tables` handles the RealHiTBench spreadsheets: reads, failures, merges, headers.

Usage: python benchmarks/read_realhitbench.py [TABLES_DIR]
Default directory: ../shared/data/realhitbench/data/tables.
"""

from __future__ import annotations

import argparse
import time
import warnings
import zipfile
from collections import Counter
from pathlib import Path

from tablequest.table import UnreadableTable, read_tables

DEFAULT = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "realhitbench" / "data" / "tables"
)


def workbook_has_merges(path: Path) -> bool:
    """Whether any sheet of the workbook declares a merged range (raw XML, no heuristics)."""
    with zipfile.ZipFile(path) as zf:
        return any(
            b"<mergeCell " in zf.read(n)
            for n in zf.namelist()
            if n.startswith("xl/worksheets/") and n.endswith(".xml")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args()
    files = sorted(args.root.glob("*.xlsx"))
    failures: Counter[str] = Counter()
    levels: Counter[int] = Counter()
    header_cols: Counter[int] = Counter()
    sheets = with_merges = raw_merges = titled = 0
    start = time.perf_counter()
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw_merges += workbook_has_merges(path)
        try:
            tables = read_tables(path)
        except UnreadableTable as exc:
            failures[exc.reason] += 1
            continue
        sheets += len(tables)
        with_merges += any(t.merges for t in tables)
        for t in tables:
            levels[t.n_header_rows] += 1
            header_cols[t.n_header_cols] += 1
            titled += t.title is not None
    seconds = time.perf_counter() - start
    print(
        f"{len(files)} xlsx files, {len(files) - sum(failures.values())} read, "
        f"{sum(failures.values())} failed, {sheets} tables (sheets), {seconds:.1f} s"
    )
    print(f"files whose workbook declares merged ranges: {raw_merges}")
    print(f"files with merges kept in a table grid: {with_merges}")
    print(f"header rows detected (levels: tables): {dict(sorted(levels.items()))}")
    print(f"header columns detected (columns: tables): {dict(sorted(header_cols.items()))}")
    print(f"tables with a title (rows above the header): {titled}")
    for reason, n in failures.most_common():
        print(f"  failed {n}: {reason}")


if __name__ == "__main__":
    main()
