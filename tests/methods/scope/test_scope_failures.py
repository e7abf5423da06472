"""Every parse failure and model error of TabScope ends in a recorded fallback, not an exception."""

from __future__ import annotations

import json

import pytest
from scope_helpers import Bot, ask, fallback_stages, llm_events, seq

from tablequest.llm.base import Completion, LLMTimeout, LLMUnavailable

PROSE = "I think the answer involves the league table, hope this helps!"


# -- classifier ----------------------------------------------------------------------------------
def test_classifier_repaired_on_second_try() -> None:
    bot = Bot(classify=seq(PROSE, json.dumps({"question_type": "Order/Superlative"})))
    result, trace, _ = ask(bot)
    assert bot.seen[:2] == ["classify", "classify_repair"]
    assert result.details["question_type"] == "order_superlative"
    assert result.details["breakdown"]["scope"] == "local"
    assert result.steps == 6 == len(llm_events(trace))


@pytest.mark.parametrize(
    "bad",
    [PROSE, json.dumps({"question_type": "trivia"}), '{"question_type": "look', ""],
    ids=["prose", "unknown-type", "truncated", "empty"],
)
def test_classifier_unusable_after_repair_takes_the_full_table(bad: str) -> None:
    bot = Bot(classify=bad)
    result, _, _ = ask(bot)
    assert bot.seen == ["classify", "classify_repair", "answer"]
    assert result.status == "answered"
    assert result.details["breakdown"] == {
        "question_type": "unclassified",
        "scope": "full",
        "regime": "default",
    }
    assert "classify" in fallback_stages(result)


def test_classifier_server_error_takes_the_full_table() -> None:
    result, trace, _ = ask(Bot(classify=LLMUnavailable("HTTP 500 on every attempt")))
    assert result.status == "answered" and result.details["scope"]["used"] == "full"
    llm = llm_events(trace)
    assert llm[0]["error"] == "LLMUnavailable"
    assert "classify" in fallback_stages(result)


# -- retrieval -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [PROSE, ""], ids=["prose", "empty"])
def test_unparsable_rows_get_one_repair_then_all_rows(bad: str) -> None:
    bot = Bot(rows=bad)
    result, _trace, _ = ask(bot, refine=False)
    assert bot.seen.count("rows_repair") == 1
    rows = result.details["retrieval"]["rows"]
    assert rows["usable"] == 0 and rows["repaired"] is True and rows["fallback_all"] is True
    assert len(rows["invalid"]) == 5 and rows["invalid"][0]["problem"].startswith("bad_call")
    assert result.details["subtable"]["rows"] == [0, 1, 2]
    assert result.details["subtable"]["columns"] == ["Year", "League"]
    assert "rows" in fallback_stages(result)
    assert result.status == "answered"


def test_truncated_rows_repaired() -> None:
    bot = Bot(rows=seq(Completion("f_row([row_0, row_", finish_reason="length"), "f_row([row_2])"))
    # n=4: the first request takes the truncated reply 4 times (a list would differ per sample)
    result, _, _ = ask(bot, refine=False)
    rows = result.details["retrieval"]["rows"]
    assert rows["invalid"][0]["problem"].startswith("truncated")
    assert rows["repaired"] is True
    assert result.details["subtable"]["rows"] == [2]


def test_invented_rows_and_columns_are_dropped_and_recorded() -> None:
    bot = Bot(
        rows=[
            "f_row([row_1, row_99])",
            "f_row([row_1])",
            "f_row([row_1, row_x])",
            "f_row([row_1])",
        ],
        cols=["f_col([Year, Coach])", "f_col([Year])", "f_col([year])", "f_col(['Year'])"],
    )
    result, trace, _ = ask(bot, refine=False)
    assert result.details["subtable"]["rows"] == [1]
    assert result.details["subtable"]["columns"] == ["Year"]
    assert result.details["retrieval"]["rows"]["dropped"] == ["99"]
    assert result.details["retrieval"]["cols"]["dropped"] == ["Coach"]
    bad_item = [i for i in result.details["retrieval"]["rows"]["invalid"]]
    assert len(bad_item) == 1  # "row_x" is not a row number: that sample is unusable
    assert any(e.get("problem") == "invented ids dropped" for e in trace.events)


def test_only_invented_columns_fall_back_to_all_columns() -> None:
    bot = Bot(cols="f_col([Coach, Stadium])")
    result, _, _ = ask(bot, refine=False)
    cols = result.details["retrieval"]["cols"]
    assert cols["usable"] == 0 and cols["fallback_all"] is True
    assert result.details["subtable"]["col_ids"] == [0, 1, 2]


def test_empty_rows_output_is_never_an_empty_subtable() -> None:
    bot = Bot(rows="f_row([])")
    result, _, _ = ask(bot, refine=False)
    assert result.details["subtable"]["rows"] == [0, 1, 2]
    assert result.status == "answered"


