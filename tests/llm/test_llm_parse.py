"""Parsers on real-world-shaped messy model output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tablequest.llm import (
    BadCall,
    BadReAct,
    NoAnswer,
    NoJSONFound,
    ParseError,
    ReactStep,
    TruncatedOutput,
    WrongJSONType,
    extract_answer,
    extract_json,
    is_non_answer,
    parse_f_col,
    parse_f_row,
    parse_react,
    strip_think,
)
from tablequest.llm.parse import NO_ANSWER_IN_FORMAT, is_chatter, reply_start

# -- extract_json ----------------------------------------------------------------------------

JSON_CASES: list[tuple[str, Any]] = [
    ('{"a": 1}', {"a": 1}),
    ("  [1, 2, 3]  ", [1, 2, 3]),
    (
        'Sure! Here it is:\n```json\n{"patterns": ["GDP", "2019"]}\n```\nHope this helps!',
        {"patterns": ["GDP", "2019"]},
    ),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('```JSON\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
    ("{'action': 'select', 'ids': ['t1', 't2']}", {"action": "select", "ids": ["t1", "t2"]}),
    ("{'ok': True, 'why': None, 'n': False}", {"ok": True, "why": None, "n": False}),
    ('{"ok": true, "why": null}', {"ok": True, "why": None}),
    ("{action: 'keep', final_rows: [1, 2]}", {"action": "keep", "final_rows": [1, 2]}),
    ('<think>Maybe {"x": 1}? No.</think>\n{"y": 2}', {"y": 2}),
    ('The columns are {name, age}. Result: {"cols": ["name"]}', {"cols": ["name"]}),
    ('I think { is a brace. {"a": 1}', {"a": 1}),
    ('{"text": "he said \\"hi\\" and {not a brace}"}', {"text": 'he said "hi" and {not a brace}'}),
    ('{"multi": "line one\nline two"}', {"multi": "line one\nline two"}),
    ("[{'name': 'Bob\\'s shop'}]", [{"name": "Bob's shop"}]),
    ('{"a": {"b": [1, {"c": 2}, 3]}}', {"a": {"b": [1, {"c": 2}, 3]}}),
    ('Answer:\n{"reason": "it\'s row 3", "rows": [3]}', {"reason": "it's row 3", "rows": [3]}),
    ('{"a": 1}\n\nAlternatively: {"a": 2}', {"a": 1}),
]


@pytest.mark.parametrize(("text", "expected"), JSON_CASES)
def test_extract_json_messy(text: str, expected: Any) -> None:
    assert extract_json(text) == expected


TRUNCATED: list[tuple[str, Any]] = [
    ('{"rows": [1, 2], "cols": ["na', {"rows": [1, 2]}),
    ('{"rows": [1, 2], "cols": ["name"]', {"rows": [1, 2], "cols": ["name"]}),
    ('{"a": {"b": [1, {"c": 2}, 3]', {"a": {"b": [1, {"c": 2}, 3]}}),
    ("[1, 2, 3", [1, 2]),  # a partial number is dropped, not guessed
    ('```json\n{"a": 1, "b": "unterminated', {"a": 1}),
    ('[{"id": 1}, {"id": 2}, {"id"', [{"id": 1}, {"id": 2}]),
    ('{"a": 1,', {"a": 1}),
]


@pytest.mark.parametrize(("text", "expected"), TRUNCATED)
def test_extract_json_repairs_truncation(text: str, expected: Any) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    "text",
    ['{"answer": "The tot', '{"a": ', "[", '```json\n{"key'],
)
def test_unrepairable_truncation(text: str) -> None:
    with pytest.raises(TruncatedOutput) as info:
        extract_json(text)
    assert info.value.kind == "truncated"


def test_expect_type() -> None:
    assert extract_json('{"rows": [1, 2]}', list) == [1, 2]  # first list in the text
    assert extract_json('[1] then {"a": 1}', dict) == {"a": 1}
    with pytest.raises(WrongJSONType, match="no dict"):
        extract_json("[1, 2]", dict)
    with pytest.raises(WrongJSONType, match="no list"):
        extract_json('{"a": 1}', list)


@pytest.mark.parametrize("text", ["", "   ", "no json here", '<think>{"a": 1}</think>', "{]"])
def test_no_json(text: str) -> None:
    with pytest.raises(NoJSONFound) as info:
        extract_json(text)
    assert isinstance(info.value, ParseError) and info.value.kind == "no_json"


def test_error_excerpt_is_short() -> None:
    with pytest.raises(NoJSONFound) as info:
        extract_json("x" * 1000)
    assert len(info.value.text_excerpt) == 201 and info.value.text_excerpt.endswith("…")


def test_pathological_input_is_a_parse_error() -> None:
    # speed on such input is measured outside the test suite (no timed unit tests)
    for text in ["{ a " * 5000, "[" * 20000, '{"a": "' + "x" * 30000]:
        with pytest.raises(ParseError):
            extract_json(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@given(
    value=st.dictionaries(st.text(max_size=6), json_values, max_size=4), prose=st.text(max_size=30)
)
def test_round_trip_with_prose(value: dict[str, Any], prose: str) -> None:
    prose = prose.replace("{", "").replace("[", "").replace("<", "").replace("`", "")
    assert extract_json(f"{prose}\n{json.dumps(value)}\nThanks!", dict) == value


# -- think / answer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>hmm</think><answer>42</answer>", "42"),
        ("<think>a\nb</think>\n\n<answer>\n Paris \n</answer>", "Paris"),
        ("reasoning without opener</think> <answer>Rome</answer>", "Rome"),
        ("I will use <answer></answer> tags.\n<answer>3 tables</answer>", "3 tables"),
        ("<ANSWER>yes</ANSWER>", "yes"),
        ("<answer>cut off mid answ", "cut off mid answ"),
        ("Some reasoning.\nFinal Answer: 7", "7"),
        ("**Answer:** Lisbon", "Lisbon"),
        ("just a bare reply", "just a bare reply"),
        ("<thinking>x</thinking>ok", "ok"),
    ],
)
def test_extract_answer(text: str, expected: str) -> None:
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "require_tag"),
    [
        ("<think>ran out of tokens while thinking", False),
        ("", False),
        ("<answer>   </answer>", False),
        ("Final Answer: 7", True),
    ],
)
def test_no_answer(text: str, require_tag: bool) -> None:
    with pytest.raises(NoAnswer):
        extract_answer(text, require_tag=require_tag)


def test_strip_think() -> None:
    assert strip_think("<think>x</think> A <think>y</think>B") == "A B"
    assert strip_think("before <think>unclosed") == "before"


# -- f_row / f_col ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("f_row([row1, row3])", [1, 3]),
        ("f_row([row 1, Row_5, 7, row-2])", [1, 5, 7, 2]),
        ("f_row([*])", "*"),
        ("f_row([ * ])", "*"),
        ("f_row([])", []),
        ("f_row(row1, row2)", [1, 2]),
        ("f_row(['row1', \"row 2\"])", [1, 2]),
        ("f_row([row 2-4, row3])", [2, 3, 4]),
        ("f_row([row 4 to row 2])", [2, 3, 4]),
        ("f\\_row([row1])", [1]),
        ("The format is f_row([row1, row3, …]).\nMy answer: f_row([row2])", [2]),
        ("<think>f_row([row9])</think>\n```\nf_row([row 0])\n```", [0]),
        ("F_ROW([ROW1])", [1]),
    ],
)
def test_parse_f_row(text: str, expected: Any) -> None:
    assert parse_f_row(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("I need rows 1 and 3", BadCall),
        ("f_row([apple, row1])", BadCall),
        ("f_row([row1, row", TruncatedOutput),
    ],
)
def test_parse_f_row_errors(text: str, error: type[ParseError]) -> None:
    with pytest.raises(error):
        parse_f_row(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("f_col([name, age])", ["name", "age"]),
        (
            "f_col([\"Total (USD)\", 'Year, fiscal', `Region`])",
            ["Total (USD)", "Year, fiscal", "Region"],
        ),
        ("f_col([*])", "*"),
        ("f_col([Year, Year, ])", ["Year"]),
        ("Columns: f_col([column_1, column_2])", ["column_1", "column_2"]),
    ],
)
def test_parse_f_col(text: str, expected: Any) -> None:
    assert parse_f_col(text) == expected


def test_parse_f_col_errors() -> None:
    with pytest.raises(BadCall):
        parse_f_col("f_row([row1])")
    with pytest.raises(TruncatedOutput):
        parse_f_col("f_col([name, ag")


# -- ReAct -----------------------------------------------------------------------------------

REACT_CASES: list[tuple[str, ReactStep]] = [
    (
        "Thought: I need the mean price.\nAction: df['price'].mean()\n"
        "Observation: 4.2\nThought: done\nFinal Answer: 4.2",
        ReactStep("I need the mean price.", action="df['price'].mean()"),
    ),
    (
        "I should look at the data.\nAction: python_repl_ast\n"
        "Action Input: ```python\nprint(df.head())\n```\nObservation:",
        ReactStep("I should look at the data.", "python_repl_ast", "print(df.head())"),
    ),
    ("Thought: easy\nFinal Answer: Paris, Rome", ReactStep("easy", final_answer="Paris, Rome")),
    (
        "Thought: I need to remove the comma. Action: df['x'].sum() Observation: 3 Final Answer: 3",
        ReactStep("I need to remove the comma.", action="df['x'].sum()"),
    ),
    ("**Thought:** look\n**Action:** `df.shape`", ReactStep("look", action="df.shape")),
    (
        "Thought: t\nAction: print('Final Answer: 3')",
        ReactStep("t", action="print('Final Answer: 3')"),
    ),
    (
        "<think>long</think>Thought: ok\nFinal Answer: The average is $442.79.\nObservation: x",
        ReactStep("ok", final_answer="The average is $442.79."),
    ),
    (
        "Thought: multi\nFinal Answer: line one\nline two",
        ReactStep("multi", final_answer="line one\nline two"),
    ),
]


@pytest.mark.parametrize(("text", "expected"), REACT_CASES)
def test_parse_react(text: str, expected: ReactStep) -> None:
    assert parse_react(text) == expected


def test_react_step_is_final() -> None:
    assert ReactStep("t", final_answer="x").is_final
    assert not ReactStep("t", action="a").is_final


@pytest.mark.parametrize(
    "text",
    [
        "Thought: nothing to do",
        "Thought: x\nObservation: 3\nFinal Answer: 3",
        "Thought: x\nAction:   \nAction Input: y",
        "Thought: x\nFinal Answer:",
        "",
    ],
)
def test_parse_react_errors(text: str) -> None:
    with pytest.raises(BadReAct):
        parse_react(text)


def test_f_row_long_lists_keep_order_and_drop_duplicates() -> None:
    items = ", ".join(f"row_{i}" for i in [*range(999, -1, -1), 5, 7])
    rows = parse_f_row(f"f_row([{items}, row 1000-1002])")
    assert rows == [*range(999, -1, -1), 1000, 1001, 1002]


def test_f_col_unquoted_and_quoted_items() -> None:
    assert parse_f_col("f_col([Year , League,, Year])") == ["Year", "League"]
    assert parse_f_col("f_col(['Gold, total', Year])") == ["Gold, total", "Year"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "insufficient",
        "Insufficient evidence.",
        "**INSUFFICIENT**",
        "mismatch",
        "N/A",
        '"n/a"',
        "I cannot answer this question from the table.",
        "I can't determine that.",
        "I'm unable to find it",
        "I don't know.",
        "The table does not contain the population of Oslo.",
        "The provided tables don't mention it",
        "There is not enough information to answer.",
        "It is impossible to determine the winner.",
        "cannot be determined",
        "f_row([*])",
        "`f_col([name, year])`",
        r"f\_row([1, 2])",
        "[*]",
        "<think>hmm</think><answer>insufficient</answer>",
        "<answer></answer>",
        "<answer>Your final answer</answer>",
    ],
)
def test_refusals_and_tool_syntax_are_non_answers(text: str) -> None:
    assert is_non_answer(text)


REAL_ANSWERS = ["42", "Norway", "none", "no", "0", "unknown", "Iceland", "1990, 1991", "NA"]
REAL_ANSWERS += ["mismatched socks", "insufficiently funded", "f_row is a helper", "Cannon St"]
REAL_ANSWERS += ["<answer>Oslo</answer>", "The table tennis club", "I Can't Stop Loving You"]


@pytest.mark.parametrize("text", REAL_ANSWERS)
def test_real_answers_are_answers(text: str) -> None:
    assert not is_non_answer(text)


# -- chatter and answers in the expected format (issue 36) ------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Hello! I am a helpful assistant. How can I help you today?",
        "Hi there! I'm an AI assistant created to help you.",
        "As an AI language model, I can analyse tables.",
        "What can I do for you?",
        "<think>greet</think>Hello, how may I assist you?",
        "I'd be happy to help with your question about the table!",
    ],
)
def test_greetings_and_self_introductions_are_chatter(text: str) -> None:
    assert is_chatter(text)


@pytest.mark.parametrize(
    "text",
    [*REAL_ANSWERS, "Hello", "Hello, Dolly!", "I Am a Rock", "I'm Your Man", "Help!"],
)
def test_answers_are_not_chatter(text: str) -> None:
    assert not is_chatter(text)


def test_extract_answer_without_bare_text_needs_a_marker() -> None:
    assert extract_answer("Reasoning.\nFinal Answer: 7", bare=False) == "7"
    assert extract_answer("<answer>Oslo</answer>", bare=False) == "Oslo"
    for text in ("Hello! I am a helpful assistant.", "just a bare reply", ""):
        with pytest.raises(NoAnswer):
            extract_answer(text, bare=False)


def test_reply_start_keeps_200_characters() -> None:
    assert reply_start("short") == "short" and reply_start(None) == ""
    assert reply_start("x" * 300) == "x" * 200 + "…"
    assert NO_ANSWER_IN_FORMAT == "the model's reply had no answer in the expected format"


def test_backticks_inside_json_strings_open_no_fence() -> None:
    # found by the property test above: the key's "```" was read as a fence holding `{}`
    assert extract_json('\n{"```": {}}\nThanks!', dict) == {"```": {}}
    assert extract_json('note ```x``` then\n{"a": "```json {}"}', dict) == {"a": "```json {}"}
    assert extract_json('Sure:\n```json\n{"a": 1}\n```\n{"b": 2}', dict) == {"a": 1}  # fenced first
    assert extract_json('Sure! ```json {"a": 1}```', dict) == {"a": 1}  # a fence mid-line: read
