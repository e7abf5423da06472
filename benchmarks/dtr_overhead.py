"""DTR framework overhead per question against a stub server with 1 s latency per call.

    python benchmarks/dtr_overhead.py [--table FILE.xlsx] [--queries 10] [--latency 1] [--json]

The stub server (real HTTP on 127.0.0.1) sleeps `--latency` seconds per call, then answers a
decomposition into SELECT, FILTER, AGG and one step per operation whose code runs in the real
sandbox; DTR executes two paths (7 calls per question) with the memory on (a temporary file)
and a trace file per question. Overhead = wall time − time inside LLM calls, as a median share
of the wall time (target ≤ 5%); it includes comprehension, planning, memory reads and writes,
traces and every sandbox round trip (reset, programs, probes). The first question, which
starts the sandbox session (kept for later questions on the same table), is reported apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tablequest.llm import OpenAICompatible
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.research import DTR, ResearchOptions, pick_table
from tablequest.trace import Trace

DEFAULT = (
    Path(__file__).resolve().parents[2]
    / "shared" / "data" / "realhitbench" / "data" / "tables" / "employment-table01.xlsx"
)  # fmt: skip
MOD = json.dumps({
    "query_type": "aggregation",
    "sub_queries": [{"text": "the total", "operations": ["SELECT", "FILTER", "AGG"]}],
})  # fmt: skip
CODE = {
    "SELECT": "result = df.select_dtypes('number')",
    "FILTER": "result = df[~df['_aggregate']]",
    "AGG": "result = float(df[~df['_aggregate']].select_dtypes('number').iloc[:, 0].sum())",
}


def make_reply(latency: float):  # type: ignore[no-untyped-def]
    def reply(request: dict[str, Any]) -> Fault:
        prompt = request["messages"][-1]["content"]
        text = MOD
        if "Now carry out operation" in prompt:
            op = prompt.rsplit("Now carry out operation", 1)[1].split(":")[1].strip().split()[0]
            text = f"[THINK] {op}\n[CODE]\n```python\n{CODE[op]}\n```"
        return Fault.delay(latency, then=text)

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=DEFAULT)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = pick_table(args.table)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, StubServer(make_reply(args.latency)) as server:
        llm = OpenAICompatible(server.url, "stub", timeout=args.latency + 30)
        options = ResearchOptions(memory_path=str(Path(tmp) / "memory.duckdb"))
        method = DTR(options, MethodContext(llm=llm))
        for i in range(args.queries + 1):
            trace = Trace(Path(tmp) / f"q{i}.jsonl")
            start = time.perf_counter()
            result = method.answer(f"What is the total? (#{i})", TableSet([("t", table)]),
                                   trace=trace)  # fmt: skip
            wall = time.perf_counter() - start
            rows.append((wall, result.usage.seconds, result.usage.calls, result.status))
        method.close()
    first, rest = rows[0], rows[1:]
    shares = [(wall - llm_s) / wall for wall, llm_s, _, _ in rest]
    out = {
        "queries": len(rest),
        "calls_per_query": statistics.median(calls for _, _, calls, _ in rest),
        "statuses": sorted({status for *_, status in rest}),
        "wall_s_median": round(statistics.median(w for w, *_ in rest), 3),
        "overhead_s_median": round(statistics.median(w - s for w, s, *_ in rest), 3),
        "overhead_share_median": round(statistics.median(shares), 4),
        "overhead_share_max": round(max(shares), 4),
        "first_question_overhead_s": round(first[0] - first[1], 3),
    }
    if args.json:
        print(json.dumps(out))
        return
    for key, value in out.items():
        print(f"{key:28s} {value}")
    print("target: overhead_share_median <= 0.05")


if __name__ == "__main__":
    main()
