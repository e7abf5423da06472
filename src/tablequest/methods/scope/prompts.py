"""TabScope prompts, verbatim from arXiv:2609.03395 App. C (and App. E.3.1 for WTQ-SubTab).

The paper's templates are kept word for word, placeholders filled by `str.replace` (so braces
in table cells are safe). Ours, where the paper gives no text: the plain-relevance retrieval
prompts of the ``op_aware false`` ablation (the App. C.1 prompts without the operation
requirements), the repair messages, and the silver-reference verifier prompt (App. E.3 names
its checks — valid, sufficient, compact, consistent with the reasoning type and evidence
policy — but omits its text).
"""

from __future__ import annotations

from tablequest.llm import Message

__all__ = [
    "ANSWER",
    "CLASSIFY",
    "COL_RETRIEVAL",
    "COL_RETRIEVAL_PLAIN",
    "REFINE",
    "ROW_RETRIEVAL",
    "ROW_RETRIEVAL_PLAIN",
    "SILVER_DIRECT",
    "SILVER_REPAIR",
    "SILVER_VERIFY",
    "fill",
    "user",
]

COL_RETRIEVAL = """Instruction:
Select the columns needed to answer the question using the f_col() function.
Return exactly one function call:
f_col([column_1, column_2, …])
Requirements:
- Copy column names exactly from the table schema.
- First identify the table operation required by the question, such as lookup, filtering, comparison, ranking, neighborhood retrieval, counting, or aggregation.
- Retain the columns needed to perform and verify the operation, rather than selecting columns only by lexical overlap.
- Preserve identifier, condition, comparison, ordering, counting, and answer-bearing columns whenever needed.
- Do not output explanations, code, or SQL.
Table:
{LINEARIZED_TABLE}
Optional caption:
{TABLE_CAPTION}
Question:
{QUESTION}
Output:"""  # noqa: E501

ROW_RETRIEVAL = """Instruction:
Select the rows needed to answer the question using the f_row() function.
Return exactly one function call:
f_row([row1, row3, …])
If all rows are required, return:
f_row([*])
Requirements:
- Use the row numbers shown in the input table.
- First identify the table operation required by the question, such as lookup, filtering, comparison, ranking, neighborhood retrieval, counting, or aggregation.
- Retrieve enough rows to perform and verify the operation, rather than selecting only a likely answer row.
- Preserve comparison sets, anchor rows, neighboring rows, and aggregation inputs whenever needed.
- Do not output explanations, code, or SQL.
Table:
{LINEARIZED_TABLE}
Optional caption:
{TABLE_CAPTION}
Question:
{QUESTION}
Output:"""  # noqa: E501

# Ours (ablation "w/o operation-aware retrieval", Table 5): relevance only.
COL_RETRIEVAL_PLAIN = """Instruction:
Select the columns relevant to the question using the f_col() function.
Return exactly one function call:
f_col([column_1, column_2, …])
Requirements:
- Copy column names exactly from the table schema.
- Do not output explanations, code, or SQL.
Table:
{LINEARIZED_TABLE}
Optional caption:
{TABLE_CAPTION}
Question:
{QUESTION}
Output:"""

ROW_RETRIEVAL_PLAIN = """Instruction:
Select the rows relevant to the question using the f_row() function.
Return exactly one function call:
f_row([row1, row3, …])
If all rows are required, return:
f_row([*])
Requirements:
- Use the row numbers shown in the input table.
- Do not output explanations, code, or SQL.
Table:
{LINEARIZED_TABLE}
Optional caption:
{TABLE_CAPTION}
Question:
{QUESTION}
Output:"""

REFINE = """You are refining an evidence sub-table for table question answering.
Given the question, the current sub-table, and the available information from the original table, determine whether the sub-table contains sufficient evidence to answer the question.
Return only valid JSON:
{
"action": "keep" | "expand",
"final_rows": [row_id, …],
"final_columns": ["column_name", …],
"reason": "brief explanation"
}
Keep the current rows and columns when the sub-table is sufficient. Otherwise, add the missing rows, columns, or both.
Use only row IDs and column names provided in the table context.
Do not generate new table values or use external knowledge.
Question:
{QUESTION}
Current sub-table:
{CURRENT_SUBTABLE_WITH_ROW_IDS}
Original table context:
{TABLE_CONTEXT}"""  # noqa: E501

ANSWER = """You are a precise table question answering assistant.
Follow the required output format exactly.
Read the following table and answer the question using only the information provided in the table.
Table:
{TABLE}
Question:
{QUESTION}
Reason step by step and return exactly two sections:
<think>
Your reasoning
</think>
<answer>
Your final answer
</answer>
Do not include any text outside these two sections."""

