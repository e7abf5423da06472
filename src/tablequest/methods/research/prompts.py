"""DTR prompts and their parsers (arXiv:2603.09151 §3.2–3.3, Table 4's [THINK]+[CODE] strategy).

The paper shows only an input example of the decomposition and names the [THINK]/[CODE]
flags; the templates are ours:
- **MOD** (Meta Operation Decomposition, Alg. 1 step 1): the question, the meta graph as
  triples, the frame's columns, remembered lessons and the operation bank; the model answers
  one JSON object with the query type, the sub-queries each mapped to bank operations, the
  columns it needs and the answer format.
- **Step** (Alg. 1 lines 17–26): the plan with the current operation marked, the execution so far
  (each earlier step's [THINK] summary, [CODE] and output) and the lessons; the model answers
  ``[THINK] …`` (summary and validation of the last output, what this step does) and, unless
  the step needs no code, ``[CODE]`` followed by one Python block that assigns ``result``.
- **Direct** (non-code mode, §4.1): the table as text and the question, answered in one line,
  used only when no path produced a valid answer.
- **Step variants** (Table 4's prompt strategies, option ``prompting``): ``direct`` asks for
  one Python block and nothing else ("No [THINK]"), ``hint`` adds a one-line hint to reason
  briefly first, in free format ("Simple [THINK] Hint"); ``think_code`` is the default above.
  With ``operations=false`` (Table 3 without QDO) the path is the one pseudo-operation
  `FREE_OP`: the whole question in one program.
- **Experience** (§3.4 "Abstracted Experience Feedback"): the executed paths of the question
  with their step summaries and errors, and the rule-based findings; the model answers in the
  paper's example format, ``Feedback Summary:`` bullets then ``Execution Reflection:`` (the
  paper's example is quoted in the prompt), value-agnostic.
- **Report** (§3.5 outputs, the "detailed analysis" of App. F.1.3): the question, the answer,
  the executed program with its key intermediate outputs and what comprehension found; the
  model writes Markdown sections Data Overview, Calculation Process, Key Figures, Insights,
  using only numbers from the execution record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tablequest.llm import (
    BadCall,
    Message,
    NoJSONFound,
    extract_json,
    strip_think,
)
from tablequest.methods.research.feedback import EXPECTED, QUERY_TYPES, QueryType
from tablequest.methods.research.operations import BANK, Path, parse_op

__all__ = [
    "FREE_OP",
    "Plan",
    "Step",
    "direct_messages",
    "experience_messages",
    "mod_messages",
    "parse_mod",
    "parse_reflection",
    "parse_step",
    "reflect_messages",
    "report_messages",
    "step_messages",
]

MOD_SYSTEM = (
    "You are DTR, an analyst who plans how to answer questions about messy spreadsheets "
    "(merged cells, headers on both axes, unit rows, total rows). You decompose a question "
    "into sub-queries and map each one to operations of a fixed operation bank; the plan is "
    "then executed as pandas code, one operation at a time."
)

MOD_USER = """Question: {question}

{structure}:
{triples}

The table is loaded for execution as a pandas DataFrame `df`:
{frame}
{lessons}
Operation bank:
{bank}

Decompose the question into sub-queries and map each to operations from the bank, in the order
they should run. For each FILTER say what it constrains: FILTER:raw (raw values, runs before
aggregation) or FILTER:agg (aggregated results, runs after AGG).

Reply with JSON only:
{{"query_type": "{types}",
 "sub_queries": [{{"text": "...", "operations": ["SELECT", "FILTER:raw", "AGG"]}}],
 "columns": ["exact df column names the question needs"],
 "answer_format": "what the final answer looks like"}}"""

STEP_SYSTEM = """You carry out an analysis plan over a pandas DataFrame `df`, one operation \
per reply, in a Python sandbox whose variables persist between operations (pandas as pd, \
numpy as np, matplotlib.pyplot as plt are imported; no files, no network).

Reply in this format:
[THINK] one or two sentences: what the last output shows, whether it is valid, and what this \
operation does.
[CODE]
```python
result = ...
```
Assign this operation's output to `result`. Omit [CODE] only when the operation needs no code. \
The last operation's `result` is the answer, so it must be {expected}. Use the exact column \
names of `df`.{aggregate}"""

STEP_SYSTEM_DIRECT = """You carry out an analysis plan over a pandas DataFrame `df`, one operation \
per reply, in a Python sandbox whose variables persist between operations (pandas as pd, \
numpy as np, matplotlib.pyplot as plt are imported; no files, no network).

