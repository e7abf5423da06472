"""TableSeek prompts (the TableSeek paper, App. E, Tables 15–23).

The paper's prompt templates are published as images; the text dump keeps only their
captions. These templates follow the captions: a task prefix per task type (Tables 15–16)
used in pattern generation and refinement; pattern generation (Table 17); select-based
refinement whose guidance depends on max_select_tables being 1 or more (Table 18);
rerank-based refinement that reorders all candidates (Table 19); QA with an
insufficient/mismatch option for the answerability check (Tables 20–21); and the standalone
QA prompts of the baselines without that option, where unverifiable claims count as false
(Tables 22–23). Tables are given as ``[Table: {key}]\\n{table_str}`` with anonymous keys.

The paper says its code is at github.com/minger-hsxz/TableSeek-Open. A search on 2026-12-07
(issue 41, item 5) found no copy of that repository or of these templates: no stored snapshot
of it, and searches for the captions' placeholder names (``QUERY_PREFIX_MAP``,
``select_guidance``, ``output_select_hint``, ``select_instruction``, ``table_infos``) and the
method's name found only unrelated code; the authors' TCR-Bench-Open holds the benchmark and
its AAR rerankers, not these prompts. So the templates stay ours, written from the captions;
docs/methods.md lists what was searched.

Output formats (ours): every stage answers with one JSON object, so replies can be parsed and
repaired uniformly.
"""

from __future__ import annotations

from collections.abc import Sequence

from tablequest.llm import Message

TASK_PREFIX = {
    "tableqa": (
        "Task: answer a natural-language question using the evidence in a collection of "
        "tables. The answer must be supported by the cells of one or more tables."
    ),
    "fact_verification": (
        "Task: verify whether a statement is supported or refuted by the evidence in a "
        "collection of tables. The evidence must come from the cells of a table."
    ),
}

PATTERN_SYSTEM = (
    "You search a large collection of tables with grep. You write search patterns "
    "(case-insensitive regular expressions) that match text inside the tables that hold the "
    "evidence: entity names, attribute and column names, values, and schema concepts."
)

PATTERN_USER = """{prefix}

{label}: {question}

Write 3 to 8 grep patterns likely to appear in a table that contains the evidence.
- Cover entities, attributes (column names), values and schema concepts.
- Add variants where useful: abbreviations, snake_case and camelCase column names,
  numbers with and without thousands separators, alternative spellings.
- Keep each pattern short and specific; a pattern is matched anywhere in the table text.

Reply with JSON only: {{"patterns": ["pattern 1", "pattern 2", ...]}}"""

REFINE_SYSTEM = (
    "You are a table-search agent. You inspect previews of candidate tables retrieved by grep "
    "patterns and decide how to continue the search. Table ids are temporary."
)

SELECT_ONE = "If one candidate clearly contains the evidence needed, select it (exactly one id)."
SELECT_MANY = (
    "If candidates clearly contain the evidence needed, select them (at most {k} ids, most "
    "useful first)."
)

REFINE_USER = """{prefix}

{label}: {question}

Current grep patterns: {patterns}

Candidate tables (head of each table, then rows matched by the patterns):
{previews}

Decide the next action:
{actions}

Reply with JSON only, one of:
{formats}"""

QA_SYSTEM = (
    "You answer questions using only the given tables. You check that the tables really "
    "contain the evidence before answering."
)

QA_USER = """{tables}

Question: {question}

Instructions:
- Use only the tables above. Perform any counting, comparison, sorting or arithmetic needed
  (sum, difference, average, ratio, other operations or variants) on the table values.
- If the tables do not contain enough evidence to answer, reply with status "insufficient".
- If the tables are about a different entity, time or subject than the question asks,
  reply with status "mismatch".
- Otherwise reply with status "answered" and a short answer (a value, a name, or a list of
  values separated by " | "), plus the cells that support it.

Reply with JSON only:
{{"status": "answered" | "insufficient" | "mismatch", "answer": "...",
 "evidence": [{{"table": "Table_0", "column": "<column name>", "value": "<cell text>"}}]}}"""

FACT_USER = """{tables}

Statement: {question}

Instructions:
- Use only the tables above; perform any counting, comparison or arithmetic needed.
- Reply "true" if the tables support the statement and "false" if they refute it.
- If the tables are about a different entity, time or subject than the statement, or lack
  the evidence to decide, reply with status "mismatch".

Reply with JSON only:
{{"status": "answered" | "mismatch", "answer": "true" | "false",
 "evidence": [{{"table": "Table_0", "column": "<column name>", "value": "<cell text>"}}]}}"""

