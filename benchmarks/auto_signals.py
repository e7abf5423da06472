"""Routing signals of `auto` (LLM-free): median milliseconds per table, by table size.

    python benchmarks/auto_signals.py [--reps 20] [--json]

Tables of 10^3, 10^4 and 10^5 cells (10 columns of short text and numbers, a "Total" row)
and the question signals of 1,000 questions. Target: ≤ 20 ms for a 10^5-cell table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from tablequest.methods.auto.signals import question_signals, table_signals
from tablequest.table import Table

QUESTIONS = [
    "How long is the river Varna?",
    "Which region grew fastest between 2019 and 2022, and chart it",
    "How many players scored more than 10 goals?",
    "What was the last year the team was in the USL A-League?",
]


def table_of(cells: int) -> Table:
    rows = cells // 10
    body = [[f"item {i}", *(str((i * 37 + j) % 1000) for j in range(9))] for i in range(rows - 1)]
    return Table.from_rows([[f"col {j}" for j in range(10)], *body, ["Total", *["0"] * 9]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out: dict[str, object] = {}
    for cells in (1_000, 10_000, 100_000):
        table = table_of(cells)
        times = []
        for _ in range(args.reps):
            started = time.perf_counter()
            signals = table_signals(table)
            times.append((time.perf_counter() - started) * 1000)
        out[f"{cells} cells"] = {"median_ms": round(statistics.median(times), 2),
                                 "max_ms": round(max(times), 2), "tokens": signals.tokens,
                                 "aggregation_rows": signals.aggregation_rows}  # fmt: skip
    started = time.perf_counter()
    for i in range(1000):
        question_signals(QUESTIONS[i % len(QUESTIONS)])
    out["question_signals_ms_each"] = round((time.perf_counter() - started), 4)
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
