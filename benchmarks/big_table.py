"""One big CSV as a new user meets it (issue 37): ingest, show, page to the end, search, SQL,
the web page — whole processes, beside DuckDB's own load of the same file.

    python benchmarks/big_table.py [--rows 300000] [--runs 3] [--json]

Writes a CSV of `--rows` × 8 columns (transactions: id, date, store, category, item,
quantity, unit price, total; seeded, about 17 MB for 300,000 rows) to a temporary folder,
then times, each as its own process (`sys.executable -m tablequest …`, median of `--runs`):

- DuckDB's own `CREATE TABLE t AS SELECT * FROM read_csv_auto(FILE)` into a new file (one
  process: python + duckdb), and `tablequest ingest FILE -s STORE` (a new store each run),
  with the peak RSS of the process (`ru_maxrss` of the child);
- `tablequest show ID --rows 3`, `show ID --offset N-3 --rows 3 --format csv` (its output
  must be the last three txn ids), `search "…" -k 5` and `sql "SELECT … GROUP BY …"`;
- the web table page (`GET /tables/ID`) served in this process by the app (`create_app`),
  median of 5 requests after the first;
- the structure route `GET /v1/tables/ID?limit=3` and MCP `get_table` (3 rows), the first
  call of each on a newly opened server (later calls may be answered from its cache).

Prints one line per measure and the ratios the issue sets (ingest ≤ 5× DuckDB's load and
≤ 600 MB; show ≤ 1.5 s; search ≤ 1 s; web page ≤ 0.5 s).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CATEGORIES = ["food", "tools", "toys", "books", "garden"]


def write_csv(path: Path, rows: int) -> None:
    rng = random.Random(1)
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(
            ["txn", "date", "store", "category", "item", "quantity", "unit_price", "total"]
        )
        for i in range(rows):
            q, p = rng.randint(1, 9), round(rng.uniform(0.5, 200), 2)
            date = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            out.writerow([i, date, f"store {rng.randint(1, 60)}", rng.choice(CATEGORIES),
                          f"item {rng.randint(1, 5000)}", q, p, round(q * p, 2)])  # fmt: skip


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in MB, stdout) of one whole process."""
    wrapper = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "s = time.perf_counter() - t; "
        "print(s, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode); "
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    head, _, rest = done.stdout.partition("\n")
    seconds, rss, code = head.split()
    if code != "0":
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {done.stderr[-2000:]}")
    return float(seconds), int(rss) // 1024, rest


def median_run(cmd: list[str], runs: int) -> tuple[float, int, str]:
    results = [timed(cmd) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results), results[-1][2]


def web_page(store: Path, table_id: str, folder: Path) -> float:
    from fastapi.testclient import TestClient

    from tablequest.serve.app import create_app
    from tablequest.service import ServeConfig

    config = ServeConfig(store=store, trace_dir=folder / "traces", token="t" * 32, token_file=None)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        headers = {"Authorization": "Bearer " + "t" * 32}
        times = []
        for _ in range(6):
            started = time.perf_counter()
            response = client.get(f"/tables/{table_id}", headers=headers)
            times.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"web page: HTTP {response.status_code}: {response.text[:300]}")
    return statistics.median(times[1:])


