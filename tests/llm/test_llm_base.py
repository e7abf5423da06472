"""Interface types, argument checks and token estimates."""

from __future__ import annotations

from typing import Any

import pytest

from tablequest.llm import Completion, Usage, estimate_tokens
from tablequest.llm.base import check_chat_args, estimate_prompt_tokens, normalize_stop


def test_completion_round_trip() -> None:
    c = Completion("hi", "length", [-0.1, -2.0], Usage(10, 2), 0.5, cached=True)
    assert Completion.from_dict(c.to_dict()) == c
    assert Completion.from_dict({"text": "x"}) == Completion("x")
    assert c.usage.total_tokens == 12


def test_estimates() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_prompt_tokens([{"role": "user", "content": "abcd"}]) == 5


@pytest.mark.parametrize(
    ("messages", "kw", "pattern"),
    [
        ([], {}, "non-empty"),
        ({"role": "user", "content": "x"}, {}, "non-empty"),
        (["hello"], {}, "must be a dict"),
        ([{"role": "robot", "content": "x"}], {}, "role 'robot'"),
        ([{"role": "user", "content": None}], {}, "must be a str"),
        ([{"role": "user", "content": "x"}], {"n": 0}, "n must be"),
        ([{"role": "user", "content": "x"}], {"max_tokens": 0}, "max_tokens must be"),
    ],
)
def test_check_chat_args_rejects(messages: Any, kw: dict[str, int], pattern: str) -> None:
    args = {"max_tokens": 10, "n": 1, **kw}
    with pytest.raises(ValueError, match=pattern):
        check_chat_args(messages, **args)


def test_check_chat_args_copies_and_strips_extra_keys() -> None:
    msgs = [{"role": "user", "content": "x", "name": "bob"}]
    assert check_chat_args(msgs, max_tokens=1, n=1) == [{"role": "user", "content": "x"}]


def test_normalize_stop() -> None:
    assert normalize_stop(None) is None
    assert normalize_stop("") is None
    assert normalize_stop("a") == ["a"]
    assert normalize_stop(("a", "", "b")) == ["a", "b"]
