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


def run(files: list[Path]) -> tuple[float, float, int, list[str]]:
    """(wall seconds, CPU seconds, tables read, failures) for one pass."""
    start, cpu = time.perf_counter(), time.process_time()
    tables, failures = 0, []
    for path in files:
        try:
            tables += len(read_tables(path))
        except UnreadableTable as exc:
            failures.append(str(exc))
    return time.perf_counter() - start, time.process_time() - cpu, tables, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(p for p in args.root.glob("*/*") if p.suffix in {".csv", ".html", ".table"})
    by_ext = Counter(p.suffix for p in files)
    print(f"{len(files)} files under {args.root}: {dict(by_ext)}")
    for ext in sorted(by_ext):
        subset = [p for p in files if p.suffix == ext]
        wall, cpu, _, _ = min((run(subset) for _ in range(args.repeat)), key=lambda r: r[0])
        print(
            f"  {ext:7s} {len(subset):5d} files  {wall:6.2f} s wall  {cpu:6.2f} s CPU  "
            f"{len(subset) / wall:6.0f} files/s"
        )
    wall, cpu, tables, failures = min((run(files) for _ in range(args.repeat)), key=lambda r: r[0])
    print(
        f"all     {len(files):5d} files  {wall:6.2f} s wall  {cpu:6.2f} s CPU  "
        f"{tables / wall:6.0f} tables/s"
    )
    print(f"tables read: {tables}; failures: {len(failures)}")
    for line in failures[:20]:
        print("  ", line)


if __name__ == "__main__":
    main()