def test_retrieval_timeout_keeps_all_ids_of_that_dimension() -> None:
    bot = Bot(cols=LLMTimeout("no answer within 60s"))
    result, _, _ = ask(bot, refine=False)
    assert result.details["subtable"]["rows"] == [0, 1]
    assert result.details["subtable"]["col_ids"] == [0, 1, 2]
    assert "cols" in fallback_stages(result)


# -- refinement ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [PROSE, json.dumps({"action": "delete"}), '{"action": "exp', "[]"],
    ids=["prose", "bad-action", "truncated", "wrong-type"],
)
def test_unusable_refinement_keeps_the_selection(bad: str) -> None:
    bot = Bot(refine=bad)
    result, _, _ = ask(bot)
    assert bot.seen.count("refine_repair") == 1
    assert result.details["subtable"]["rows"] == [0, 1]
    assert result.details["refinement"]["applied"] is False
    assert "refine" in fallback_stages(result)
    assert result.status == "answered"


def test_truncated_refinement_json_is_repaired_by_the_parser() -> None:
    bot = Bot(refine='{"action": "expand", "final_rows": [2], "final_columns": ["Year"], "re')
    result, _, _ = ask(bot)
    assert "refine_repair" not in bot.seen
    assert result.details["subtable"]["rows"] == [0, 1, 2]


# -- answer --------------------------------------------------------------------------------------
def test_answer_without_tags_gets_one_repair() -> None:
    bot = Bot(answer=seq("The year was 2004.", "<think>ok</think><answer>2004</answer>"))
    result, _, _ = ask(bot)
    assert bot.seen[-2:] == ["answer", "answer_repair"]
    assert result.answer == "2004" and "answer_unparsed" not in result.details


def test_answer_cut_inside_think_gets_one_repair() -> None:
    cut = Completion("<think>Let me count the rows one by one", finish_reason="length")
    bot = Bot(answer=seq(cut, "<answer>2004</answer>"))
    result, trace, _ = ask(bot)
    assert result.answer == "2004"
    errors = [e for e in trace.events if e["kind"] == "error" and e.get("stage") == "answer"]
    assert errors[0]["finish_reason"] == "length"


def test_tagless_short_answer_taken_after_repair_fails() -> None:
    bot = Bot(answer="Answer: 2004")
    result, _, _ = ask(bot)
    assert result.answer == "2004" and result.details["answer_unparsed"] is True
    assert "answer" in fallback_stages(result)


GREETING = "Hello! I am a helpful assistant. How can I help you today?"
LONG_PROSE = "The league table lists the seasons of the team, " * 10  # no answer marker


@pytest.mark.parametrize(
    "bad",
    ["", "<think>" + "x " * 50, GREETING, LONG_PROSE],
    ids=["empty", "only-thinking", "greeting", "long-prose"],
)
def test_no_answer_at_all_fails_with_a_reason(bad: str) -> None:
    """Issue 36: a reply with no answer in the <answer> format is never the answer."""
    result, trace, _ = ask(Bot(answer=bad))
    assert result.status == "failed" and result.answer is None
    assert result.reason == "the model's reply had no answer in the expected format"
    assert trace.events[-1]["stage"] == "end" and trace.events[-1]["status"] == "failed"
    (event,) = [e for e in trace.events if e["kind"] == "fallback" and "reply" in e]
    assert event["stage"] == "answer" and event["reason"] == result.reason
    assert event["reply"] == (bad if len(bad) <= 200 else bad[:200] + "…")


def test_a_short_tagless_answer_is_still_taken() -> None:
    result, _, _ = ask(Bot(answer="2004"))
    assert result.status == "answered" and result.answer == "2004"
    assert result.details["answer_unparsed"] is True


def test_an_answer_given_in_json_is_its_answer_not_the_json() -> None:
    for reply in ('{"answer": "2004"}', '```json\n{"answer": 2004}\n```'):
        result, _, _ = ask(Bot(answer=reply))
        assert result.status == "answered" and result.answer == "2004", reply
        assert result.details["answer_unparsed"] is True


def test_answer_server_error_fails_with_a_reason() -> None:
    result, _, _ = ask(Bot(answer=LLMUnavailable("HTTP 429 on every attempt")))
    assert result.status == "failed"
    assert "could not be made" in (result.reason or "")
    assert "qa" in fallback_stages(result)


def test_repairs_are_budgeted() -> None:
    # 3 steps: classify (+ its repair) leaves the last for the answer, whose repair cannot run
    bot = Bot(classify=PROSE, answer="not tagged and far too long " * 20)
    result, trace, _ = ask(bot, steps=3)
    assert result.steps == 3 == len(llm_events(trace))
    assert bot.seen == ["classify", "classify_repair", "answer"]
    assert result.status == "failed"
