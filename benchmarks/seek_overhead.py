"""TableSeek framework overhead per query against a stub server with 1 s latency per call.

    python benchmarks/seek_overhead.py [--corpus ../shared/data/wtq/csv] [--queries 10] [--json]

The stub server (real HTTP on 127.0.0.1) sleeps `--latency` seconds per call and then answers
a regenerate-then-select trajectory (pattern generation, 2 refine rounds, QA: 4 calls).
Framework time = wall time − time spent inside LLM calls; reported as a median share of the
wall time (target ≤ 5%).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tablequest.corpus import Store, grep_rank, ingest
from tablequest.llm import OpenAICompatible
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.base import MethodContext
from tablequest.methods.seek import SeekConfig, TableSeek
from tablequest.trace import Trace

QUESTIONS = [
    "What was the last year where this team was a part of the USL A-League?",
    "Which nation won the most gold medals?",
    "How many goals did the team concede in 2004?",
    "Who was the first player drafted?",
    "What is the total attendance in 2002?",
]


def make_reply(latency: float):  # type: ignore[no-untyped-def]
    def reply(request: dict[str, Any]) -> Fault:
        prompt = request["messages"][-1]["content"]
        if "Candidate tables" in prompt and "Current grep patterns: 'year'" in prompt:
            text = json.dumps({"action": "regenerate", "patterns": ["league", "season", "team"]})
        elif "Candidate tables" in prompt:
            text = json.dumps({"action": "select", "selected_tables": ["Table_0"]})
        elif "grep patterns" in prompt:
            text = json.dumps({"patterns": ["year", "team", "2004", "attendance", "gold"]})
        else:
            text = json.dumps({"status": "answered", "answer": "2004", "evidence": []})
        return Fault.delay(latency, then=text)

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("examples/corpus"))
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "c.duckdb")
        ingest(store, [args.corpus])
        grep_rank(store, ["warm-up"], 1)  # build the grep index outside the timed queries
        shares, walls, frameworks = [], [], []
        with StubServer(make_reply(args.latency)) as server:
            llm = OpenAICompatible(server.url, "stub", timeout=args.latency + 30)
            seek = TableSeek(SeekConfig.named("5step-5s1-small"), MethodContext(llm=llm))
            for i in range(args.queries):
                question = QUESTIONS[i % len(QUESTIONS)] + f" (#{i})"
                trace = Trace(Path(tmp) / f"q{i}.jsonl")
                t0 = time.perf_counter()
                result = seek.answer(question, store, trace=trace)
                wall = time.perf_counter() - t0
                framework = wall - result.usage.seconds
                walls.append(wall)
                frameworks.append(framework)
                shares.append(framework / wall)
        out = {
            "tables": len(store),
            "queries": args.queries,
            "calls_per_query": result.usage.calls,
            "median_wall_s": round(statistics.median(walls), 3),
            "median_framework_ms": round(1000 * statistics.median(frameworks), 1),
            "median_framework_share_pct": round(100 * statistics.median(shares), 2),
        }
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
