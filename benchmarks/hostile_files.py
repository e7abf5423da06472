"""Hostile small files against the reading budget (issues 25, 40): peak RSS and seconds.

Builds, in a temporary folder, the files the issues measured — a Parquet of two million equal
strings, an SQLite database with a 50 MB virtual generated column, a JSON Lines file of
5,000 records each with its own key, an HTML file of three colspan tables (issue 25); an
xlsx of 4M empty `<c/>` cells, an xlsx zip bomb padded with a stored random member, an xlsx
whose one 5 MB shared string 200 cells reference, and a CSV and a JSON file holding one
20 MB cell (issue 40) — and ingests each one alone into an in-memory store in a fresh
subprocess, reporting the file's size, the rise of peak RSS (VmHWM, reset after imports;
Linux), the seconds, and what the ingest said. The long-cell files are ingested with their
search indexes (grep, BM25) and then searched once (`search s`: grep and BM25, one query
each), since their cost was in the indexes. `--unlimited` repeats the run without any
limit (what main did before the budget; the HTML file then needs about 3 GB). Extra paths
(`--real FILE ...`) are measured the same way, to check that real benchmark tables still
read under the default budget. `--only NAME ...` runs the built files whose names start
with one of the NAMEs.

    .venv/bin/python benchmarks/hostile_files.py [--unlimited] [--only NAME ...] [--real FILE ...]
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
from tablequest.corpus import Store, ingest, search
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
indexed = sys.argv[3] == "1"
report = ingest(store, [sys.argv[1]], workers=1, index=indexed, budget=budget)
seconds = time.monotonic() - start
searched = None
if indexed and report.tables_stored:
    start = time.monotonic()
    for method in ("grep", "bm25"):
        search(store, "lorem ipsum", k=3, method=method)
    searched = time.monotonic() - start
peak = status("VmHWM:")
failed = [f.reason for f in report.files_failed]
print(json.dumps({"rss_mb": (peak - base) / 1024, "seconds": seconds, "search_s": searched,
                  "stored": report.tables_stored, "failed": failed}))
"""


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_OOXML = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_TYPES = (
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/>'
    f'<Override PartName="/xl/workbook.xml" ContentType="{_OOXML}.sheet.main+xml"/>'
    f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{_OOXML}.worksheet+xml"/>'
)
_SHARED = f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_OOXML}.sharedStrings+xml"/>'
LONG_CELL = 20 * 1024 * 1024


def xlsx(path: Path, rows: bytes, strings: bytes | None = None, pad: bytes = b"") -> Path:
    """A minimal workbook: one sheet whose `<sheetData>` holds `rows`, an optional shared
    strings part (`<si>` elements) and an optional stored member of `pad` bytes."""
    import zipfile

    rels = f'<Relationship Id="rId1" Type="{_DOC}/worksheet" Target="worksheets/sheet1.xml"/>'
    if strings is not None:
        rels += f'<Relationship Id="rId2" Type="{_DOC}/sharedStrings" Target="sharedStrings.xml"/>'
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        types = _TYPES + (_SHARED if strings is not None else "") + "</Types>"
        zf.writestr("[Content_Types].xml", types)
        zf.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{_RELS}"><Relationship Id="rId1" '
            f'Type="{_DOC}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        zf.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{_MAIN}" xmlns:r="{_DOC}"><sheets>'
            '<sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{_RELS}">{rels}</Relationships>'
        )
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            member.write(f'<worksheet xmlns="{_MAIN}"><sheetData>'.encode())
            member.write(rows)
            member.write(b"</sheetData></worksheet>")
        if strings is not None:
            zf.writestr(
                "xl/sharedStrings.xml", f'<sst xmlns="{_MAIN}">'.encode() + strings + b"</sst>"
            )
        if pad:
            zf.writestr("xl/media/pad.bin", pad, compress_type=zipfile.ZIP_STORED)
    return path


def build_issue40(folder: Path) -> list[Path]:
    """Issue 40's xlsx bombs and long cells, written under `folder`."""
    import random

    cells = xlsx(folder / "empty-cells.xlsx", (b"<row>" + b"<c/>" * 1000 + b"</row>") * 4000)
    zeros = b" " * (20 * 1024 * 1024)  # valid XML: an empty sheet
    padded = xlsx(folder / "padded-zip-bomb.xlsx", zeros, pad=random.Random(1).randbytes(1 << 20))
    big = b"<si><t>" + b"x" * (5 * 1024 * 1024) + b"</t></si>"
    refs = b"<row>" + b'<c t="s"><v>0</v></c>' * 200 + b"</row>"
    shared = xlsx(folder / "shared-string.xlsx", refs, strings=big)
    words = b"lorem ipsum dolor sit amet consectetur adipiscing elit " * (LONG_CELL // 56 + 1)
    csv = folder / "long-cell.csv"
    csv.write_bytes(b"id,text\n1," + words[:LONG_CELL] + b"\n2,short\n")
    js = folder / "long-cell.json"
    js.write_bytes(b'[{"id": 1, "text": "' + words[:LONG_CELL] + b'"}, {"id": 2, "text": "x"}]')
    return [cells, padded, shared, csv, js]


def build(folder: Path) -> list[Path]:
    """Issue 25's four hostile files, written under `folder`."""
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
    """One ingest of `path` in a fresh interpreter (with its indexes for a long cell)."""
    indexed = "1" if path.name.startswith("long-cell") else "0"
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), "1" if unlimited else "0", indexed],
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
    parser.add_argument("--only", nargs="*", default=[], help="built files to run (prefixes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(tmp)) + build_issue40(Path(tmp))
        if args.only:
            built = [p for p in built if p.name.startswith(tuple(args.only))]
        files = built + list(args.real)
        modes = [False, True] if args.unlimited else [False]
        print(
            f"{'file':<28} {'KB':>8} {'budget':>9} {'RSS MB':>8} {'s':>6} {'search s':>8}  outcome"
        )
        for path in files:
            for unlimited in modes:
                r = measure(path, unlimited)
                rss, secs = r.get("rss_mb", float("nan")), r.get("seconds", float("nan"))
                found = r.get("search_s")
                searched = f"{found:>8.2f}" if isinstance(found, float) else f"{'':>8}"
                failed = r.get("failed") or []
                outcome = f"stored {r.get('stored')}" if not failed else str(failed[0])
                if "error" in r:
                    outcome = f"crashed: {r['error']}"
                mode = "none" if unlimited else "default"
                print(
                    f"{path.name[:28]:<28} {path.stat().st_size / 1024:>8.1f} {mode:>9} "
                    f"{rss:>8.0f} {secs:>6.2f} {searched}  {outcome[:110]}"
                )


if __name__ == "__main__":
    main()