def structure_views(store: Path, table_id: str, folder: Path) -> dict[str, float]:
    """The first answer (nothing cached yet) of the structure route `GET /v1/tables/ID?limit=3`
    and of MCP `get_table` (3 rows), each on a newly opened server in this process."""
    from fastapi.testclient import TestClient

    from tablequest.mcpserver import open_service
    from tablequest.serve.app import create_app
    from tablequest.service import ServeConfig

    config = ServeConfig(store=store, trace_dir=folder / "traces", token="t" * 32, token_file=None)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        headers = {"Authorization": "Bearer " + "t" * 32}
        started = time.perf_counter()
        response = client.get(f"/v1/tables/{table_id}?limit=3", headers=headers)
        route_s = time.perf_counter() - started
        if response.status_code != 200 or len(response.json()["rows"]) != 3:
            raise SystemExit(f"/v1/tables: HTTP {response.status_code}: {response.text[:300]}")
    service = open_service(config, warm=False)
    try:
        started = time.perf_counter()
        window, _ = service.tools.get_table(table_id, limit=3, max_chars=40_000)
        mcp_s = time.perf_counter() - started
        if window.data["row_ids"] != [0, 1, 2]:
            raise SystemExit(f"get_table: {window.data}")
    finally:
        service.close()
    return {"structure_route_s": route_s, "mcp_get_table_s": mcp_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tq = [sys.executable, "-m", "tablequest"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "transactions.csv"
        write_csv(data, args.rows)
        duck = [
            sys.executable, "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
            "c.execute(\"CREATE TABLE t AS SELECT * FROM read_csv_auto(?)\", [sys.argv[2]])",
        ]  # fmt: skip
        duck_s = statistics.median(
            timed([*duck, str(folder / f"duck{i}.duckdb"), str(data)])[0] for i in range(args.runs)
        )
        ingests = [
            timed([*tq, "ingest", str(data), "-s", str(folder / f"s{i}.duckdb")])
            for i in range(args.runs)
        ]
        ingest_s = statistics.median(r[0] for r in ingests)
        ingest_mb = max(r[1] for r in ingests)
        store = folder / "s0.duckdb"
        listed = json.loads(timed([*tq, "tables", "-s", str(store), "--json"])[2])
        table_id = listed[0]["table_id"]
        show_s, _, _ = median_run(
            [*tq, "show", table_id, "-s", str(store), "--rows", "3"], args.runs
        )
        last = [*tq, "show", table_id, "-s", str(store), "--offset", str(args.rows - 3), "--rows",
                "3", "--format", "csv"]  # fmt: skip
        end_s, _, end_out = median_run(last, args.runs)
        ids = [line.split(",")[0] for line in end_out.strip().splitlines()[1:]]
        assert ids == [str(args.rows - 3), str(args.rows - 2), str(args.rows - 1)], end_out
        search_s, _, _ = median_run(
            [*tq, "search", "garden sales of store 12", "-s", str(store), "-k", "5"], args.runs
        )
        sql = "SELECT category, count(*), round(avg(total), 2) FROM transactions GROUP BY 1"
        sql_s, _, _ = median_run([*tq, "sql", sql, "-s", str(store)], args.runs)
        page_s = web_page(store, table_id, folder)
        views = structure_views(store, table_id, folder)
    result: dict[str, Any] = {
        "rows": args.rows, "duckdb_load_s": duck_s, "ingest_s": ingest_s,
        "ingest_peak_mb": ingest_mb, "ingest_vs_duckdb": ingest_s / duck_s, "show_s": show_s,
        "show_last_rows_s": end_s, "search_s": search_s, "sql_s": sql_s, "web_page_s": page_s,
        **views,
    }  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{args.rows:,} rows × 8 columns, whole processes, medians of {args.runs}")
    print(f"  DuckDB's own load             {duck_s:6.2f} s")
    print(f"  tablequest ingest             {ingest_s:6.2f} s  ({ingest_s / duck_s:.1f}× DuckDB; "
          f"goal ≤ 5×), peak {ingest_mb} MB (goal ≤ 600)")  # fmt: skip
    print(f"  show ID --rows 3              {show_s:6.2f} s  (goal ≤ 1.5)")
    print(f"  show --offset {args.rows - 3} --rows 3 {end_s:6.2f} s  (txn {', '.join(ids)})")
    print(f"  search -k 5                   {search_s:6.2f} s  (goal ≤ 1)")
    print(f"  sql GROUP BY                  {sql_s:6.2f} s")
    print(f"  web table page                {page_s:6.3f} s  (goal ≤ 0.5; in process)")
    print(f"  GET /v1/tables/ID?limit=3     {views['structure_route_s']:6.3f} s  (first call)")
    print(f"  MCP get_table (3 rows)        {views['mcp_get_table_s']:6.3f} s  (first call)")


if __name__ == "__main__":
    main()
