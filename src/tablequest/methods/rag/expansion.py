"""Tabular query expansion (TableRAG, arXiv:2410.04739, §3.3; prompts of Figs. 9 and 10).

The LLM proposes schema queries (column names that might hold the data) and cell queries
(keywords that might appear in cells), each as a JSON list (prompts: `prompts.py`).

Choices: a reply that is not a JSON list of strings gets one repair request
(`ask_json`), then the question's content words are used instead (a ``fallback``
trace event says so); an LLM error gives the same fallback. As in the official code, numeric
cell queries are dropped ("keywords should be categorical values"). Queries are de-duplicated
and at most `max_queries` of each kind kept. An empty cell-query list is a valid answer (no
cell retrieval); an empty schema list falls back to the keywords.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tablequest.corpus import tokenize
from tablequest.llm import LLM, Message, WrongJSONType, ask_json, extract_json
from tablequest.methods.rag.prompts import Task, cell_query_prompt, schema_query_prompt
from tablequest.trace import Trace

Source = Literal["llm", "fallback", "question"]

_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class Expansion:
    """Schema and cell queries of one question, and where each list came from."""

    schema_queries: list[str]
    cell_queries: list[str]
    schema_source: Source
    cell_source: Source
    calls: int = 0


def schema_messages(question: str, caption: str | None, task: Task = "tableqa") -> list[Message]:
    return [{"role": "user", "content": schema_query_prompt(question, caption, task)}]


def cell_messages(question: str, caption: str | None, task: Task = "tableqa") -> list[Message]:
    return [{"role": "user", "content": cell_query_prompt(question, caption, task)}]


def is_numeric(text: str) -> bool:
    """The official ``is_numeric``: does ``float(text)`` succeed (without calling it)."""
    return bool(_NUMBER.match(text.strip().replace(",", "")))


def keywords(question: str) -> list[str]:
    """The question's content words (lower-cased, stop words removed), in order."""
    return list(dict.fromkeys(tokenize([question])[0]))


def _clean(items: list[Any], limit: int) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, list):
            out.extend(str(x).strip() for x in item if isinstance(x, str | int | float))
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            out.append(str(item).strip())
    return list(dict.fromkeys(x for x in out if x))[:limit]


def query_parser(limit: int) -> Callable[[str], list[str]]:
    """Parser of a JSON-list reply; raises `ParseError` when there is no usable list."""

    def parse(text: str) -> list[str]:
        value = extract_json(text, expect=list)
        items = _clean(value, limit)
        if value and not items:
            raise WrongJSONType("the JSON list holds no strings", text)
        return items

    return parse


def _ask(
    llm: LLM,
    messages: list[Message],
    *,
    limit: int,
    temperature: float,
    max_tokens: int,
    trace: Trace,
    stage: str,
) -> tuple[list[str] | None, int]:
    asked = ask_json(
        llm,
        messages,
        query_parser(limit),
        trace=trace,
        kind=stage,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    return asked.value, asked.attempts


def expand(
    llm: LLM,
    question: str,
    *,
    caption: str | None,
    trace: Trace,
    task: Task = "tableqa",
    temperature: float = 0.0,
    max_tokens: int = 512,
    max_queries: int = 10,
) -> Expansion:
    """Ask for schema and cell queries; fall back to the question's keywords."""
    words = keywords(question) or [question.strip()]
    schema, calls_a = _ask(
        llm,
        schema_messages(question, caption, task),
        limit=max_queries,
        temperature=temperature,
        max_tokens=max_tokens,
        trace=trace,
        stage="schema_queries",
    )
    schema_source: Source = "llm"
    if not schema:
        schema_source = "fallback"
        schema = words[:max_queries]
        trace.event(
            "fallback", stage="schema_queries", reason="no usable schema queries", queries=schema
        )
    cells, calls_b = _ask(
        llm,
        cell_messages(question, caption, task),
        limit=max_queries,
        temperature=temperature,
        max_tokens=max_tokens,
        trace=trace,
        stage="cell_queries",
    )
    cell_source: Source = "llm"
    if cells is None:
        cell_source = "fallback"
        cells = words[:max_queries]
        trace.event(
            "fallback", stage="cell_queries", reason="no usable cell queries", queries=cells
        )
    cells = [c for c in cells if not is_numeric(c)]
    trace.event(
        "decision",
        stage="expansion",
        schema_queries=schema,
        cell_queries=cells,
        schema_source=schema_source,
        cell_source=cell_source,
    )
    return Expansion(schema, cells, schema_source, cell_source, calls_a + calls_b)


def question_queries(question: str) -> Expansion:
    """No expansion (ablation): the question is the single schema and cell query."""
    return Expansion([question], [question], "question", "question", 0)