Reply with one Python code block only, no explanation:
```python
result = ...
```
Assign this operation's output to `result`. The last operation's `result` is the answer, so it \
must be {expected}. Use the exact column names of `df`.{aggregate}"""

STEP_SYSTEM_HINT = """You carry out an analysis plan over a pandas DataFrame `df`, one operation \
per reply, in a Python sandbox whose variables persist between operations (pandas as pd, \
numpy as np, matplotlib.pyplot as plt are imported; no files, no network).

Think briefly about the last output before you write the code. Give the code in one Python \
block that assigns this operation's output to `result`. The last operation's `result` is the \
answer, so it must be {expected}. Use the exact column names of `df`.{aggregate}"""

STEP_SYSTEMS = {
    "think_code": STEP_SYSTEM,
    "reflection": STEP_SYSTEM,
    "direct": STEP_SYSTEM_DIRECT,
    "hint": STEP_SYSTEM_HINT,
}
REFLECT_SYSTEM = (
    "You check one step of a pandas analysis: whether its output is correct and has the shape "
    "the next operation (or the final answer) needs."
)
REFLECT_USER = """Question: {question}
Query type: {query_type}. The final `result` must be {expected}.

Plan:
{plan}

Operation {index} ran this code:
```python
{code}
```
→ {observation}

Reflect on this output. If it is correct, reply [OK]. Otherwise reply [CODE] followed by one \
corrected Python block that assigns `result` (the sandbox state of earlier operations persists)."""
AGGREGATE_NOTE = " Rows with `_aggregate == True` are totals or subtotals."
FREE_OP = "PROGRAM"
FREE_MEANING = "answer the whole question in one program (no operation plan)"

STEP_USER = """Question: {question}
Query type: {query_type}. The final `result` must be {expected}.

Plan:
{plan}

Table structure ({structure}):
{triples}

{frame}
{lessons}
Execution so far:
{history}

Now carry out operation {index}: {op} — {meaning}."""

DIRECT_SYSTEM = "You answer questions about a table precisely and briefly."
DIRECT_USER = """Table:
{table}

