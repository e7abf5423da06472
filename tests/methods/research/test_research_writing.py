"""DTR's model-written abstracted experience (§3.4) and report (§3.5): parsing, the
value-agnostic rule, the template fallbacks and what the result records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.parse import ParseError
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.research import DTR, ExperienceMemory, ResearchOptions
from tablequest.methods.research.abstraction import ValueIndex, parse_experience
from tablequest.methods.research.narrate import parse_report
from tablequest.sandbox import Sandbox
from tablequest.table import Table
from tablequest.trace import Trace

QUESTION = "What were the total 2019 sales of the cities?"
SELECT = "result = df[['Region', 'Sales ($) / 2019', '_aggregate']]"
FILTER = "result = df[~df['_aggregate']]"
AGG = "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()"
PAPER_EXAMPLE = """Feedback Summary:
- - Path π1 first grouped seasons to compute total sales, then filtered Q3; filtering \
operation should be executed first.
- - Error: category not found. Action: re-read table samples and derive sub-column \
product category.
- - Repeated sorting operations before and after grouping do not contribute.
**Execution Reflection:** maintaining the correct filter-then-aggregate order; sorting last."""
EXPERIENCE = """<think>let me see</think>
Feedback Summary:
- A column name was guessed: SELECT the exact 'Sales ($) / 2019' header path first.
- Boston was counted with the totals; exclude aggregate rows before AGG.
- The sum came out as 4,200 only after filtering.
- FILTER before AGG keeps the totals out.
Execution Reflection: read the header paths, filter the total rows, then aggregate."""
REPORT = """## Data Overview
The 2019 sales column of four cities in two regions; the Total row was excluded.
## Calculation Process
1. Selected the 2019 sales column. 2. Dropped the total rows. 3. Summed the rest.
## Key Figures
- Total 2019 sales of the cities: 4,200
## Insights
New York alone accounts for almost half of the total."""


def code(text: str) -> str:
    return f"[THINK] doing it\n[CODE]\n```python\n{text}\n```"


def replies(
    script: Any, *, experience: str = EXPERIENCE, report: str = REPORT, fail_first: bool = True
) -> Callable[..., str]:
    """MOD, steps (the first path's SELECT fails once), the experience and the report."""
    good = {"SELECT": code(SELECT), "FILTER": code(FILTER), "AGG": code(AGG)}
    seen: list[str] = []

    def steps(key: str, index: int, op: str) -> str:
        if fail_first and index == 1 and not seen:
            seen.append(key)
            return code("result = df['Sales 2019']")  # KeyError
        return good[op.split(":")[0]]

    inner = script.replies(script.mod("aggregation", ["SELECT", "FILTER", "AGG"]), steps)

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        if "Feedback Summary:" in prompt:
            return experience
        if "## Data Overview" in prompt:
            return report
        return str(inner(messages, params))

    return reply


def run(
    sandbox: Sandbox, sales: Table, tmp_path: Path, reply: Callable[..., str], **options: Any
) -> tuple[Any, Scripted, Trace]:
    llm = Scripted(reply)
    budget = options.pop("budget", None) or StepBudget(16, reserve=0)
    opts = {"memory_path": str(tmp_path / "m.duckdb"), "top_k": 1, **options}
    method = DTR(ResearchOptions(**opts), MethodContext(llm=llm, sandbox=sandbox))
    trace = Trace.in_memory()
    result = method.answer(QUESTION, TableSet([("t1", sales)]), trace=trace, budget=budget)
    return result, llm, trace


def stage(trace: Trace, name: str) -> list[dict[str, Any]]:
    return [e for e in trace.events if e["kind"] == "decision" and e.get("stage") == name]


# -- parsing ----------------------------------------------------------------------------------
def test_the_papers_example_format_parses() -> None:
    bullets, reflection = parse_experience(PAPER_EXAMPLE)
    assert len(bullets) == 3 and bullets[0].startswith("Path π1 first grouped seasons")
    assert bullets[1].startswith("Error: category not found. Action: re-read")
    assert reflection == "maintaining the correct filter-then-aggregate order; sorting last."


@pytest.mark.parametrize(
    "reply", ["Final Answer: direct", "Feedback Summary:\nnothing to say", "", "- a bullet"]
)
def test_malformed_experience_is_a_parse_error(reply: str) -> None:
    with pytest.raises(ParseError):
        parse_experience(reply)


def test_value_index_refuses_cell_values_not_headers(sales: Table) -> None:
    comp = DTR(ResearchOptions()).comprehend(sales)
    values = ValueIndex(comp.frame.df)
    assert values.quoted("Boston was counted with the totals") == ["boston"]
    assert values.quoted("The sum came out as 1,500 only after filtering") == ["1,500"]
    assert values.quoted("West and East are sections") == ["east", "west"]
    assert values.quoted("exclude the Total rows before summing") == []  # structure
    # header names and small counts are structure, not values
    assert values.quoted("SELECT the 'Sales ($) / 2019' header path, top 3 regions") == []
    assert values.quoted("FILTER before AGG keeps the Region totals out") == []


def test_report_checks() -> None:
    assert parse_report(REPORT, "4200").startswith("## Data Overview")
    assert parse_report("# Title\n" + REPORT, "4200").startswith("## Title")  # one title only
    with pytest.raises(ParseError, match="never states the answer"):
        parse_report(REPORT.replace("4,200", "about four thousand"), "4200")
    with pytest.raises(ParseError):
        parse_report("Final Answer: 4200", "4200")
    with pytest.raises(ParseError, match="answer line"):
        parse_report("Answer: 4200\n" + REPORT, "4200")
    # many items or no number: no answer check
    assert parse_report(REPORT, "a, b, c, d")


# -- end to end -------------------------------------------------------------------------------
def test_llm_experience_is_value_agnostic_shown_and_remembered(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    result, llm, trace = run(sandbox, sales, tmp_path, replies(script))
    assert result.answer == "4200" and result.details["experience_source"] == "llm"
    (event,) = stage(trace, "experience")
    assert event["source"] == "llm" and event["reason"] is None
    # the bullets quoting "Boston" and a cell value (4,200 is the Total row's cell) are refused
    assert len(event["refused"]) == 2 and any("Boston" in x for x in event["refused"])
    lessons = result.details["lessons"]
    assert "FILTER before AGG keeps the totals out." in lessons
    assert not any("Boston" in x or "4,200" in x for x in lessons)
    # the experience prompt showed the failed path and the rule-based finding
    prompt = next(c.prompt for c in llm.calls if "Feedback Summary:" in c.prompt)
    assert "failed at SELECT: KeyError" in prompt and "re-read the header paths" in prompt
    # the next step prompt shows the model's lessons and its reflection
    after = llm.calls.index(next(c for c in llm.calls if "Feedback Summary:" in c.prompt)) + 1
    assert "FILTER before AGG keeps the totals out." in llm.calls[after].prompt
    assert "Execution reflection: read the header paths" in llm.calls[after].prompt
    remembered = ExperienceMemory(path=tmp_path / "m.duckdb").summary()["lessons"]
    texts = {x["lesson"] for x in remembered}
    assert "FILTER before AGG keeps the totals out." in texts
    assert not any("reflection" in t.lower() for t in texts)  # the reflection is not stored


def test_unusable_experience_falls_back_to_the_template(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    quoting = "Feedback Summary:\n- Boston is wrong\n- New York has 2,000"
    for reply, reason in [("no idea", "BadCall"), (quoting, "every lesson quoted table values")]:
        result, _, trace = run(
            sandbox, sales, tmp_path, replies(script, experience=reply), memory="off"
        )
        (event,) = stage(trace, "experience")
        assert event["source"] == "template" and reason in event["reason"]
        assert result.details["experience_source"] == "template"
        assert any("header paths" in x for x in result.details["lessons"])


def test_experience_switched_off_or_without_room_makes_no_call(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    result, llm, trace = run(sandbox, sales, tmp_path, replies(script), llm_experience=False)
    assert not any("Feedback Summary:" in c.prompt for c in llm.calls)
    assert stage(trace, "experience")[0]["reason"] == "llm_experience is off"
    # 1 MOD + 1 failed step = 2 used of 5: one call would leave 2 < 3 steps for the next path
    result, llm, trace = run(
        sandbox, sales, tmp_path, replies(script), budget=StepBudget(5, reserve=0)
    )
    assert not any("Feedback Summary:" in c.prompt for c in llm.calls)
    assert stage(trace, "experience")[0]["reason"].startswith("no room")
    assert result.details["experience_source"] == "template"


def test_llm_report_is_used_with_the_execution_record(
    script: Any, sandbox: Sandbox, sales: Table, tmp_path: Path
) -> None:
    result, llm, trace = run(sandbox, sales, tmp_path, replies(script, fail_first=False))
    assert result.details["report_source"] == "llm" and "report_fallback" not in result.details
    report = result.details["report"]
    assert report.startswith(f"# {QUESTION}") and "**Answer:** 4200" in report
    assert report.index("## Data Overview") < report.index("## How it was answered")
    assert "## Candidate paths" in report and "New York alone accounts" in report
    prompt = llm.calls[-1].prompt
    assert "Answer: 4200" in prompt and "code: result = df.loc[~df['_aggregate']" in prompt
    assert stage(trace, "report") == [
        {**stage(trace, "report")[0], "source": "llm", "reason": None}
    ]
    assert result.details["experience_source"] == "none"  # nothing failed: no reflection


@pytest.mark.parametrize(
    ("options", "budget", "reason"),
    [
        ({"llm_report": False}, 16, "llm_report is off"),
        ({"fallback_direct": False}, 4, "step budget exhausted"),  # MOD + 3 steps: all used
        ({"_reply": "Final Answer: 4200"}, 16, "BadCall"),
    ],
)
def test_report_falls_back_to_the_template_and_says_why(
    script: Any,
    sandbox: Sandbox,
    sales: Table,
    tmp_path: Path,
    options: dict[str, Any],
    budget: int,
    reason: str,
) -> None:
    reply = options.pop("_reply", REPORT)
    result, llm, _ = run(
        sandbox, sales, tmp_path, replies(script, report=reply, fail_first=False),
        budget=StepBudget(budget, reserve=0), **options,
    )  # fmt: skip
    assert result.answer == "4200" and result.details["report_source"] == "template"
    assert reason in result.details["report_fallback"]
    assert "## Data Overview" not in result.details["report"]
    assert "## How it was answered" in result.details["report"]
    asked = sum("## Data Overview" in c.prompt for c in llm.calls)
    assert asked == (1 if reason == "BadCall" else 0)
