"""LLM calls `auto` adds over the methods it routes to, on a mixed run against a slow stub server.

    python benchmarks/auto_overhead.py [--latency 1.0] [--json]

The mix: corpus questions over the bundled examples (TableSeek's selection, then a route per
table), a big flat table (over the fit limit of the stub's 4,096-token context → TableRAG),
and messy sheets (two header rows, merged cells, a "Total" row → DTR), plus small flat tables
(TabScope or TableSeek's QA). The stub server (real HTTP on 127.0.0.1) sleeps `--latency`
seconds per chat request and answers every prompt from one deterministic reply function, so a
method sees the same replies inside `auto` and on its own.

For each question the baseline is what the routed work costs without the router: for a corpus,
TableSeek's selection (`TableSeek.select`) plus each routed method on its table; for one table,
the routed method on it. Reported: calls and wall seconds of both, and extra = auto − baseline
(target: ≤ 1 call per question).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tablequest.corpus import Store, ingest
from tablequest.llm import OpenAICompatible
from tablequest.llm.config import LLMConfig
from tablequest.llm.stub import Fault, StubServer
from tablequest.llm.usage import StepBudget
from tablequest.methods import MethodContext, TableSet
from tablequest.methods.auto.router import _seek_options
from tablequest.methods.run import ask
from tablequest.methods.seek import TableSeek
from tablequest.table import Merge, Table

ROOT = Path(__file__).resolve().parents[1]
STEPS = 12


def reply_for(latency: float):  # type: ignore[no-untyped-def]
    """One reply per prompt kind; the last one satisfies every answer parser at once."""

    def reply(body: dict[str, Any]) -> Fault:
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        if "grep patterns" in prompt and "Candidate tables" not in prompt:
            text = json.dumps({"patterns": ["Varna", "league", "gold", "revenue", "total"]})
        elif "Candidate tables" in prompt:
            text = json.dumps({"action": "select", "selected_tables": ["Table_0"]})
        else:
            text = (
                "Thought: I have it.\nFinal Answer: 42\n<answer>42</answer>\n"
                '{"status": "answered", "answer": "42", "evidence": []}'
            )
        return Fault.delay(latency, then=text)

    return reply


def big_table() -> Table:
    header = ["Id", "Name", "City", "Year", "Sales", "Units", "Region", "Note"]
    rows = [[str(i), f"item {i}", f"city {i % 17}", str(2000 + i % 20), str(i * 13 % 997),
             str(i % 50), f"region {i % 5}", "ok"] for i in range(600)]  # fmt: skip
    return Table.from_rows([header, *rows])


def messy_table() -> Table:
    return Table.from_rows(
        [["Region", "2019", "2022"], ["", "Sales", "Sales"], ["North", "10", "14"],
         ["South", "8", "13"], ["Total", "18", "27"]],
        n_header_rows=2, merges=[Merge(0, 1, 0, 2)],
    )  # fmt: skip


def flat_table() -> Table:
    return Table.from_rows([["River", "Length (km)"], ["Varna", "412"], ["Osk", "230"]])


def routed_alone(llm: OpenAICompatible, config: LLMConfig, question: str, method: str,
                 tables: TableSet) -> int:  # fmt: skip
    """Calls the routed method makes on its own (TableSeek's QA for the qa route)."""
    if method == "qa":
        seek = TableSeek(_seek_options(), MethodContext(llm=llm))
        return seek.answer_tables(question, tables, budget=StepBudget(STEPS, reserve=0)).steps
    result = ask(question, tables, method=method, llm=llm, llm_config=config, steps=STEPS,
                 cache=False)  # fmt: skip
    return result.usage.calls


def baseline(llm: OpenAICompatible, config: LLMConfig, question: str,
             source: Store | TableSet, routes: list[dict[str, Any]]) -> int:  # fmt: skip
    calls = 0
    if isinstance(source, Store):
        budget = StepBudget(STEPS, reserve=0)
        TableSeek(_seek_options(), MethodContext(llm=llm)).select(question, source, budget=budget)
        calls += budget.calls
    for route in routes:
        tid = route["table_id"]
        table = source.get(tid) if isinstance(source, Store) else dict(source.tables)[tid]
        store = source if isinstance(source, Store) else None
        calls += routed_alone(llm, config, question, route["method"],
                              TableSet([(tid, table)], store))  # fmt: skip
    return calls


def cases(store: Store) -> list[tuple[str, str, Store | TableSet]]:
    questions = (ROOT / "examples" / "questions.txt").read_text().splitlines()
    out: list[tuple[str, str, Store | TableSet]] = [("corpus", q, store) for q in questions[:4]]
    out.append(("big", "Which item had the highest sales in 2010?",
                TableSet([("big", big_table())])))  # fmt: skip
    out.append(("messy", "Which region grew fastest between 2019 and 2022?",
                TableSet([("messy", messy_table())])))  # fmt: skip
    out.append(("flat", "How long is the river Varna?", TableSet([("flat", flat_table())])))
    out.append(("flat", "Which river is the longest?", TableSet([("flat", flat_table())])))
    return out


def run(latency: float) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubServer(reply_for(latency), max_model_len=4096) as server,
    ):
        store = Store(Path(tmp) / "corpus.duckdb")
        ingest(store, [ROOT / "examples" / "corpus"])
        config = LLMConfig(url=server.url, model=server.model, cache=False)
        llm = OpenAICompatible(server.url, model=server.model)
        for family, question, source in cases(store):
            started = time.perf_counter()
            result = ask(question, source, method="auto", llm=llm, llm_config=config,
                         steps=STEPS, cache=False)  # fmt: skip
            auto_wall = time.perf_counter() - started
            routes = result.details.get("routes", [])
            started = time.perf_counter()
            base = baseline(llm, config, question, source, routes)
            rows.append({"family": family, "question": question, "status": result.status,
                         "routes": [r["method"] for r in routes], "auto_calls": result.usage.calls,
                         "baseline_calls": base, "extra_calls": result.usage.calls - base,
                         "auto_s": round(auto_wall, 2),
                         "baseline_s": round(time.perf_counter() - started, 2)})  # fmt: skip
        store.close()
    extra = [r["extra_calls"] for r in rows]
    return {"latency_s": latency, "questions": rows, "max_extra_calls": max(extra),
            "median_extra_calls": statistics.median(extra)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = run(args.latency)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    for r in out["questions"]:
        print(f"{r['family']:7} {'/'.join(r['routes']) or '-':18} auto {r['auto_calls']:2} calls "
              f"{r['auto_s']:6.1f} s  alone {r['baseline_calls']:2} calls {r['baseline_s']:6.1f} s"
              f"  extra {r['extra_calls']:+d}  {r['question'][:50]}")  # fmt: skip
    print(f"max extra calls per question: {out['max_extra_calls']} (target ≤ 1)")


if __name__ == "__main__":
    main()
