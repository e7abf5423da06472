"""Sandbox speed: session start (cold and pre-warmed) and per-run overhead, as medians.

Usage: python benchmarks/sandbox.py [--runs 20] [--cold-runs 5] [--mode auto|bwrap|unshare|off]

Targets (issues 4 and 11): session start <= 300 ms, a trivial run <= 20 ms. "Warm start" is what
`Sandbox.session()` costs when the pre-started child is ready (the normal case in a ReAct loop
where the LLM call between sessions takes longer than the ~2-3 s a child needs to import
pandas, scipy and matplotlib); "cold start" is a Sandbox without a ready child.
The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np
import pandas as pd

from tablequest.sandbox import Sandbox


def frames(rows: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    sales = pd.DataFrame(
        {
            "region": rng.choice(["north", "south", "east", "west"], rows),
            "amount": rng.gamma(2.0, 50.0, rows).round(2),
            "sku": [f"SKU-{i % 997:04d}" for i in range(rows)],
        }
    )
    return {"sales": sales}


def ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def options(mode: str) -> dict[str, Any]:
    """Sandbox options for `mode`: "unshare" and "off" need the degraded opt-in."""
    return {"use_namespaces": mode, "isolation": "degraded" if mode in ("unshare", "off") else None}


def bench(mode: str, runs: int, cold_runs: int) -> dict[str, object]:
    small, large = frames(1_000), frames(100_000)
    cold: list[float] = []
    for _ in range(cold_runs):
        with Sandbox(prewarm=False, **options(mode)) as sb:
            start = time.perf_counter()
            with sb.session(small):
                cold.append(time.perf_counter() - start)
    warm: list[float] = []
    warm_large: list[float] = []
    trivial: list[float] = []
    groupby: list[float] = []
    plot: list[float] = []
    with Sandbox(**options(mode)) as sb:
        result_mode = sb.mode
        for i in range(runs):
            sb.warm()
            data = large if i % 2 else small
            start = time.perf_counter()
            s = sb.session(data)
            (warm_large if i % 2 else warm).append(time.perf_counter() - start)
            s.close()
        sb.warm()
        with sb.session(small) as s:
            for _ in range(runs):
                start = time.perf_counter()
                assert s.run("1").value == "1"
                trivial.append(time.perf_counter() - start)
            for _ in range(runs):
                start = time.perf_counter()
                assert s.run("sales.groupby('region')['amount'].agg(['sum', 'mean'])").ok
                groupby.append(time.perf_counter() - start)
            for _ in range(max(3, runs // 4)):
                start = time.perf_counter()
                assert len(s.run("sales['amount'].plot.hist()\nNone").figures) == 1
                plot.append(time.perf_counter() - start)
    return {
        "mode": result_mode,
        "cold_start_ms": ms(cold),
        "warm_start_ms": ms(warm),
        "warm_start_100k_rows_ms": ms(warm_large),
        "trivial_run_ms": ms(trivial),
        "groupby_run_ms": ms(groupby),
        "plot_run_ms": ms(plot),
        "runs": runs,
        "cold_runs": cold_runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--mode", default="auto", choices=["auto", "bwrap", "unshare", "off"])
    args = parser.parse_args()
    result = bench(args.mode, args.runs, args.cold_runs)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    start_ok = float(str(result["warm_start_ms"])) <= 300
    run_ok = float(str(result["trivial_run_ms"])) <= 20
    print(
        f"targets: warm start <= 300 ms {'met' if start_ok else 'MISSED'}; "
        f"trivial run <= 20 ms {'met' if run_ok else 'MISSED'}"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
