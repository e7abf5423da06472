"""Ingest throughput: every file under a folder into a fresh store.

    python benchmarks/ingest.py ../shared/data/wtq/csv [--store /tmp/bench.duckdb] [--json]

Prints files, tables, seconds, tables/s and the peak resident memory of this process and of
its worker processes (ru_maxrss), then the same ingest again (all files unchanged).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from tablequest.corpus import Store, ingest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.store or Path(tmp) / "bench.duckdb"
        path.unlink(missing_ok=True)
        with Store(path) as store:
            t0 = time.perf_counter()
            first = ingest(store, [args.folder])
            t1 = time.perf_counter()
            second = ingest(store, [args.folder])
            t2 = time.perf_counter()
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = {
        "files": first.files_seen,
        "tables_stored": first.tables_stored,
        "files_failed": len(first.files_failed),
        "seconds": round(t1 - t0, 2),
        "tables_per_s": round(first.tables_stored / (t1 - t0), 1),
        "reingest_seconds": round(t2 - t1, 2),
        "reingest_unchanged": second.tables_unchanged,
        "peak_rss_mb": round(self_kb / 1024, 1),
        "peak_worker_rss_mb": round(child_kb / 1024, 1),
    }
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key:>20}: {value}")


if __name__ == "__main__":
    main()
