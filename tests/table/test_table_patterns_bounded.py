"""Bounded pattern search: the same answers as Python's `re`, in bounded time (issue 12)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tablequest.table import Preview, Table, _charsets, preview
from tablequest.table.patterns import (
    PatternBudget,
    PatternDropped,
    bounded,
    compile_pattern,
    matching_lines,
    pattern_search,
)

HANG_GUARD_S = 120.0  # only a guard against a hang; the searches below take milliseconds


def finishes(fn: Callable[[], object]) -> object:
    """fn()'s value (or its exception); fails instead of hanging if it never returns."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, fn()))
        except Exception as exc:
            box.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    assert box, "the search did not finish"
    ok, value = box[0]
    if not ok:
        assert isinstance(value, Exception)
        raise value
    return value


def every_code_point() -> str:
    return _charsets._every_code_point()


def as_points(ranges: _charsets.Ranges) -> set[int]:
    return {c for lo, hi in ranges for c in range(lo, hi + 1)}


# -- exact character sets ---------------------------------------------------------------
def test_cased_set_is_closed_under_case_insensitive_matching() -> None:
    text, ranges = _charsets.cased()
    every = every_code_point()
    # nothing outside the set matches a cased character case-insensitively
    found = set(re.findall("[" + re.escape(text) + "]", every, re.IGNORECASE))
    assert found == set(text)
    # and no code point above the scanned block has a case mapping
    beyond = every[_charsets._CASE_LIMIT :]
    assert all(ch.lower() == ch and ch.upper() == ch for ch in beyond)
    assert as_points(ranges) == set(map(ord, text))


NODES = ["k", "s", "i", "ß", "ι", "a", "7", "[a-z]", r"[^\W\d]", r"\w", r"\s", r"\D", "[ſ-ſ]"]
NODES += ["[Ͱ-Ͽ]", "[^k]", ".", "(?s).", r"(?a)\w", "(?a)k", "(?-i:K)", r"[\w-]", "[^a-cK]"]


@pytest.mark.parametrize("node", NODES)
def test_node_sets_equal_what_re_matches_over_every_code_point(node: str) -> None:
    sre_parse = __import__("re._parser").__dict__["_parser"]
    tree = sre_parse.parse(node, re.IGNORECASE)
    ((op, av),) = list(tree)
    flags = tree.state.flags
    if str(op) == "SUBPATTERN":  # (?-i:K)
        flags = (flags | av[1]) & ~av[2]
        ((op, av),) = list(av[3])
    ranges = _charsets.node_set(op, av, flags)
    expected = {ord(ch) for ch in re.findall(node, every_code_point(), re.IGNORECASE)}
    assert as_points(ranges) == expected


# -- the three engines -------------------------------------------------------------------
def test_engines_are_chosen_by_pattern_and_text() -> None:
    assert bounded(r"\bteam\b").engine == "re"
    assert bounded("usl|mls|a-league").engine == "re"
    assert bounded(r"19\d{2}").engine == "re"
    assert bounded(r"(\w+\s?)+$").engine == "re2"
    assert bounded(r"16+1").engine == "re2"
    assert bounded(r"(a+)+\1").engine == "regex"  # RE2 has no backreferences
    # RE2's \b is ASCII: right on ASCII text, not on "é"
    assert bounded(r"\b\w+\b").engine_for("word") == "re2"
    assert bounded(r"\b\w+\b").engine_for("été") == "regex"


@pytest.mark.parametrize(
    ("pattern", "tail"),
    [(r"(\w+\s?)+$", "a"), (r"(a+)+$", "a"), (r"(a|a)+$", "a"), (r"(\w|\d)*x$", "x")],
)
@pytest.mark.parametrize("text", ["a" * 5000 + "!", "word " * 3000 + "!", "é" * 3000 + "!"])
def test_catastrophic_patterns_are_answered_by_re2(pattern: str, tail: str, text: str) -> None:
    matcher = bounded(pattern)
    assert matcher.engine_for(text) == "re2"
    assert finishes(lambda: matcher.search(text)) is False
    assert finishes(lambda: matcher.search(text[:-1] + tail)) is True


