"""The trigram-filtered grep index gives exactly the naive scan's answers (Eq. 1)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.corpus.grep import GrepIndex, naive_scores, required_literals

TEXTS = [
    "| Year | Team | League |\n| 2004 | Boston | USL A-League |",
    "Year,Team,Division\n2001,Chicago Fire,MLS\n2002,Chicago Fire,MLS",
    "<table><tr><th>City</th><th>Temp</th></tr><tr><td>Zürich</td><td>12.5</td></tr></table>",
    "name,population\nSpringfield,30720\nShelbyville,1,234,567",
    "",
    "İstanbul,ſtraße,KELVIN",
]


def test_eq1_scores_are_fractions_of_patterns_found() -> None:
    index = GrepIndex.build([f"t{i}" for i in range(len(TEXTS))], TEXTS)
    scores = index.scores(["chicago", "mls", "2004"])
    # hand-computed: table 1 has chicago and mls (2/3); table 0 has 2004 (1/3)
    assert scores.tolist() == pytest.approx([1 / 3, 2 / 3, 0, 0, 0, 0])


def test_duplicate_patterns_count_once() -> None:
    index = GrepIndex.build(["a", "b"], ["alpha beta", "beta"])
    assert index.scores(["beta", "beta", "alpha"]).tolist() == pytest.approx([1.0, 0.5])


def test_top_orders_by_score_then_length_then_id() -> None:
    texts = ["apple pie and more words here", "apple", "apple", "banana"]
    index = GrepIndex.build(["d", "c", "b", "a"], texts)
    # three tables tie on score 1.0; the two shortest tie on length → id order b before c
    assert [i for i, _ in index.top(["apple"], 10)] == [2, 1, 0]
    assert index.top(["zzz"], 5) == []
    assert index.top(["apple"], 0) == []


def test_invalid_regex_is_matched_literally() -> None:
    index = GrepIndex.build(["x", "y"], ["language C++ (2004", "C language"])
    assert index.matching("C++ (2004").tolist() == [0]


@pytest.mark.parametrize("pattern", ["istanbul", "straße", "kelvin", "KELVIN", "stanbul"])
def test_unicode_folding_agrees_with_regex(pattern: str) -> None:
    texts = ["İstanbul ſtraße KELVIN", "nothing here"]
    index = GrepIndex.build(["x", "y"], texts)
    expected = [i for i, s in enumerate(naive_scores(texts, [pattern])) if s]
    assert index.matching(pattern).tolist() == expected
    assert expected == [0]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("chicago fire", [["chicago fire"]]),
        ("usl|mls", None),  # 'mls'/'usl' have trigrams → both alternatives kept below
        ("(boston|chicago) fire", [["boston", " fire"], ["chicago", " fire"]]),
        (r"\d{4}", None),
        ("ab", None),
        ("x?yzw", [["yzw"]]),
        ("(abc)+def", [["abc", "def"]]),
    ],
)
def test_required_literals(pattern: str, expected: list[list[str]] | None) -> None:
    got = required_literals(pattern)
    if pattern == "usl|mls":
        assert got == [["usl"], ["mls"]]
    else:
        assert got == expected


def test_persisted_blob_round_trip() -> None:
    index = GrepIndex.build(["a", "b"], TEXTS[:2])
    again = GrepIndex.from_blob(["a", "b"], TEXTS[:2], index.arrays_blob())
    assert np.array_equal(again.postings, index.postings)
    assert again.scores(["team"]).tolist() == [1.0, 1.0]


def test_empty_index() -> None:
    index = GrepIndex.build([], [])
    assert len(index) == 0
    assert index.scores(["a"]).size == 0
    assert index.scores([]).size == 0


WORDS = ["usl", "a-league", "chicago", "fire", "mls", "2004", "zürich", "12.5", "team", "pop"]
text_st = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(alphabet="abcXYZ019 ,|-.é", max_size=8)),
    max_size=12,
).map(" ".join)
pattern_st = st.one_of(
    st.sampled_from(WORDS).map(re.escape),
    st.sampled_from(WORDS),
    st.text(alphabet="abcXYZ019.|()*+?[]\\-é", min_size=1, max_size=6),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=3).map("|".join),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=2).map(".*".join),
)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(text_st, max_size=8), patterns=st.lists(pattern_st, max_size=6))
def test_index_equals_naive_scan(texts: list[str], patterns: list[str]) -> None:
    index = GrepIndex.build([f"t{i}" for i in range(len(texts))], texts)
    assert index.scores(patterns).tolist() == pytest.approx(naive_scores(texts, patterns))
