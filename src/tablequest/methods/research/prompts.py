"""DTR prompts and their parsers (papers/dtr.txt §3.2–3.3, Table 4's [THINK]+[CODE] strategy).

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
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tablequest.llm.base import Message
from tablequest.llm.parse import BadCall, NoJSONFound, extract_json, strip_think
from tablequest.methods.research.feedback import EXPECTED, QUERY_TYPES, QueryType
from tablequest.methods.research.operations import BANK, Path, parse_op

__all__ = [
    "Plan",
    "Step",
    "direct_messages",
    "mod_messages",
    "parse_mod",
    "parse_step",
    "step_messages",
]

MOD_SYSTEM = (
    "You are DTR, an analyst who plans how to answer questions about messy spreadsheets "
    "(merged cells, headers on both axes, unit rows, total rows). You decompose a question "
    "into sub-queries and map each one to operations of a fixed operation bank; the plan is "
    "then executed as pandas code, one operation at a time."
)

MOD_USER = """Question: {question}

The table as triples of its meta graph (headers on both axes, units, totals, notes):
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
names of `df`. Rows with `_aggregate == True` are totals or subtotals."""

STEP_USER = """Question: {question}
Query type: {query_type}. The final `result` must be {expected}.

Plan:
{plan}

Table structure (triples):
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


def mod_messages(
    question: str, triples: Sequence[str], frame: str, lessons: Sequence[str]
) -> list[Message]:
    bank = "\n".join(f"- {name}: {meaning}" for name, meaning in BANK.items())
    user = MOD_USER.format(
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
) -> list[Message]:
    """The messages for operation `index` (1-based) of `path`."""
    expected = EXPECTED.get(query_type, EXPECTED["lookup"])
    op = path[index - 1]
    user = STEP_USER.format(
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
        meaning=BANK[op.split(":", 1)[0]],
    )
    system = STEP_SYSTEM.format(expected=expected)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_CODE_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
_CODE_FLAG = re.compile(r"\[CODE\]", re.I)
_THINK_FLAG = re.compile(r"\[THINK\]", re.I)


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
