"""TableRAG prompts: Figs. 9, 10 and 11 of arXiv:2410.04739, and the official PyReAct prompt.

Texts follow the paper's figures, with the official code's line breaks
(google-research/table_rag ``prompts/arcade.py``; ``prompts/tabfact.py`` for claims). Without
a table caption the ``regarding "..."`` clause is dropped (the official WikiTableQuestions
variant); agents never see file names, so the caption is the table's own title or nothing.
Fig. 11 shows no "Schema Retrieval Queries" line (the official code adds one); we follow the
figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Task = Literal["tableqa", "fact_verification"]

_EXAMPLE_COLUMNS = '["column1", "column2", "column3"]'
_EXAMPLE_KEYWORDS = '["keyword1", "keyword2", "keyword3"]'
_CATEGORICAL = "The keywords should be categorical values rather than numerical values."

_TOOL_RAG = (
    "- `python_repl_ast`: A Python interactive shell. Use this to execute python commands. "
    "Input should be a valid single line python command."
)
_TOOL_BASE = (
    "- `python_repl_ast`: A Python shell. Use this to execute python commands. "
    "Input should be a valid one-line python command."
)
_NOTES_QA = """Notes:
- Do not use markdown or any other formatting in your responses.
- Ensure the last line is only "Final Answer: Answer1, Answer2, ..." form, no other form.
- Directly output the Final Answer rather than outputting by Python.
- Ensure to have a concluding thought that verifies the table, observations and the question \
before giving the final answer."""
_NOTES_FACT = """Notes:
- Do not use markdown or any other formatting in your responses.
- Ensure the last line is only "Final Answer: Yes" or "Final Answer: No".
- Directly output the Final Answer rather than outputting by Python.
- Ensure to have a concluding thought that verifies the table, observations and the statement \
before giving the final answer."""


def _regarding(caption: str | None) -> str:
    return f' regarding "{caption}"' if caption else ""


def _format(action: str, task: Task) -> str:
    final = (
        "the final answer to the original input statement (Yes/No)"
        if task == "fact_verification"
        else "the final answer to the original input question (Answer1, Answer2, ...)"
    )
    notes = _NOTES_FACT if task == "fact_verification" else _NOTES_QA
    return (
        "Strictly follow the given format to respond:\n"
        "Thought: you should always think about what to do\n"
        f"Action: {action}\n"
        "Observation: the result of the action\n"
        "... (this Thought/Action/Observation can repeat N times)\n"
        "Thought: before giving the final answer, you should think about the observations\n"
        f"Final Answer: {final}\n\n{notes}"
    )


def _ask(question: str, caption: str | None, task: Task) -> str:
    if task == "fact_verification":
        return (
            f"Given a large table{_regarding(caption)}, you need to verify the statement: "
            f'"{question}".'
        )
    return f'Given a large table{_regarding(caption)}, I want to answer a question: "{question}"'


def schema_query_prompt(question: str, caption: str | None, task: Task = "tableqa") -> str:
    """Fig. 9: column names that might hold the data."""
    goal = "verify this statement" if task == "fact_verification" else "answer this question"
    return (
        f"{_ask(question, caption, task)}\n"
        "Since I cannot view the table directly, please suggest some column names that might "
        f"contain the necessary data to {goal}.\n"
        "Please answer with a list of column names in JSON format without any additional "
        f"explanation.\nExample:\n{_EXAMPLE_COLUMNS}"
    )


def cell_query_prompt(question: str, caption: str | None, task: Task = "tableqa") -> str:
    """Fig. 10: keywords that might appear in cells."""
    if task == "fact_verification":
        help_, contained = (
            "help verify the statement",
            "The keywords should be contained in the statement and should not be a column name.",
        )
    else:
        help_ = "help answer the question"
        contained = "The keywords should be contained in the question."
    return (
        f"{_ask(question, caption, task)}\n"
        f"Please extract some keywords which might appear in the table cells and {help_}.\n"
        f"{_CATEGORICAL}\n{contained}\n"
        "Please answer with a list of keywords in JSON format without any additional "
        f"explanation.\nExample:\n{_EXAMPLE_KEYWORDS}"
    )


def _solver_head(question: str, caption: str | None, tool: str) -> str:
    return (
        f"You are working with a pandas dataframe{_regarding(caption)} in Python. The name of "
        "the dataframe is `df`. Your task is to use `python_repl_ast` to answer the question: "
        f'"{question}"\n\nTool description:\n{tool}'
    )


def _retrieved(
    schema_lines: Sequence[str], cell_queries: Sequence[str] | None, cell_lines: Sequence[str]
) -> list[str]:
    parts = ["Schema Retrieval Results:\n" + "\n".join(schema_lines)]
    if cell_queries is not None:
        parts.append(
            "Cell Retrieval Queries: "
            + ", ".join(cell_queries)
            + "\nCell Retrieval Results:\n"
            + "\n".join(cell_lines)
        )
    return parts


def rag_solver_prompt(
    question: str,
    caption: str | None,
    schema_lines: Sequence[str],
    cell_queries: Sequence[str] | None,
    cell_lines: Sequence[str],
    task: Task = "tableqa",
) -> str:
    """Fig. 11. `cell_queries` None leaves the cell block out (ablation without cells)."""
    retrieved = _retrieved(schema_lines, cell_queries, cell_lines)
    if task == "fact_verification":
        parts = [
            f"{_ask(question, caption, task)}\nSince you cannot view the table directly, here "
            "are some schemas and cell values retrieved from the table.",
            *retrieved,
            "The table is a pandas dataframe in Python. The name of the dataframe is `df`. Your "
            "task is to use the column names and cell values above to interact with a Python "
            f"REPL shell to verify the statement.\n\nTool description:\n{_TOOL_BASE}",
            _format("the Python command to execute", task),
            f"Now, given a table{_regarding(caption)}, please verify the statement: "
            f'"{question}".\nBegin!',
        ]
        return "\n\n".join(parts) + "\n"
    given = f'given a table regarding "{caption}", ' if caption else ""
    parts = [
        _solver_head(question, caption, _TOOL_RAG),
        "Since you cannot view the table directly, here are some schemas and cell values "
        "retrieved from the table.",
        *retrieved,
        _format("the single line Python command to execute", task),
        f"Now, {given}please use `python_repl_ast` with the column names and cell values "
        f'above to answer the question: "{question}"\n\nBegin!',
    ]
    return "\n\n".join(parts) + "\n"


def table_solver_prompt(
    question: str, caption: str | None, table_text: str, task: Task = "tableqa"
) -> str:
    """The official PyReAct prompt with table information (the baselines)."""
    if task == "fact_verification":
        parts = [
            f"{_ask(question, caption, task)}\nThe table is a pandas dataframe in Python. The "
            "name of the dataframe is `df`. Your task is to interact with a Python REPL shell "
            f"to verify the statement.\n\nTool description:\n{_TOOL_BASE}",
            _format("the Python command to execute", task),
            f'Now, given a table{_regarding(caption)}, please verify the statement: "{question}".',
            table_text,
            "Begin!",
        ]
        return "\n\n".join(parts) + "\n"
    parts = [
        _solver_head(question, caption, _TOOL_BASE),
        _format("the Python command to execute", task),
        f"You are working with the following table{_regarding(caption)}:\n{table_text}",
        f'Please answer the question: "{question}".\n\nBegin!',
    ]
    return "\n\n".join(parts) + "\n"
