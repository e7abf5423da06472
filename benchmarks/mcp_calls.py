"""Cost of one MCP tool call over stdio: `list_tables`, and `get_table` of a 1,000-row table.

    python benchmarks/mcp_calls.py [--calls 200] [--tables 500] [--json]

Builds a store of `--tables` small tables plus one 1,000-row table (3 columns), starts
`tablequest mcp STORE` as a child process with the SDK's stdio client (as an MCP client
does), and times `--calls` calls of each tool from the client: the round trip a client sees
(JSON-RPC over the pipes, argument validation, the tool, the result's serialization). A few
calls of each are made first (warm-up). Reports the median and p90 in ms. Target (issue 28):
median ≤ 20 ms for both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tablequest.corpus import Store, ingest


def build(folder: Path, n_tables: int) -> tuple[Path, str]:
    """A store of `n_tables` small CSVs and `big.csv` (1,000 rows); (store, big's id)."""
    data = folder / "tables"
    data.mkdir()
    for i in range(n_tables):
        rows = ["city,year,value"] + [f"city{i}_{r},{2000 + r},{r * i}" for r in range(8)]
        (data / f"t{i:04d}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    big = ["id,name,value"] + [f"{i},item number {i},{i * 3.5}" for i in range(1000)]
    (data / "big.csv").write_text("\n".join(big) + "\n", encoding="utf-8")
    store = folder / "store.duckdb"
    with Store(store) as opened:
        ingest(opened, [data])
        big_id = next(t for t in opened.table_ids() if opened.source(t).path.endswith("big.csv"))
    return store, big_id


async def measure(store: Path, big_id: str, calls: int) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tablequest", "mcp", str(store)], env=dict(os.environ)
    )
    plan: dict[str, tuple[str, dict[str, Any]]] = {
        "list_tables": ("list_tables", {"limit": 100}),
        "get_table_1000_rows": (
            "get_table", {"table_id": big_id, "limit": 1000, "max_chars": 250_000},
        ),
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in plan}
    async with Client(params, read_timeout_seconds=60) as client:
        for name, (tool, args) in plan.items():
            for _ in range(5):
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content
            if tool == "get_table":
                assert len(result.structured_content["row_ids"]) == 1000
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool(tool, args)
                times[name].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, big_id = build(Path(tmp), args.tables)
        times = anyio.run(measure, store, big_id, args.calls)
    report = {
        name: {
            "median_ms": round(statistics.median(ms), 2),
            "p90_ms": round(statistics.quantiles(ms, n=10)[-1], 2),
            "calls": len(ms),
        }
        for name, ms in times.items()
    }
    if args.json:
        print(json.dumps(report))
        return
    for name, row in report.items():
        print(f"{name:22s} median {row['median_ms']:6.2f} ms  p90 {row['p90_ms']:6.2f} ms")


if __name__ == "__main__":
    main()
