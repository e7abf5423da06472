"""Scripted: queued and function replies, call recording, stop/max_tokens, errors."""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.llm import Completion, LLMTimeout, Scripted, ScriptExhausted, Usage

MSG = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q?"}]


def test_queue_in_order_and_calls_recorded() -> None:
    llm = Scripted(["first", "second"])
    assert llm.chat(MSG)[0].text == "first"
    out = llm.chat(MSG, temperature=0.3, max_tokens=50, stop="x", response_format={"t": 1})
    assert out[0].text == "second"
    assert len(llm.calls) == 2
    assert llm.calls[0].messages == MSG and llm.calls[0].prompt == "q?"
    assert llm.calls[1].params == {
        "temperature": 0.3,
        "max_tokens": 50,
        "n": 1,
        "logprobs": False,
        "stop": ["x"],
        "response_format": {"t": 1},
    }
    assert llm.remaining == 0


def test_exhausted_queue_raises_clear_error() -> None:
    llm = Scripted(["only"], model="fake")
    llm.chat(MSG)
    with pytest.raises(ScriptExhausted, match=r"'fake' has no reply left for call #2.*'q\?'"):
        llm.chat(MSG)
    llm.enqueue("again")
    assert llm.chat(MSG)[0].text == "again"


def test_exceptions_in_queue_are_raised() -> None:
    llm = Scripted([LLMTimeout("slow"), "ok"])
    with pytest.raises(LLMTimeout, match="slow"):
        llm.chat(MSG)
    assert llm.chat(MSG)[0].text == "ok"


def test_n_consumes_one_item_per_completion_and_usage_on_first() -> None:
    llm = Scripted(["a", "b", "c"])
    out = llm.chat(MSG, n=2)
    assert [c.text for c in out] == ["a", "b"]
    assert out[0].usage.prompt_tokens > 0 and out[1].usage.prompt_tokens == 0
    with pytest.raises(ScriptExhausted):
        llm.chat(MSG, n=2)


def test_completion_objects_pass_through() -> None:
    given = Completion("x", "length", [-0.5], Usage(3, 1), 1.0, cached=True)
    [c] = Scripted([given]).chat(MSG, logprobs=True)
    assert c.text == "x" and c.finish_reason == "length" and c.token_logprobs == [-0.5]
    assert c.cached is False


def test_stop_max_tokens_and_logprobs_on_text() -> None:
    llm = Scripted(["Action: x\nObservation: made up", "y" * 40, "two words"])
    assert llm.chat(MSG, stop=["Observation:"])[0].text == "Action: x\n"
    long = llm.chat(MSG, max_tokens=2)[0]
    assert long.text == "y" * 8 and long.finish_reason == "length"
    assert llm.chat(MSG, logprobs=True)[0].token_logprobs == [0.0, 0.0]


def test_function_replies() -> None:
    seen: list[dict[str, Any]] = []

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        seen.append(params)
        text = messages[-1]["content"]
        if text == "err":
            return ValueError("nope")
        if text == "many":
            return ["1", "2"]
        return text[::-1]

    llm = Scripted(reply)
    assert llm.chat([{"role": "user", "content": "abc"}])[0].text == "cba"
    assert [c.text for c in llm.chat([{"role": "user", "content": "abc"}], n=2)] == ["cba"] * 2
    assert [c.text for c in llm.chat([{"role": "user", "content": "many"}], n=2)] == ["1", "2"]
    with pytest.raises(ScriptExhausted, match="gave 2 replies for n=3"):
        llm.chat([{"role": "user", "content": "many"}], n=3)
    with pytest.raises(ValueError, match="nope"):
        llm.chat([{"role": "user", "content": "err"}])
    assert seen[0]["n"] == 1 and len(llm.calls) == 5


def test_describe() -> None:
    llm = Scripted(model="m")
    assert llm.describe() == {"backend": "scripted", "url": "scripted://", "model": "m"}
    with llm as same:
        assert same is llm
