"""DTR Algorithm 1 end to end with a scripted LLM and the real sandbox (arXiv:2603.09151)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus import Store
from tablequest.llm import Scripted
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.registry import get_method
from tablequest.methods.research import DTR, ExperienceMemory, ResearchOptions, run_research
from tablequest.methods.research.conclude import DIRECT_TABLE_CHARS
from tablequest.methods.result import Result
from tablequest.sandbox import Sandbox, SandboxUnavailable
from tablequest.table import Table
from tablequest.trace import Trace


def code_reply(code: str, think: str = "doing it") -> str:
    return f"[THINK] {think}\n[CODE]\n```python\n{code}\n```"


SELECT = "result = df[['Region', 'Sales ($) / 2019', '_aggregate']]"
FILTER = "result = df[~df['_aggregate']]"
AGG = "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()"
GOOD = {"SELECT": code_reply(SELECT), "FILTER": code_reply(FILTER), "AGG": code_reply(AGG)}
QUESTION = "What were the total 2019 sales of the cities?"


def make(sandbox: Sandbox, llm: Any, tmp_path: Path, **options: Any) -> DTR:
    opts = {"memory_path": str(tmp_path / "memory.duckdb"), **options}
    return DTR(ResearchOptions(**opts), MethodContext(llm=llm, sandbox=sandbox))


def events(trace: Trace, kind: str, stage: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in trace.events if e["kind"] == kind and (stage is None or e.get("stage") == stage)
    ]


def ran(result: Result) -> list[dict[str, Any]]:
    return [p for p in result.details["paths"] if p["executed"]]


def test_answers_with_paths_vote_trace_and_report(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    mod = script.mod("aggregation", ["SELECT", "FILTER", "AGG"], ["Sales ($) / 2019", "Invented"])
    llm = Scripted(script.replies(mod, GOOD))
    trace = Trace.in_memory()
    result = make(sandbox, llm, tmp_path).answer(QUESTION, TableSet([("t1", sales)]), trace=trace)
    assert (result.status, result.answer) == ("answered", "4200")
    assert result.tables_consulted == ["t1"] and result.final_table == "t1"
    # issue 36: the evidence is the cells the sum read (the cities, not the Total row that
    # happens to say 4,200), found by lineage, and the sum re-run over them gives the answer
    assert {e.how for e in result.evidence} == {"computed"} and result.verified == "verified"
    assert 6 not in {e.row for e in result.evidence} and {e.col for e in result.evidence} == {1}
    assert sum(float(e.value.replace(",", "")) for e in result.evidence) == 4200
    executed = ran(result)
    assert [p["path"] for p in executed] == ["SELECT>FILTER:raw>AGG", "FILTER:raw>SELECT>AGG"]
    assert all(p["f"][0] == 1 and p["f"][2] == 1 and p["valid"] for p in executed)
    assert result.details["votes"] == {"4200": 2} and result.details["stop"] == "converged"
    assert result.details["breakdown"] == {"task_family": "aggregation", "structure": "both-axis"}
    # MOD, two paths of three steps, then the report call (its reply is no report: template)
    assert result.steps == len(llm.calls) == 8 == len(events(trace, "llm_call"))
    assert result.details["report_source"] == "template"
    assert "## Data Overview" in llm.calls[-1].prompt
    execs = events(trace, "exec")
    assert len(execs) == 6 and execs[2]["code"] == AGG and execs[2]["ok"]
    assert events(trace, "error", "mod")[0]["invented_columns"] == ["Invented"]
    report = result.details["report"]
    assert report.startswith(f"# {QUESTION}") and "**Answer:** 4200" in report
    assert "SELECT → FILTER:raw → AGG" in report and "| SELECT>FILTER:raw>AGG |" in report
    json.dumps(result.to_json())  # JSON-safe
    # every step prompt carries the plan, the triples and the frame's columns
    step_prompt = llm.calls[3].prompt
    assert "3. AGG  ← now" in step_prompt and "'Sales ($) / 2019' (number)" in step_prompt
    assert "(East, has_child, Boston)" in step_prompt
    assert "[2 FILTER:raw] [THINK] doing it" in step_prompt  # the context of earlier steps


def test_failing_path_is_replanned_with_a_lesson(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    def steps(key: str, index: int, op: str) -> str:
        if key == "SELECT>FILTER:raw>AGG" and index == 1:
            return code_reply("result = df['Sales 2019']")  # no such column
        return GOOD[op.split(":")[0]]

    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps))
    trace = Trace.in_memory()
    result = make(sandbox, llm, tmp_path).answer(
        QUESTION, TableSet([("t1", sales)]), trace=trace, budget=StepBudget(12, reserve=0)
    )
    assert result.answer == "4200" and result.status == "answered"
    first, *rest = ran(result)
    assert first["path"] == "SELECT>FILTER:raw>AGG" and first["f"][0] == 0
    assert first["reward"] == 0.0 and first["error"].startswith("KeyError")
    assert rest[0]["valid"] and rest[0]["path"] == "FILTER:raw>SELECT>AGG"
    replan = events(trace, "decision", "replan")[0]
    assert replan["failed"] == "SELECT>FILTER:raw>AGG" and replan["error"] == "missing_column"
    assert "header paths" in replan["lessons"][0]
    assert result.details["replans"] >= 1
    # the lesson reaches the next path's prompts (after the experience call, whose reply
    # was no Feedback Summary: the template lessons)
    assert "Feedback Summary:" in llm.calls[2].prompt
    assert result.details["experience"][0]["source"] == "template"
    assert "re-read the header paths" in llm.calls[3].prompt
    assert "Now carry out operation" in llm.calls[3].prompt


def test_vote_counts_format_valid_answers_only(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    order: list[str] = []

    def steps(key: str, index: int, op: str) -> str:
        if key not in order:
            order.append(key)
        if index < len(key.split(">")):
            return GOOD[op.split(":")[0]]
        # the first two paths answer "7" as text: wrong shape for an aggregation
        return code_reply("result = '7'" if order.index(key) < 2 else "result = 10")

    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps))
    result = make(sandbox, llm, tmp_path, max_replans=3).answer(
        QUESTION, TableSet([("t1", sales)]), budget=StepBudget(20, reserve=0)
    )
    assert result.answer == "10" and result.details["votes"] == {"10": 2}
    answers = [(p["answer"], p["valid"]) for p in ran(result)]
    assert answers == [("7", False), ("7", False), ("10", True), ("10", True)]


def test_memory_changes_the_next_questions_path_ranking(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    def steps(key: str, index: int, op: str) -> str:
        # the first operation fails: R̂ = 0, N = 1 (a failure at the third would leave
        # R̂ = 2/3 from the two operations that ran, Alg. 1 line 20, and the path would be
        # retried with its lesson first: test_research_update)
        if key == "SELECT>FILTER:raw>AGG" and index == 1:
            return code_reply("result = df['no such column'].sum()")
        return GOOD[op.split(":")[0]]

    def first_selected(memory: str) -> tuple[str, Result]:
        llm = Scripted(
            script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps)
        )
        trace = Trace.in_memory()
        method = make(sandbox, llm, tmp_path, top_k=1, memory=memory)
        result = method.answer(QUESTION, TableSet([("t1", sales)]), trace=trace)
        return events(trace, "decision", "select")[0]["path"], result

    assert first_selected("off")[0] == "SELECT>FILTER:raw>AGG"  # the prior's favourite
    assert not (tmp_path / "memory.duckdb").exists()  # off: nothing written
    path, result = first_selected("readwrite")  # learns: that path fails, the next one works
    assert path == "SELECT>FILTER:raw>AGG" and result.answer == "4200"
    memory = ExperienceMemory(path=tmp_path / "memory.duckdb")
    learned = memory.summary()
    assert {(p["path"], p["n"]) for p in learned["paths"]} == {
        ("SELECT>FILTER:raw>AGG", 1),  # one operation ran (and failed)
        ("FILTER:raw>SELECT>AGG", 3),  # three operations ran
    }
    path, again = first_selected("read")
    assert path == "FILTER:raw>SELECT>AGG"  # expectation, not the prior, now decides
    stats = {p["path"]: (p["n"], round(p["r_hat"], 3)) for p in again.details["paths"]}
    assert stats["SELECT>FILTER:raw>AGG"] == (1, 0.0)
    assert any("column was not found" in x for x in again.details["lessons"])
    assert memory.summary() == learned  # "read" does not write


def test_memory_lives_in_the_corpus_store(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    store = Store()
    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), GOOD))
    make(sandbox, llm, tmp_path).answer(QUESTION, TableSet([("t1", sales)], store=store))
    rows = store.con.execute("SELECT path, f_exec, f_type FROM dtr_feedback ORDER BY ts").fetchall()
    # one record per R̂/N update: per operation (Alg. 1 line 19), three per path
    assert rows == [("SELECT>FILTER:raw>AGG", 1, 1)] * 3 + [("FILTER:raw>SELECT>AGG", 1, 1)] * 3
    assert not (tmp_path / "memory.duckdb").exists()


def chart_steps(key: str, index: int, op: str) -> str:
    if op == "SELECT":
        return code_reply("result = df.loc[~df['_aggregate'], ['Region', 'Sales ($) / 2019']]")
    return code_reply(
        "fig, ax = plt.subplots()\n"
        "ax.bar(result['Region'], result['Sales ($) / 2019'])\n"
        "ax.set_title('2019 sales')\nresult = 'bar chart'",
        think="draw the bars",
    )


def test_chart_is_produced_and_saved(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    llm = Scripted(script.replies(script.mod("chart", ["SELECT", "CHART"]), chart_steps))
    charts = tmp_path / "charts"
    result = make(sandbox, llm, tmp_path, top_k=1, charts_dir=str(charts)).answer(
        "Draw a bar chart of 2019 sales by city", TableSet([("t1", sales)])
    )
    assert result.status == "answered" and result.answer == "chart (1 figure)"
    assert result.details["chart_data"]["bars"] == [1000.0, 2000.0, 500.0, 700.0]
    assert result.details["chart_data"]["title"] == "2019 sales"
    [png] = result.details["charts"]
    assert Path(png).read_bytes().startswith(b"\x89PNG") and Path(png).parent == charts
    assert "![Chart 1](chart-1.png)" in result.details["report"]


def test_run_research_writes_report_charts_and_result(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    llm = Scripted(script.replies(script.mod("chart", ["SELECT", "CHART"]), chart_steps))
    out = tmp_path / "out"
    run = run_research(
        sales, "Chart the 2019 sales by city", out, llm=llm,
        options=ResearchOptions(top_k=1, memory="off"), context=MethodContext(sandbox=sandbox),
    )  # fmt: skip
    assert run.report_path == out / "report.md" and run.chart_paths == [out / "chart-1.png"]
    report = run.report_path.read_text()
    assert "![Chart 1](chart-1.png)" in report and (out / "chart-1.png").is_file()
    data = json.loads(run.result_path.read_text())
    assert data["status"] == "answered" and data["details"]["charts"] == [str(out / "chart-1.png")]


@pytest.mark.parametrize("steps", [2, 5])
def test_budget_is_never_exceeded(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path, steps: int
) -> None:
    failing = {op: code_reply("raise ValueError('bad')") for op in ("SELECT", "FILTER", "AGG")}
    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), failing))
    trace = Trace.in_memory()
    result = make(sandbox, llm, tmp_path, max_replans=8).answer(
        QUESTION, TableSet([("t1", sales)]), trace=trace, budget=StepBudget(steps, reserve=0)
    )
    assert len(llm.calls) <= steps and result.steps == len(llm.calls)
    assert len(events(trace, "llm_call")) == len(llm.calls)
    # whatever the status, it is an honest one: an answer only when answered, a reason
    # whenever it failed
    assert (result.answer is not None) == (result.status == "answered"), result
    assert result.status != "failed" or result.reason, result


def test_garbage_replies_end_in_a_recorded_fallback(
    sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    llm = Scripted(lambda messages, params: "I cannot help with that {")
    trace = Trace.in_memory()
    result = make(sandbox, llm, tmp_path).answer(QUESTION, TableSet([("t1", sales)]), trace=trace)
    assert len(llm.calls) <= 8 and result.status == "failed"  # never the garbage (issue 36)
    assert result.reason == "the model's reply had no answer in the expected format"
    stages = {e.get("stage") for e in events(trace, "fallback")}
    assert {"mod", "direct"} <= stages
    assert result.details["query_type"] == "aggregation"  # the keyword plan's type


@pytest.mark.slow
def test_escaping_looping_and_memory_eating_programs_become_f_exec_0(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    bad = [
        "result = open('/etc/passwd').read()",
        "while True:\n    pass",
        "big = bytearray(64 * 1024 ** 3)\nresult = len(big)",
    ]
    order: list[str] = []

    def steps(key: str, index: int, op: str) -> str:
        if key not in order:
            order.append(key)
        n = order.index(key)
        if index == 1 and n < len(bad):
            return code_reply(bad[n])
        if index == len(key.split(">")):
            return GOOD["AGG"]
        return code_reply("result = df")

    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps))
    result = make(sandbox, llm, tmp_path, top_k=1, max_replans=4, exec_timeout=2.0).answer(
        QUESTION, TableSet([("t1", sales)]), budget=StepBudget(20, reserve=0)
    )
    executed = ran(result)
    assert [p["f"][0] for p in executed] == [0, 0, 0, 1]
    kinds = [p["error"] for p in executed[:3]]
    assert "PermissionError" in kinds[0] and "TimeoutError" in kinds[1]
    assert "MemoryError" in kinds[2]
    assert result.answer == "4200"


def test_without_a_model_the_comprehension_is_returned(sales: Table) -> None:
    result = DTR(ResearchOptions(), MethodContext()).answer(QUESTION, TableSet([("t1", sales)]))
    assert result.status == "failed" and result.reason == "no LLM configured"
    details = result.details
    assert details["comprehension"]["both_axis_hierarchy"] is True
    assert "(East, has_child, Boston)" in details["triples_head"]
    assert details["candidate_paths"][0]["path"].startswith("SELECT")
    json.dumps(result.to_json())


class BrokenSandbox:
    def session(self, frames: Any) -> Any:
        raise SandboxUnavailable("isolation refused on this machine")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("fallback", [True, False])
def test_unavailable_sandbox_is_a_recorded_outcome(
    script: Any, sales: Table, tmp_path: Path, fallback: bool
) -> None:
    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "AGG"]), GOOD))
    context = MethodContext(llm=llm, sandbox=BrokenSandbox())  # type: ignore[arg-type]
    options = ResearchOptions(memory="off", fallback_direct=fallback)
    result = DTR(options, context).answer(QUESTION, TableSet([("t1", sales)]))
    if fallback:
        assert result.status == "answered" and result.details["fallback"] == "direct"
        assert result.answer == "direct"
    else:
        assert result.status == "failed" and result.reason.startswith("sandbox unavailable")


def test_the_fallback_never_cuts_a_big_table_silently(script: Any, sales: Table) -> None:
    """DTR's non-code fallback shows the model at most DIRECT_TABLE_CHARS of the table; the
    cut is at a row boundary and is a trace event and a result field, not silent."""
    rows = [["City", "Year", "Sales"]] + [[f"City {i:05d}", "2019", str(i)] for i in range(2000)]
    big = Table.from_rows(rows, title="sales by city")
    llm = Scripted(script.replies(script.mod("aggregation", ["SELECT", "AGG"]), GOOD))
    context = MethodContext(llm=llm, sandbox=BrokenSandbox())  # type: ignore[arg-type]
    trace = Trace.in_memory()
    result = DTR(ResearchOptions(memory="off"), context).answer(
        QUESTION, TableSet([("t1", big)]), trace=trace
    )
    cut = result.details["direct_table_cut"]
    assert cut["limit"] == DIRECT_TABLE_CHARS and cut["chars_shown"] <= DIRECT_TABLE_CHARS
    assert cut["chars"] > DIRECT_TABLE_CHARS and 2 < cut["lines_shown"] < cut["lines"]
    (event,) = events(trace, "decision", "direct_table_cut")
    assert f"{cut['lines_shown']:,} of {cut['lines']:,} table lines" in event["reason"]
    prompt = llm.calls[-2].prompt  # the fallback's prompt (the report's is last): whole rows
    shown = [line for line in prompt.splitlines() if line.startswith("| City ")]
    assert shown and all(line.rstrip().endswith("|") for line in shown)
    small = DTR(ResearchOptions(memory="off"), context).answer(QUESTION, TableSet([("t1", sales)]))
    assert "direct_table_cut" not in small.details


def test_registered_with_typed_options() -> None:
    spec = get_method("research")
    assert spec.input == "table" and "arXiv:2603.09151" in (spec.paper or "") and spec.needs_llm
    options = spec.make_options({"alpha": "0.5", "memory": "off", "update": "lr"})
    assert isinstance(options, ResearchOptions) and options.alpha == 0.5
    assert options.default_steps() == 8
    method = spec.build(options, MethodContext())
    assert isinstance(method, DTR) and method.name == "research"
    method.close()


@pytest.mark.parametrize("echo", ["Answer: insufficient", "Final Answer: Question: {q} Answer"])
def test_a_direct_reply_that_refuses_or_echoes_the_prompt_is_no_answer(
    script: Any, sales: Table, echo: str
) -> None:
    inner = script.replies(script.mod("aggregation", ["SELECT", "AGG"]), GOOD)

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        text = inner(messages, params)
        return echo.format(q=QUESTION) if text == "Final Answer: direct" else text

    context = MethodContext(llm=Scripted(reply), sandbox=BrokenSandbox())  # type: ignore[arg-type]
    result = DTR(ResearchOptions(memory="off"), context).answer(QUESTION, TableSet([("t1", sales)]))
    assert result.status != "answered" and result.answer is None