CLASSIFY = """Classify the table question according to the reasoning required to answer it.
Choose exactly one question type:
- "lookup": retrieve a value associated with a specified entity or record.
- "order_superlative": identify an item through ranking, maximum, minimum, or relative order.
- "local_reasoning": reason over a small set of related or neighboring records.
- "count_diff": count two filtered groups and compare or compute the difference between them.
- "count_general": count all records satisfying one or more conditions.
- "count_frequency": determine how often a value or category occurs.
- "compare": compare values associated with multiple entities or groups.
Select the type according to the operation and table coverage required by the question. Do not directly predict whether the system should use a localized sub-table or the full table.
Question:
{QUESTION}
Table columns:
{TABLE_COLUMNS}
Table size:
{NUMBER_OF_ROWS} rows, {NUMBER_OF_COLUMNS} columns, {NUMBER_OF_TOKENS} serialized tokens
Table preview:
{TABLE_PREVIEW}
Return only valid JSON:
{
"question_type": "lookup" | "order_superlative" | "local_reasoning" | "count_diff" | "count_general" | "count_frequency" | "compare"
}"""  # noqa: E501

SILVER_DIRECT = """Given the question, reference answer, and full table, select the smallest sub-table containing sufficient evidence to answer or verify the question.
Return only valid JSON:
{
"reasoning_type": "lookup" | "filter" | "comparison" | "superlative" | "ordinal" | "neighbor" | "count" | "aggregation" | "boolean" | "other",
"evidence_policy": "answer_only" | "comparison_domain" | "all_relevant" | "neighbor_context",
"rows": [row_id, …],
"columns": ["column_name", …],
"reason": "brief explanation"
}
Use only valid row IDs and exact column names from the table.
Retain all evidence required by the reasoning operation while avoiding unnecessary rows and columns.
Question:
{QUESTION}
Reference answer:
{GOLD_ANSWERS}
Full table:
{TABLE_MARKDOWN}
Return only the JSON object."""  # noqa: E501

SILVER_REPAIR = """The previously selected sub-table was found to contain missing, invalid, or unnecessary evidence.
Using the verifier feedback, return the smallest corrected sub-table that is sufficient to answer or verify the question.
Return only valid JSON:
{
"reasoning_type": "lookup" | "filter" | "comparison" | "superlative" | "ordinal" | "neighbor" | "count" | "aggregation" | "boolean" | "other",
"evidence_policy": "answer_only" | "comparison_domain" | "all_relevant" | "neighbor_context",
"rows": [row_id, …],
"columns": ["column_name", …],
"reason": "brief explanation"
}
Use only valid row IDs and exact column names from the table.
Add missing evidence and remove unnecessary evidence when needed.
Question:
{QUESTION}
Reference answer:
{GOLD_ANSWERS}
Previous prediction:
{PREVIOUS_SPEC}
Verifier feedback:
{VERIFIER_FEEDBACK}
Full table:
{TABLE_MARKDOWN}
Return only the corrected JSON object."""  # noqa: E501

# Ours: App. E.3 describes the verifier's checks but omits its prompt.
SILVER_VERIFY = """You are verifying an evidence sub-table selected for a table question.
Check whether the selected rows and columns are valid, sufficient to answer or verify the question with the reference answer, and compact (no unnecessary rows or columns), and whether they match the stated reasoning type and evidence policy.
Return only valid JSON:
{
"verdict": "ok" | "fix",
"issues": ["brief description of each missing, invalid, or unnecessary element", …]
}
Question:
{QUESTION}
Reference answer:
{GOLD_ANSWERS}
Selected evidence specification:
{SPEC}
Selected sub-table:
{SUBTABLE}
Full table:
{TABLE_MARKDOWN}"""  # noqa: E501

REPAIR_JSON = (
    "Your previous reply could not be used: {error}\n"
    "Return only the valid JSON object described above, with nothing else."
)
REPAIR_CALL = (
    "Your previous reply could not be used: {error}\n"
    "Return exactly one function call in the required format, with nothing else."
)
REPAIR_ANSWER = (
    "Your previous reply could not be used: {error}\n"
    "Return exactly the two sections <think>…</think><answer>…</answer>, with nothing else."
)


def fill(template: str, **values: object) -> str:
    """Replace ``{NAME}`` placeholders (only the given names; other braces stay)."""
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", str(value))
    return out


def user(text: str) -> list[Message]:
    """A one-message conversation."""
    return [{"role": "user", "content": text}]