def test_pattern_past_its_budget_is_dropped_with_the_reason() -> None:
    text = "a" * 40 + "!"  # (a|aa)+ has Fibonacci-many ways to split 40 a's
    with pytest.raises(PatternDropped) as caught:
        finishes(lambda: pattern_search(r"(a|aa)+\1$", text, budget=PatternBudget(0.05)))
    assert caught.value.pattern == r"(a|aa)+\1$"
    assert "time budget" in caught.value.reason
    assert caught.value.record.reason == caught.value.reason


def test_rewrite_too_long_to_compile_in_time_is_dropped_unrun() -> None:
    pattern = r"\b" + r"\w+?\b(?=x)" * 50  # lookaheads: only the backtracking fallback
    with pytest.raises(PatternDropped, match=r"rewrite has .* characters"):
        finishes(lambda: pattern_search(pattern, "été " * 10))


def test_matching_lines_shares_one_budget_and_raises_on_drop() -> None:
    lines = ["Chicago Fire", "MLS", "chicago", "fire chicago"]
    assert matching_lines(r"chicago\s*fire|^mls$", lines) == [0, 1]
    assert matching_lines("(2004", ["since (2004)", "2004"]) == [0]  # invalid: a literal
    with pytest.raises(PatternDropped):
        finishes(lambda: matching_lines(r"(a|aa)+\1$", ["b", "a" * 40 + "!"], budget=0.05))


def test_ordinary_patterns_match_like_re() -> None:
    cases = [
        (r"\bteam\b", "The TEAM won", True),
        ("straße", "STRASSE", False),  # re does not fold ß to ss
        ("istanbul", "İstanbul", True),
        (r"usl\s+a-league", "USL\nA-League", True),
        (r"x$", "ax\n", True),
        (r"x$\n", "ax\n", True),
        (r"(?m)^b", "a\nb", True),
        (r"\B", "", False),
        (r"ſ+t", "SST", True),
    ]
    for pattern, text, expected in cases:
        assert pattern_search(pattern, text) is expected, pattern
        assert (compile_pattern(pattern).search(text) is not None) is expected, pattern


# -- property: every engine agrees with re -------------------------------------------------
ATOMS = ["a", "b", "k", "s", "i", "ß", "é", "ı", "İ", "ſ", "K", "ι", "\u0345", "x", "-", " "]
ATOMS += [".", r"\w", r"\W", r"\d", r"\s", r"\S", "[a-z]", "[^a]", r"[\w-]", r"[^\W\d]"]
ANCHORS = ["^", "$", r"\b", r"\B", r"\A", r"\Z"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "*?", "+?", "*+", "++", "{0,2}+"]
TEXT_ALPHABET = "abksixXKıİſKßẞéEÉ\u0345ι_- \n9٣"


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
        children.map(lambda s: f"(?={s})"),
        children.map(lambda s: f"(?!{s})"),
        children.map(lambda s: f"(?-i:{s})"),
        children.map(lambda s: f"(?>{s})"),
    )


regex_st = st.recursive(st.sampled_from(ATOMS + ANCHORS), _compound, max_leaves=6)
pattern_st = st.tuples(
    st.sampled_from(["", "(?m)", "(?s)", "(?a)"]),
    regex_st,
    st.sampled_from(["", r"(.)\1", r"(?<=a)", r"(?<!\w)", "(a)?(?(1)b|c)"]),
).map("".join)
text_st = st.text(alphabet=TEXT_ALPHABET, max_size=14)


@settings(max_examples=600, deadline=None)
@given(pattern=pattern_st, text=text_st)
def test_bounded_search_equals_re(pattern: str, text: str) -> None:
    # documented divergence: backreferences under IGNORECASE fold like the regex module
    assume(r"\1" not in pattern or text.isascii())
    expected = compile_pattern(pattern).search(text) is not None
    assert bounded(pattern).search(text, PatternBudget(30.0)) is expected


def test_preview_drops_a_pattern_over_budget_and_keeps_the_others() -> None:
    table = Table.from_rows([["name", "note"], *[[f"row{i}", "a" * 40 + "!"] for i in range(30)]])
    patterns = [r"(a|aa)+\1$", "row29"]
    view = finishes(lambda: preview(table, patterns, head_chars=20, pattern_budget=0.05))
    assert isinstance(view, Preview)
    assert [d.pattern for d in view.dropped] == [r"(a|aa)+\1$"]
    assert view.matched_rows == {"row29": [29]}