Question: {question}
Answer with one line: `Final Answer: ...` (the value or values only, separated by ", "{extra})."""


@dataclass
class Plan:
    """The MOD output: query type, sub-queries with operations, columns, answer format."""

    query_type: QueryType
    operations: list[str]
    sub_queries: list[dict[str, Any]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    answer_format: str = ""
    unknown_ops: list[str] = field(default_factory=list)
    invented_columns: list[str] = field(default_factory=list)


@dataclass
class Step:
    """One step reply: the [THINK] text and the [CODE] (empty when the step only thinks)."""

    think: str
    code: str


def _lessons_block(lessons: Sequence[str]) -> str:
    if not lessons:
        return ""
    items = "\n".join(f"- {x}" for x in lessons)
    return f"\nLessons from earlier runs on similar tables:\n{items}\n"


MOD_STRUCTURE = (
    "The table as triples of its meta graph (headers on both axes, units, totals, notes)"
)
PLAIN_STRUCTURE = "The table's first rows, as stored (no structure analysis)"


def mod_messages(
    question: str,
    triples: Sequence[str],
    frame: str,
    lessons: Sequence[str],
    *,
    plain: bool = False,
) -> list[Message]:
    """MOD's messages; `plain`: `triples` are the table's first rows (meta_graph=false)."""
    bank = "\n".join(f"- {name}: {meaning}" for name, meaning in BANK.items())
    user = MOD_USER.format(
        structure=PLAIN_STRUCTURE if plain else MOD_STRUCTURE,
        question=question,
        triples="\n".join(triples),
        frame=frame,
        lessons=_lessons_block(lessons),
        bank=bank,
        types="|".join(QUERY_TYPES),
    )
    return [{"role": "system", "content": MOD_SYSTEM}, {"role": "user", "content": user}]


def parse_mod(text: str, *, columns: Sequence[str], max_ops: int) -> Plan:
    """The plan in a MOD reply; unknown operations are dropped (and listed), invented columns
    removed. Raises a `ParseError` when there is no JSON object or no known operation."""
    data = extract_json(text, dict)
    qtype = str(data.get("query_type", "")).strip().lower().replace(" ", "_")
    query_type: QueryType = qtype if qtype in QUERY_TYPES else "lookup"
    ops: list[str] = []
    unknown: list[str] = []
    subs = data.get("sub_queries")
    subs = subs if isinstance(subs, list) else []
    raw_ops = [op for s in subs if isinstance(s, dict) for op in s.get("operations") or []]
    if not raw_ops and isinstance(data.get("operations"), list):
        raw_ops = list(data["operations"])
    for raw in raw_ops:
        op = parse_op(str(raw))
        (ops if op else unknown).append(op or str(raw))
    if not ops:
        raise BadCall("the plan maps the question to no operation of the bank", text)
    known = set(columns)
    wanted = [str(c) for c in data.get("columns") or [] if isinstance(c, str | int | float)]
    return Plan(
        query_type=query_type,
        operations=ops[:max_ops],
        sub_queries=[s for s in subs if isinstance(s, dict)],
        columns=[c for c in wanted if c in known],
        answer_format=str(data.get("answer_format") or "")[:300],
        unknown_ops=unknown,
        invented_columns=[c for c in wanted if c not in known],
    )


def _plan_text(path: Path, index: int) -> str:
    lines = []
    for i, op in enumerate(path, start=1):
        mark = "  ← now" if i == index else ""
        lines.append(f"{i}. {op}{mark}")
    return "\n".join(lines)


def step_messages(
    *,
    question: str,
    query_type: str,
    path: Path,
    index: int,
    triples: Sequence[str],
    frame: str,
    lessons: Sequence[str],
    history: Sequence[str],
    prompting: str = "think_code",
    plain: bool = False,
) -> list[Message]:
    """The messages for operation `index` (1-based) of `path` (`prompting`: Table 4's strategy;
    `plain`: `triples` are the table's first rows and the frame has no ``_aggregate``)."""
    expected = EXPECTED.get(query_type, EXPECTED["lookup"])
    op = path[index - 1]
    name = op.split(":", 1)[0]
    user = STEP_USER.format(
        structure="the first rows as stored" if plain else "triples",
        question=question,
        query_type=query_type,
        expected=expected,
        plan=_plan_text(path, index),
        triples="\n".join(triples),
        frame=frame,
        lessons=_lessons_block(lessons),
        history="\n".join(history) or "(nothing yet)",
        index=index,
        op=op,
        meaning=FREE_MEANING if name == FREE_OP else BANK[name],
    )
    template = STEP_SYSTEMS.get(prompting, STEP_SYSTEM)
    system = template.format(expected=expected, aggregate="" if plain else AGGREGATE_NOTE)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_CODE_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
_CODE_FLAG = re.compile(r"\[CODE\]", re.I)
_THINK_FLAG = re.compile(r"\[THINK\]", re.I)
_OK_FLAG = re.compile(r"\[OK\]", re.I)


def parse_step(text: str) -> Step:
    """[THINK] and [CODE] of a step reply.

    Lenient: code may come fenced or bare after [CODE], or as a fenced block without the
    flag; text before the code counts as the [THINK] part when the flag is missing.

    Raises:
        NoJSONFound: the reply has neither a [THINK] flag nor code (a `ParseError`).
    """
    body = strip_think(text)
    flag = _CODE_FLAG.search(body)
    head, tail = (body[: flag.start()], body[flag.end() :]) if flag else (body, body)
    fence = _CODE_FENCE.search(tail)
    code = fence.group(1).strip() if fence else (tail.strip() if flag else "")
    if not flag and fence:
        head = body[: fence.start()]
    think_flag = _THINK_FLAG.search(head)
    think = head[think_flag.end() :] if think_flag else head if code else ""
    think = " ".join(think.split())[:1000]
    if not think and not code:
        raise NoJSONFound("the reply has neither [THINK] nor [CODE]", text)
    return Step(think=think, code=code)


def direct_messages(question: str, table_text: str, *, task: str) -> list[Message]:
    extra = '; "true" or "false" for a statement' if task == "fact_verification" else ""
    user = DIRECT_USER.format(table=table_text, question=question, extra=extra)
    return [{"role": "system", "content": DIRECT_SYSTEM}, {"role": "user", "content": user}]


def dumps(value: Any) -> str:
    """Compact JSON for prompts and traces."""
    return json.dumps(value, ensure_ascii=False, default=str)


EXPERIENCE_SYSTEM = (
    "You review the execution of table-analysis programs and distil abstracted experience: "
    "reusable, value-agnostic lessons about which operation orders, checks and header readings "
    "work on tables of this structure, for later executions on similar tables."
)

EXPERIENCE_USER = """Query: {question}
Query type: {query_type}

Executed operation paths (operations of the bank, step summaries, outcome):
{paths}

Automatic checks found:
{findings}

Write the abstracted experience in exactly this format:
Feedback Summary:
- one observation per line: what a path did, what went wrong, and the action that avoids it
Execution Reflection: one line: how the next execution should proceed.

Rules: at most 4 lines in the summary. Lessons must be agnostic to specific table values: name
operations ({ops}) and header or column names, never cell values or numbers from the table.

Example (from another table):
Query: What are the top-selling categories in Q3?
Feedback Summary:
- Path π1 first grouped seasons to compute total sales, then filtered Q3; filtering operation \
should be executed first to avoid computation of irrelevant data.
- Error: category not found. Action: re-read table samples and derive sub-column product category.
- Repeated sorting operations before and after grouping do not contribute and can be skipped.
Execution Reflection: maintaining the correct filter-then-aggregate order; reading the sub-column \
product category; sorting operation placed at the end."""

REPORT_SYSTEM = (
    "You are DTR, a data analyst. You write the analysis report of a completed table analysis "
    "for a reader who asked the question: clear, factual, grounded in the executed program's "
    "results."
)

REPORT_USER = """Question: {question}
Answer: {answer}
Query type: {query_type}

The table: {table}

The executed program, operation by operation, with its key outputs:
{record}

Write the analysis report in Markdown with these sections:
## Data Overview
(what data was used: columns, rows, units)
## Calculation Process
(numbered steps of how the answer was computed)
## Key Figures
(bullets with the key numbers)
## Insights
(what the result means; patterns, outliers, caveats)

Use only numbers that appear above; do not invent values. Do not repeat the code, the title or \
the answer line; start with "## Data Overview"."""


def experience_messages(
    *, question: str, query_type: str, paths: Sequence[str], findings: Sequence[str]
) -> list[Message]:
    """The abstracted-experience request (§3.4, the paper's example format)."""
    user = EXPERIENCE_USER.format(
        question=question,
        query_type=query_type,
        paths="\n".join(paths) or "(none)",
        findings="\n".join(f"- {x}" for x in findings) or "- (nothing specific)",
        ops=", ".join(BANK),
    )
    return [{"role": "system", "content": EXPERIENCE_SYSTEM}, {"role": "user", "content": user}]


def report_messages(
    *, question: str, answer: str, query_type: str, table: str, record: Sequence[str]
) -> list[Message]:
    """The report request (§3.5, App. F.1.3's section layout)."""
    user = REPORT_USER.format(
        question=question,
        answer=answer,
        query_type=query_type,
        table=table,
        record="\n".join(record) or "(no program ran: answered from the table text)",
    )
    return [{"role": "system", "content": REPORT_SYSTEM}, {"role": "user", "content": user}]


def reflect_messages(
    *,
    question: str,
    query_type: str,
    path: Path,
    index: int,
    code: str,
    observation: str,
) -> list[Message]:
    """The multi-stage reflection check of operation `index` (Table 4)."""
    user = REFLECT_USER.format(
        question=question,
        query_type=query_type,
        expected=EXPECTED.get(query_type, EXPECTED["lookup"]),
        plan=_plan_text(path, index),
        index=index,
        code=code,
        observation=observation,
    )
    return [{"role": "system", "content": REFLECT_SYSTEM}, {"role": "user", "content": user}]


def parse_reflection(text: str) -> str | None:
    """The corrected code of a reflection reply; "" for [OK]; None for a reply that is
    neither (no [OK] and no fenced code: not the format asked for, which the caller keeps
    out of the LLM cache)."""
    body = strip_think(text)
    flag = _CODE_FLAG.search(body)
    fence = _CODE_FENCE.search(body[flag.end() :] if flag else body)
    if fence:
        return fence.group(1).strip()
    return "" if _OK_FLAG.search(body) else None
