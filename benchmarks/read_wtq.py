"""Reading throughput of `read_tables` over the WikiTableQuestions files (.csv, .html, .table).

Usage: python benchmarks/read_wtq.py [WTQ_CSV_DIR] [--repeat N]
Default directory: ../shared/data/wtq/csv. Single process; prints tables/s per format and in
total (the best of N passes, files read from the page cache), plus any failures.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from tablequest.table import UnreadableTable, read_tables

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wtq" / "csv"


def run(files: list[Path]) -> tuple[float, int, list[str]]:
    start = time.perf_counter()
    tables, failures = 0, []
    for path in files:
        try:
            tables += len(read_tables(path))
        except UnreadableTable as exc:
            failures.append(str(exc))
    return time.perf_counter() - start, tables, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(p for p in args.root.glob("*/*") if p.suffix in {".csv", ".html", ".table"})
    by_ext = Counter(p.suffix for p in files)
    print(f"{len(files)} files under {args.root}: {dict(by_ext)}")
    total = 0.0
    for ext in sorted(by_ext):
        subset = [p for p in files if p.suffix == ext]
        best = min(run(subset)[0] for _ in range(args.repeat))
        total += best
        print(
            f"  {ext:7s} {len(subset):5d} files  {best:6.2f} s  {len(subset) / best:8.0f} files/s"
        )
    seconds, tables, failures = min((run(files) for _ in range(args.repeat)), key=lambda r: r[0])
    print(f"all     {len(files):5d} files  {seconds:6.2f} s  {tables / seconds:8.0f} tables/s")
    print(f"tables read: {tables}; failures: {len(failures)}")
    for line in failures[:20]:
        print("  ", line)


if __name__ == "__main__":
    main()
