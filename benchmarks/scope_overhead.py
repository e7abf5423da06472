"""TabScope framework overhead and wall time per question against a 1 s-latency stub server.

    python benchmarks/scope_overhead.py [--queries 5] [--latency 1.0] [--rows 40] [--n-mode support]
                                        [--sampling n] [--json]

The stub server (real HTTP on 127.0.0.1, with ``/tokenize``) sleeps `--latency` seconds per
chat request, then answers a localized trajectory: classify (lookup), K = 4 row samples ‖ K
column samples, refine (keep), answer. Reported per question (medians):

- wall: seconds of `TabScope.answer`;
- in_llm: the union of the LLM calls' time intervals (from the trace: each ``llm_call`` ends
  at its ``t`` and lasted ``latency_s``), so concurrent calls count once;
- framework share = (wall − in_llm) / wall (target ≤ 5%);
- wall / single-call latency (target ≤ 4: classify, rows ‖ columns, refine, answer), the
  single-call latency being the median of three chat requests through the same client.

``--n-mode ignore`` makes the server return one choice whatever n (llama.cpp's behaviour); the
client then emulates n=K with single requests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from tablequest.llm import OpenAICompatible
from tablequest.llm.config import LLMConfig
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.scope import ScopeOptions, TabScope
from tablequest.table import Table
from tablequest.trace import Trace


def reply_for(latency: float):  # type: ignore[no-untyped-def]
    def reply(body: dict[str, Any]) -> Fault:
        first = body["messages"][0]["content"]
        if first.startswith("Classify"):
            text = json.dumps({"question_type": "lookup"})
        elif "f_row()" in first:
            text = "f_row([row_3, row_4, row_5])"
        elif "f_col()" in first:
            text = "f_col([Season, Team, Points])"
        elif first.startswith("You are refining"):
            text = json.dumps({"action": "keep", "final_rows": [], "final_columns": []})
        else:
            text = "<think>Row 4 holds it.</think><answer>71</answer>"
        return Fault.delay(latency, then=text)

    return reply


def in_llm_seconds(trace: Trace) -> float:
    spans = sorted(
        (e["t"] - e["latency_s"], e["t"]) for e in trace.events if e["kind"] == "llm_call"
    )
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--n-mode", choices=["support", "ignore"], default="support")
    parser.add_argument("--sampling", choices=["n", "separate"], default="n")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = Table.from_rows(
        [["Season", "Team", "Points", "Coach"]]
        + [
            [str(1990 + i), f"Team {i % 7}", str(40 + i), f"Coach {i % 5}"]
            for i in range(args.rows)
        ]
    )
    with StubServer(reply_for(args.latency), tokenize=True, n_mode=args.n_mode) as stub:
        llm = OpenAICompatible(stub.url, "stub", timeout=args.latency + 30, max_concurrency=16)
        singles = []
        for _ in range(3):  # the first request also sets up the connection
            t0 = time.perf_counter()
            llm.chat([{"role": "user", "content": "Classify warm-up"}], max_tokens=16)
            singles.append(time.perf_counter() - t0)
        single = statistics.median(singles)
        options = ScopeOptions(sampling=args.sampling)
        context = MethodContext(llm=llm, llm_config=LLMConfig(url=stub.url, model="stub"))
        method = TabScope(options, context)
        method.measure(table)  # probe /tokenize and load tokenizers outside the timed runs
        walls, shares, ratios, calls = [], [], [], 0
        for i in range(args.queries):
            trace = Trace.in_memory()
            t0 = time.perf_counter()
            result = method.answer(
                f"How many points did the team score in 1994? (#{i})",
                TableSet([("t", table)]),
                trace=trace,
            )
            wall = time.perf_counter() - t0
            inside = in_llm_seconds(trace)
            walls.append(wall)
            shares.append((wall - inside) / wall)
            ratios.append(wall / single)
            calls = result.steps
        method.close()
        http = len(stub.chat_requests) - 3
    out = {
        "queries": args.queries,
        "latency_s": args.latency,
        "n_mode": args.n_mode,
        "sampling": args.sampling,
        "status": result.status,
        "llm_calls_per_question": calls,
        "http_chat_requests_per_question": http / args.queries,
        "single_call_s": round(single, 3),
        "median_wall_s": round(statistics.median(walls), 3),
        "median_wall_over_single_call": round(statistics.median(ratios), 3),
        "median_wall_over_latency": round(statistics.median(walls) / args.latency, 3),
        "median_framework_ms": round(
            1000 * statistics.median(w * s for w, s in zip(walls, shares, strict=True)), 1
        ),
        "median_framework_share_pct": round(100 * statistics.median(shares), 2),
    }
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