STANDALONE_QA_USER = """{tables}

Question: {question}

Instructions:
- Use only the tables above. Perform any counting, comparison, sorting or arithmetic needed
  (sum, difference, average, ratio) on the table values.
- Reply with a short answer (a value, a name, or a list of values separated by " | "), plus
  the cells that support it.

Reply with JSON only:
{{"answer": "...",
 "evidence": [{{"table": "Table_0", "column": "<column name>", "value": "<cell text>"}}]}}"""

STANDALONE_FACT_USER = """{tables}

Question: Is the following statement true according to the tables? {question}

Instructions:
- Use only the tables above; perform any counting, comparison or arithmetic needed.
- Reply "true" only if the tables support the statement; otherwise reply "false"
  (a statement the tables cannot verify is false).

Reply with JSON only: {{"answer": "true" | "false",
 "evidence": [{{"table": "Table_0", "column": "<column name>", "value": "<cell text>"}}]}}"""

NO_TABLE_SYSTEM = "You answer questions briefly and precisely."

NO_TABLE_QA_USER = """Question: {question}

No table is given: answer from what you know. Reply with a short answer (a value, a name, or
a list of values separated by " | ").

Reply with JSON only: {{"answer": "..."}}"""

NO_TABLE_FACT_USER = """Is the following statement true? {question}

No table is given: answer from what you know. Reply "true" or "false".

Reply with JSON only: {{"answer": "true" | "false"}}"""

REPAIR = (
    "Your previous reply could not be parsed ({error}). Reply again with the JSON object "
    "only, exactly in the requested format, with no other text."
)


def label(task: str) -> str:
    return "Statement" if task == "fact_verification" else "Question"


def pattern_messages(question: str, task: str) -> list[Message]:
    user = PATTERN_USER.format(prefix=TASK_PREFIX[task], label=label(task), question=question)
    return [{"role": "system", "content": PATTERN_SYSTEM}, {"role": "user", "content": user}]


def refine_messages(
    question: str,
    task: str,
    previews: str,
    patterns: Sequence[str],
    *,
    max_select: int,
    rerank: bool,
    allow_select: bool,
    allow_regenerate: bool,
    example_ids: Sequence[str],
) -> list[Message]:
    """Refinement prompt; the offered actions follow the strategy and the ablations."""
    actions: list[str] = []
    formats: list[str] = []
    ids = ", ".join(f'"{i}"' for i in example_ids[: max(1, max_select)])
    if allow_select and rerank:
        actions.append(
            "- rerank: order ALL candidate ids from most to least likely to contain the "
            "evidence; the first one is used to answer."
        )
        ranking = ", ".join(f'"{i}"' for i in example_ids)
        formats.append(f'{{"action": "rerank", "ranking": [{ranking}]}}')
    elif allow_select:
        guidance = SELECT_ONE if max_select == 1 else SELECT_MANY.format(k=max_select)
        actions.append(f"- select: {guidance}")
        formats.append(f'{{"action": "select", "selected_tables": [{ids}]}}')
    if allow_regenerate:
        actions.append(
            "- regenerate: if no candidate has the evidence, write new grep patterns "
            "(other names, abbreviations, column names or value formats seen in the previews)."
        )
        formats.append('{"action": "regenerate", "patterns": ["new pattern", ...]}')
    actions.append("- none: stop searching and answer with the best candidate.")
    formats.append('{"action": "none"}')
    user = REFINE_USER.format(
        prefix=TASK_PREFIX[task],
        label=label(task),
        question=question,
        patterns=", ".join(repr(p) for p in patterns) or "(none)",
        previews=previews,
        actions="\n".join(actions),
        formats="\n".join(formats),
    )
    return [{"role": "system", "content": REFINE_SYSTEM}, {"role": "user", "content": user}]


def no_table_messages(question: str, task: str) -> list[Message]:
    """The no-table baseline's prompt: the question alone (TableSeek App. G, No-Table QA)."""
    template = NO_TABLE_FACT_USER if task == "fact_verification" else NO_TABLE_QA_USER
    user = template.format(question=question)
    return [{"role": "system", "content": NO_TABLE_SYSTEM}, {"role": "user", "content": user}]


def qa_messages(question: str, task: str, tables: str, *, standalone: bool) -> list[Message]:
    """QA prompt: TableSeek's (with answerability options) or the standalone baseline one."""
    if task == "fact_verification":
        template = STANDALONE_FACT_USER if standalone else FACT_USER
    else:
        template = STANDALONE_QA_USER if standalone else QA_USER
    user = template.format(tables=tables, question=question)
    return [{"role": "system", "content": QA_SYSTEM}, {"role": "user", "content": user}]
