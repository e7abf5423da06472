"""DTR's R̂/N update per operation (Algorithm 1 lines 17–20 of arXiv:2603.09151), on a
scripted trace with hand-computed values: w_type = 1 makes r = f_type exactly (no time part)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.research import DTR, ExperienceMemory, ResearchOptions
from tablequest.methods.result import Result
from tablequest.sandbox import Sandbox
from tablequest.table import Table
from tablequest.trace import Trace

FAILING = "SELECT>FILTER:raw>AGG"
CODE = {
    "SELECT": "result = df[['Region', 'Sales ($) / 2019', '_aggregate']]",
    "FILTER": "result = df[~df['_aggregate']]",
    "AGG": "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()",
}
QUESTION = "What were the total 2019 sales of the cities?"


def run(script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path, **options: Any) -> Any:
    def steps(key: str, index: int, op: str) -> str:
        if key == FAILING and index == 3:
            return str(script.code("result = df['no such column'].sum()"))
        code = CODE.get(op.split(":")[0])
        return str(script.code(code)) if code else "[THINK] nothing to do here"

    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps))
    opts = ResearchOptions.model_validate({
        "selection": "once", "top_k": 1, "w_type": 1.0, "alpha": 1.0, "llm_experience": False,
        "llm_report": False, "memory_path": str(tmp_path / "memory.duckdb"), **options,
    })  # fmt: skip
    trace = Trace.in_memory()
    result: Result = DTR(opts, MethodContext(llm=llm, sandbox=sandbox)).answer(
        QUESTION, TableSet([("t1", sales)]), trace=trace, budget=StepBudget(20, reserve=0)
    )
    return result, trace


def updates(trace: Trace) -> list[tuple[str, str, float, float, int]]:
    return [
        (e["path"], e["op"], e["reward"], e["r_hat"], e["n"])
        for e in trace.events
        if e["kind"] == "decision" and e.get("stage") == "update"
    ]


def test_r_hat_and_n_are_updated_after_each_operation(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    result, trace = run(script, sandbox, sales, tmp_path)
    assert result.answer == "4200"
    got = updates(trace)
    # the first path: SELECT r = 1 → R̂ = 1, N = 1; FILTER r = 1 → R̂ = (1·1 + 1)/2 = 1, N = 2;
    # AGG fails (f_exec = 0) r = 0 → R̂ = (2·1 + 0)/3 = 0.6667, N = 3; then the replan (l. 21–23)
    assert got[:3] == [
        (FAILING, "SELECT", 1.0, 1.0, 1),
        (FAILING, "FILTER:raw", 1.0, 1.0, 2),
        (FAILING, "AGG", 0.0, 0.6667, 3),
    ]
    # the next path runs without an error and with the query's shape: r = 1 per operation
    second = got[3:]
    assert second and {u[0] for u in second} != {FAILING} and len({u[0] for u in second}) == 1
    assert [u[2:] for u in second] == [(1.0, 1.0, n) for n in range(1, len(second) + 1)]
    # Eq. 1 after the failure, Σ N = 3: E = R̂ + α·P·sqrt(ln 3 / (1 + N)) for every candidate
    ranks = [e for e in trace.events if e["kind"] == "decision" and e.get("stage") == "rank"]
    for entry in ranks[1]["expectations"]:
        r_hat, n = (2 / 3, 3) if entry["path"] == FAILING else (0.0, 0)
        assert entry["n"] == n
        want = r_hat + entry["prior"] * math.sqrt(math.log(3) / (1 + n))
        assert entry["E"] == pytest.approx(want, abs=1e-4)
    # the path's details and the memory hold the same statistics: the memory keeps one record
    # per update (Alg. 1 line 19), so folding it gives R̂ and N again
    paths = {p["path"]: p for p in result.details["paths"]}
    assert paths[FAILING]["n"] == 3 and paths[FAILING]["r_hat"] == pytest.approx(2 / 3)
    memory = ExperienceMemory(path=tmp_path / "memory.duckdb")
    memory.flush()
    stats = memory.stats(result.details["comprehension"]["structure"], "aggregation")
    assert (stats[FAILING].n, stats[FAILING].r_hat) == (3, pytest.approx(2 / 3))


def test_update_lr_is_once_per_path(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    """Eq. 5 is stated for the path-level reward R(π): one update per executed path."""
    result, trace = run(script, sandbox, sales, tmp_path, update="lr", eta=0.5, memory="off")
    assert updates(trace) == []
    paths = {p["path"]: p for p in result.details["paths"]}
    # R(π) = 0 (an operation failed): R̂ = (1 − 0.5)·0 + 0.5·0 = 0, N = 1
    assert (paths[FAILING]["n"], paths[FAILING]["r_hat"]) == (1, 0.0)
