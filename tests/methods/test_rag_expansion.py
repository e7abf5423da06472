"""Tabular query expansion: Figs. 9 and 10, parsing, repair and fallback."""

from __future__ import annotations

import pytest

from tablequest.llm import Scripted
from tablequest.llm.base import LLMTimeout
from tablequest.llm.parse import ParseError
from tablequest.methods.rag.expansion import (
    expand,
    is_numeric,
    keywords,
    query_parser,
    question_queries,
)
from tablequest.methods.rag.prompts import cell_query_prompt, schema_query_prompt
from tablequest.trace import Trace

Q = "What is the average price for leather wallets?"

FIG9 = """Given a large table regarding "amazon seller order status prediction orders data", \
I want to answer a question: "What is the average price for leather wallets?"
Since I cannot view the table directly, please suggest some column names that might contain \
the necessary data to answer this question.
Please answer with a list of column names in JSON format without any additional explanation.
Example:
["column1", "column2", "column3"]"""

FIG10 = """Given a large table regarding "amazon seller order status prediction orders data", \
I want to answer a question: "What is the average price for leather wallets?"
Please extract some keywords which might appear in the table cells and help answer the \
question.
The keywords should be categorical values rather than numerical values.
The keywords should be contained in the question.
Please answer with a list of keywords in JSON format without any additional explanation.
Example:
["keyword1", "keyword2", "keyword3"]"""


def test_prompts_are_figures_9_and_10() -> None:
    caption = "amazon seller order status prediction orders data"
    assert schema_query_prompt(Q, caption) == FIG9
    assert cell_query_prompt(Q, caption) == FIG10
    plain = schema_query_prompt(Q, None)
    assert plain.startswith(f'Given a large table, I want to answer a question: "{Q}"')
    fact = cell_query_prompt("wallets cost 5", "t", "fact_verification")
    assert 'you need to verify the statement: "wallets cost 5".' in fact
    assert "should not be a column name" in fact
    assert "verify this statement" in schema_query_prompt("x", None, "fact_verification")


def test_expansion_from_json_lists() -> None:
    fenced = 'Sure: ```json\n["leather wallets", "average price", "2021", 5]\n```'
    llm = Scripted(['["product_name", "category", "price"]', fenced])
    trace = Trace.in_memory()
    got = expand(llm, Q, caption=None, trace=trace, max_tokens=64)
    assert got.schema_queries == ["product_name", "category", "price"]
    assert got.cell_queries == ["leather wallets", "average price"]  # numbers dropped
    assert (got.schema_source, got.cell_source, got.calls) == ("llm", "llm", 2)
    assert llm.calls[0].params["max_tokens"] == 64
    assert not [e for e in trace.events if e["kind"] == "fallback"]


def test_one_repair_then_keyword_fallback_is_traced() -> None:
    llm = Scripted(["I think price", "still prose", "[]"])
    trace = Trace.in_memory()
    got = expand(llm, Q, caption=None, trace=trace)
    assert got.schema_source == "fallback"
    assert got.schema_queries == keywords(Q) == ["price", "leather", "wallets"]
    assert "could not be used" in llm.calls[1].prompt  # the repair request
    assert got.cell_queries == [] and got.cell_source == "llm"  # an empty list is an answer
    fallbacks = [e for e in trace.events if e["kind"] == "fallback"]
    assert any(e.get("stage") == "schema_queries" and e.get("queries") for e in fallbacks)


def test_llm_error_falls_back_for_both_lists() -> None:
    llm = Scripted([LLMTimeout("slow"), LLMTimeout("slow")])
    trace = Trace.in_memory()
    got = expand(llm, "Which city had most cash orders in 2021?", caption="t", trace=trace)
    assert got.schema_source == got.cell_source == "fallback"
    assert got.cell_queries == ["city", "cash", "orders"]  # "2021" is numeric
    assert sum(1 for e in trace.events if "LLMTimeout" in str(e.get("reason"))) == 2


def test_parser_and_helpers() -> None:
    parse = query_parser(limit=2)
    assert parse('["a", ["b", "c"], true, "a"]') == ["a", "b"]
    with pytest.raises(ParseError, match="no strings"):
        parse('[{"x": 1}]')
    assert is_numeric("1,234.5") and is_numeric("-3") and not is_numeric("3 km")
    assert keywords("What is the price of the wallet?") == ["price", "wallet"]
    plain = question_queries(Q)
    assert (plain.schema_queries, plain.cell_queries, plain.schema_source) == ([Q], [Q], "question")
