"""Hostile small files against the reading budget (issue 25): peak RSS and seconds per file.

Builds, in a temporary folder, the files the issue measured — a Parquet of two million equal
strings, an SQLite database with a 50 MB virtual generated column, a JSON Lines file of
5,000 records each with its own key, an HTML file of three colspan tables — and ingests
each one alone into an in-memory store in a fresh subprocess, reporting the file's size,
the rise of peak RSS (VmHWM, reset after imports; Linux), the seconds, and what the ingest
said. `--unlimited` repeats the run without any limit (what main did before the budget; the
HTML file then needs about 3 GB). Extra paths (`--real FILE ...`) are measured the same way,
to check that real benchmark tables still read under the default budget.

    .venv/bin/python benchmarks/hostile_files.py [--unlimited] [--real FILE ...]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import json, sys, time
from tablequest.corpus import Store, ingest
from tablequest.table.budget import ReadBudget
budget = ReadBudget(None, None, None, None, None, None) if sys.argv[2] == "1" else None
store = Store()
def status(key):
    return next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith(key))
# Reset the high-water mark after imports (Linux: "5" > clear_refs), so the peak is the read's.
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS:")
start = time.monotonic()
report = ingest(store, [sys.argv[1]], workers=1, index=False, budget=budget)
seconds = time.monotonic() - start
peak = status("VmHWM:")
failed = [f.reason for f in report.files_failed]
print(json.dumps({"rss_mb": (peak - base) / 1024, "seconds": seconds,
                  "stored": report.tables_stored, "failed": failed}))
"""


def build(folder: Path) -> list[Path]:
    """The issue's four hostile files, written under `folder`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = folder / "equal-strings.parquet"
    column = pa.array(["the same string"] * 2_000_000).dictionary_encode()
    pq.write_table(pa.table({"s": column}), parquet, compression="zstd")
    db = folder / "generated.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.executemany("INSERT INTO t (a) VALUES (?)", [(i,) for i in range(40)])
    # Added after the rows: an INSERT would compute the 50 MB value for each row.
    conn.execute(
        "ALTER TABLE t ADD COLUMN b TEXT GENERATED ALWAYS AS "
        "(printf('%.*c', 50000000, 'x')) VIRTUAL"
    )
    conn.commit()
    conn.close()
    jsonl = folder / "distinct-keys.jsonl"
    jsonl.write_text("".join(json.dumps({f"k{i}": i}) + "\n" for i in range(5_000)))
    html = folder / "colspan-tables.html"
    table = "<table>" + '<tr><td colspan="1000">x</td></tr>' * 13_000 + "</table>"
    html.write_text("<html><body>" + table * 3 + "</body></html>")
    return [parquet, db, jsonl, html]


def measure(path: Path, unlimited: bool) -> dict[str, object]:
    """One ingest of `path` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), "1" if unlimited else "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:]}
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unlimited", action="store_true", help="also run with no limits")
    parser.add_argument("--real", nargs="*", type=Path, default=[], help="real files to check")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = build(Path(tmp)) + list(args.real)
        modes = [False, True] if args.unlimited else [False]
        print(f"{'file':<28} {'KB':>8} {'budget':>9} {'RSS MB':>8} {'s':>6}  outcome")
        for path in files:
            for unlimited in modes:
                r = measure(path, unlimited)
                rss, secs = r.get("rss_mb", float("nan")), r.get("seconds", float("nan"))
                failed = r.get("failed") or []
                outcome = f"stored {r.get('stored')}" if not failed else str(failed[0])
                if "error" in r:
                    outcome = f"crashed: {r['error']}"
                mode = "none" if unlimited else "default"
                print(
                    f"{path.name[:28]:<28} {path.stat().st_size / 1024:>8.1f} {mode:>9} "
                    f"{rss:>8.0f} {secs:>6.2f}  {outcome[:110]}"
                )


if __name__ == "__main__":
    main()
