"""DTR's ablation switches (Table 3: Meta, QDO, Exp., Abst.; Table 4: prompt strategy): each
changes what the model sees, how many calls run and what the trace records."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.research import DTR, ExperienceMemory, ResearchOptions
from tablequest.methods.research.memory import FeedbackRecord, Lesson
from tablequest.methods.result import Result
from tablequest.sandbox import Sandbox
from tablequest.table import Table
from tablequest.trace import Trace

QUESTION = "What were the total 2019 sales of the cities?"
AGG = "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()"
SWITCHES = ("meta_graph", "operations", "expectation", "abstraction", "prompting")


def good(script: Any) -> dict[str, str]:
    return {
        "SELECT": script.code("result = df[['Region', 'Sales ($) / 2019', '_aggregate']]"),
        "FILTER": script.code("result = df[~df['_aggregate']]"),
        "AGG": script.code(AGG),
        "PROGRAM": script.code(AGG),
    }


def ask(
    sandbox: Sandbox, sales: Table, tmp_path: Path, reply: Any, **options: Any
) -> tuple[Result, Scripted, Trace]:
    llm = Scripted(reply)
    opts = {"memory_path": str(tmp_path / "m.duckdb"), "llm_report": False, **options}
    trace = Trace.in_memory()
    result = DTR(ResearchOptions(**opts), MethodContext(llm=llm, sandbox=sandbox)).answer(
        QUESTION, TableSet([("t1", sales)]), trace=trace, budget=StepBudget(12, reserve=0)
    )
    return result, llm, trace


def stage(trace: Trace, name: str) -> list[dict[str, Any]]:
    return [e for e in trace.events if e["kind"] == "decision" and e.get("stage") == name]


def test_switches_are_declared_options_with_their_paper_source() -> None:
    fields = ResearchOptions.model_fields
    for name in (*SWITCHES, "selection", "llm_experience", "llm_report"):
        extra = fields[name].json_schema_extra
        assert isinstance(extra, dict) and "DTR" in str(extra["paper"]), name
    assert all(fields[name].default in (True, "think_code") for name in SWITCHES)


def test_meta_graph_off_shows_the_plain_head_and_a_plain_frame(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    reply = script.replies(script.mod("aggregation", ["SELECT", "AGG"]), {})
    _, llm, _ = ask(sandbox, sales, tmp_path, reply, meta_graph=False)
    mod, step = llm.calls[0].prompt, llm.calls[1].prompt
    assert "The table's first rows, as stored" in mod and "has_child" not in mod
    assert "| Boston" in mod and "Table structure (the first rows as stored)" in step
    assert "_aggregate" not in step and "_aggregate" not in llm.calls[1].messages[0]["content"]
    comp = DTR(ResearchOptions(meta_graph=False)).comprehend(sales)
    assert "_aggregate" not in comp.frame.df.columns and comp.traits.hierarchical is False
    _, llm, _ = ask(sandbox, sales, tmp_path, reply)  # default: triples and the flag column
    assert "(East, has_child, Boston)" in llm.calls[0].prompt
    assert "_aggregate" in llm.calls[1].messages[0]["content"]


def test_operations_off_runs_one_free_form_program_without_mod(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    reply = script.replies(script.mod("aggregation", ["SELECT", "AGG"]), good(script))
    result, llm, trace = ask(sandbox, sales, tmp_path, reply, operations=False)
    assert result.answer == "4200" and len(llm.calls) == 1  # no MOD call, one step
    assert not any("Operation bank:" in c.prompt for c in llm.calls)
    assert "answer the whole question in one program" in llm.calls[0].prompt
    assert [p["path"] for p in stage(trace, "candidates")[0]["paths"]] == ["PROGRAM"]
    assert stage(trace, "mod")[0]["qdo"] is False
    assert result.details["query_type"] == "aggregation"  # from the question's keywords
    result, llm, _ = ask(sandbox, sales, tmp_path, reply, memory="off")
    # on: MOD, then the one admissible path SELECT>AGG, two steps
    assert "Operation bank:" in llm.calls[0].prompt and len(llm.calls) == 3


def test_expectation_off_ranks_by_prior_and_ignores_remembered_statistics(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    structure = DTR(ResearchOptions()).comprehend(sales).graph.structure_key()
    memory = ExperienceMemory(path=tmp_path / "m.duckdb")
    memory.record(structure, "aggregation", [
        FeedbackRecord("SELECT>FILTER:raw>AGG", 0, 0.1, 0, 0.0),
        FeedbackRecord("FILTER:raw>SELECT>AGG", 1, 0.1, 1, 0.95),
    ])  # fmt: skip
    memory.flush()
    reply = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), good(script))
    first = {}
    for expectation in (True, False):
        _, _, trace = ask(
            sandbox, sales, tmp_path, reply, memory="read", expectation=expectation, top_k=1
        )
        first[expectation] = stage(trace, "select")[0]["path"]
        rank = stage(trace, "rank")[0]
        assert rank["scored_by"] == ("E" if expectation else "prior")
        if not expectation:
            assert all(e["E"] == round(e["prior"], 4) and e["n"] == 0 for e in rank["expectations"])
    assert first == {True: "FILTER:raw>SELECT>AGG", False: "SELECT>FILTER:raw>AGG"}


def test_abstraction_off_learns_shows_and_stores_no_lessons(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    structure = DTR(ResearchOptions()).comprehend(sales).graph.structure_key()
    memory = ExperienceMemory(path=tmp_path / "m.duckdb")
    memory.record(structure, "aggregation", [], [Lesson("Remembered: clean units first")])
    memory.flush()
    steps = good(script)

    def failing(key: str, index: int, op: str) -> str:
        if key == "SELECT>FILTER:raw>AGG" and index == 1:
            return str(script.code("result = df['Sales 2019']"))  # KeyError
        return steps[op.split(":")[0]]

    reply = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), failing)
    result, llm, trace = ask(sandbox, sales, tmp_path, reply, abstraction=False, top_k=1)
    assert result.answer == "4200" and result.details["experience_source"] == "off"
    (replan,) = stage(trace, "replan")
    assert replan["lessons"] == [] and replan["added"] == [] and replan["abstraction"] is False
    assert stage(trace, "experience") == [] and result.details["lessons"] == []
    assert not any("Lessons from earlier runs" in c.prompt for c in llm.calls)
    assert not any("Feedback Summary:" in c.prompt for c in llm.calls)
    stored = ExperienceMemory(path=tmp_path / "m.duckdb").summary()
    assert [x["lesson"] for x in stored["lessons"]] == ["Remembered: clean units first"]
    paths = {p["path"] for p in stored["paths"]}
    assert paths == {"SELECT>FILTER:raw>AGG", "FILTER:raw>SELECT>AGG"}
    # on: the remembered lesson is shown and the failure teaches one more
    result, llm, trace = ask(sandbox, sales, tmp_path, reply, top_k=1, memory="read")
    assert "Remembered: clean units first" in llm.calls[1].prompt  # the first step
    result, llm, trace = ask(sandbox, sales, tmp_path, reply, top_k=1, memory="off")
    assert stage(trace, "replan")[0]["lessons"] and result.details["lessons"]
    assert result.details["experience_source"] == "template"  # the scripted reply is no summary


@pytest.mark.parametrize(
    ("prompting", "present", "absent"),
    [
        ("think_code", "[THINK] one or two sentences", "Think briefly"),
        ("direct", "one Python code block only, no explanation", "[THINK]"),
        ("hint", "Think briefly about the last output", "[THINK]"),
        ("reflection", "[THINK] one or two sentences", "Think briefly"),
    ],
)
def test_prompt_strategy_of_table_4(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path, prompting: str, present: str,
    absent: str,
) -> None:  # fmt: skip
    def plain_code(key: str, index: int, op: str) -> str:
        code = good(script)[op.split(":")[0]].split("[CODE]\n", 1)[1]
        return code if prompting != "think_code" else good(script)[op.split(":")[0]]

    reply = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), plain_code)
    result, llm, _ = ask(sandbox, sales, tmp_path, reply, prompting=prompting, memory="off")
    system = llm.calls[1].messages[0]["content"]
    assert present in system and absent not in system
    assert result.answer == "4200"  # a bare code block parses in every strategy


def test_multi_stage_reflection_checks_each_operation_and_may_correct_it(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = {**good(script), "AGG": script.code("result = 'about four thousand'")}
    inner = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps)
    discarded: list[str] = []
    monkeypatch.setattr(Scripted, "discard", lambda self, reply: discarded.append(reply.text))

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        if "Reflect on this output" in prompt:
            if re.search(r"^2\. FILTER\S*  ← now", prompt, re.M):
                return "Looks fine to me."  # neither [OK] nor code: unusable
            fix = "3. AGG  ← now" in prompt
            return f"[CODE]\n```python\n{AGG}\n```" if fix else "[OK]"
        return str(inner(messages, params))

    result, llm, trace = ask(
        sandbox, sales, tmp_path, reply, prompting="reflection", memory="off", top_k=1
    )
    assert result.answer == "4200"
    checks = stage(trace, "reflection")
    assert [(e["op"], e["revised"]) for e in checks] == [
        ("SELECT", False), ("FILTER:raw", False), ("AGG", True)
    ]  # fmt: skip
    assert [e.get("unusable", False) for e in checks] == [False, True, False]
    assert discarded == ["Looks fine to me."]  # the LLM cache forgets only that reply
    assert len(llm.calls) == 1 + 3 + 3  # MOD, three steps, three checks
    execs = [e for e in trace.events if e["kind"] == "exec"]
    assert execs[-1]["code"] == AGG and execs[-1]["ok"]


def test_step_prompts_show_what_the_earlier_operations_returned(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    reply = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), good(script))
    _, llm, _ = ask(sandbox, sales, tmp_path, reply, memory="off", top_k=1)
    agg_prompt = llm.calls[3].prompt
    assert "3. AGG  ← now" in agg_prompt
    # the observation of step 2 (a frame of the four city rows), not "no result"
    assert "→ result: frame, size 4" in agg_prompt and "no result" not in agg_prompt
