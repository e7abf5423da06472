"""TabScope evidence aggregation speed (Eqs 2–5) on a 1,000-row × 30-column table, K = 8.

    python benchmarks/scope_aggregate.py [--rows 1000] [--cols 30] [--k 8] [--repeat 300] [--json]

Each repetition draws K row samples and K column samples the way a model answers: a core
set that most samples share plus a few extra ids, sometimes ``f_row([*])``, with
log-probabilities; then times `aggregate` (groups, progressive unions, scores of every
(R′, C′) pair). Target: median ≤ 10 ms. Also times parsing the K ``f_row``/``f_col`` replies.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from tablequest.methods.scope.aggregate import Candidate, aggregate
from tablequest.methods.scope.retrieval import parse_sample
from tablequest.table import Table


def samples(rng: random.Random, ids: list[int], k: int, star: float) -> list[Candidate]:
    core = rng.sample(ids, rng.randint(3, max(3, len(ids) // 10)))
    out = []
    for _ in range(k):
        if rng.random() < star:
            chosen = set(ids)
        else:
            chosen = set(core[: rng.randint(1, len(core))]) | set(
                rng.sample(ids, rng.randint(0, 5))
            )
        out.append(Candidate(frozenset(chosen), -rng.random()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--cols", type=int, default=30)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(0)
    rows, cols = list(range(args.rows)), list(range(args.cols))
    table = Table.from_rows([[f"c{j}" for j in cols]] + [[f"v{i}.{j}" for j in cols] for i in rows])
    times, parse_times = [], []
    for _ in range(args.repeat):
        r, c = samples(rng, rows, args.k, 0.1), samples(rng, cols, args.k, 0.1)
        replies = [f"f_row([{', '.join(f'row_{i}' for i in sorted(s.ids))}])" for s in r]
        t0 = time.perf_counter()
        for reply in replies:
            parse_sample("rows", reply, table)
        parse_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        aggregate(
            r,
            c,
            n_rows=args.rows,
            n_cols=args.cols,
            all_rows=frozenset(rows),
            all_cols=frozenset(cols),
            alpha=0.2,
        )
        times.append(time.perf_counter() - t0)
    out = {
        "rows": args.rows,
        "cols": args.cols,
        "k": args.k,
        "repeat": args.repeat,
        "aggregate_median_ms": round(1000 * statistics.median(times), 3),
        "aggregate_p95_ms": round(1000 * sorted(times)[int(0.95 * len(times))], 3),
        "parse_k_row_replies_median_ms": round(1000 * statistics.median(parse_times), 3),
        "target_ms": 10,
    }
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
