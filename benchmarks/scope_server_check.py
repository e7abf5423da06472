"""End-to-end check of TabScope against a real OpenAI-compatible server (e.g. llama.cpp's).

    python benchmarks/scope_server_check.py --url http://127.0.0.1:8765/v1 --model gemma \
        [--table examples/corpus/league_standings.csv] [--questions 3] [--steps N] [--stub]

Manual tool, not part of the test run. For each question it runs TabScope (default options)
with a trace and checks: the run ends with a status (never a traceback), the calls stay within
the step cap, one ``llm_call`` event per call; and it prints how the server handled ``n`` and
``logprobs`` (the ``n_request`` decisions: one response or emulated by the client; logprobs
present or absent), the tokenizer that counted and the context the server reported.
``--stub`` runs against the in-process stub server instead (a smoke test of this script).
Exit 1 if a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from tablequest.llm.config import build_llm, resolve_config
from tablequest.llm.stub import StubServer
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.scope import ScopeOptions, TabScope
from tablequest.table import read_tables
from tablequest.trace import Trace

QUESTIONS = [
    "Which team tops the league standings with 33 points?",
    "How many goals did Fenwick Albion concede?",
    "How many teams have more than 20 points?",
    "Which team has the most wins?",
]


def stub_reply(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    if first.startswith("Classify"):
        return json.dumps({"question_type": "lookup"})
    if "f_row()" in first:
        return "f_row([row_0, row_1])"
    if "f_col()" in first:
        return "f_col([*])"
    if first.startswith("You are refining"):
        return json.dumps({"action": "keep", "final_rows": [], "final_columns": []})
    return "<think>stub</think><answer>stub</answer>"


def check(method: TabScope, table_id: str, table: Any, question: str, steps: int) -> bool:
    trace = Trace.in_memory()
    try:
        result = method.answer(
            question, TableSet([(table_id, table)]), budget=StepBudget(steps), trace=trace
        )
    except Exception:  # the point of the check: report it
        print("  FAIL traceback:\n" + traceback.format_exc())
        return False
    events = trace.events
    llm = [e for e in events if e["kind"] == "llm_call"]
    problems = []
    if result.status not in ("answered", "insufficient", "failed"):
        problems.append(f"status {result.status!r}")
    if result.steps > steps:
        problems.append(f"{result.steps} calls > cap {steps}")
    if len(llm) != result.steps:
        problems.append(f"{len(llm)} llm_call events != {result.steps} calls")
    d = result.details
    n_how = sorted({e["n_request"] for e in events if "n_request" in e})
    logprobs = {
        k: v.get("logprobs") for k, v in (d.get("retrieval") or {}).items() if k != "aggregation"
    }
    print(
        f"  status={result.status} answer={str(result.answer)[:40]!r} calls={result.steps}/{steps} "
        f"type={d.get('question_type')} scope={d.get('scope', {}).get('used')} "
        f"tokenizer={d.get('tokenizer')} tokens={d.get('tokens')} context={d.get('context_tokens')}"
    )
    print(f"  n handling: {n_how or ['no retrieval']}; logprobs: {logprobs or 'no retrieval'}")
    print(f"  fallbacks: {[f['stage'] + ': ' + f['reason'][:60] for f in d.get('fallbacks', [])]}")
    if problems:
        print(f"  FAIL {problems}")
        return False
    print("  OK")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--model", default="model")
    parser.add_argument("--table", type=Path, default=Path("examples/corpus/league_standings.csv"))
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--steps", type=int, default=ScopeOptions().default_steps())
    parser.add_argument("--stub", action="store_true")
    args = parser.parse_args()
    stub = StubServer(stub_reply, tokenize=True).start() if args.stub else None
    url = stub.url if stub else args.url
    if not url:
        parser.error("--url is required (or --stub)")
    config = resolve_config(url=url, model=args.model, cache=False)
    llm = build_llm(config)
    table = read_tables(args.table)[0]
    method = TabScope(ScopeOptions(), MethodContext(llm=llm, llm_config=config))
    ok = True
    for question in QUESTIONS[: args.questions]:
        print(f"== {question}")
        ok = check(method, args.table.name, table, question, args.steps) and ok
    method.close()
    if stub:
        stub.close()
    print("== all checks passed" if ok else "== SOME CHECKS FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
