"""WTQ exact match against the official evaluator v1.0.2 rules (hand-worked cases)."""

from __future__ import annotations

import pytest

from tablequest.eval.metrics import wtq_denotation, wtq_match, wtq_normalize


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("  Italy ", "italy"),
        ("São Paulo", "sao paulo"),  # diacritics removed (NFKD, drop Mn)
        ("“Hello”", "hello"),  # smart quotes → ASCII, then outermost quotes stripped
        ("it’s", "it's"),
        ("1990–91", "1990-91"),  # en dash → hyphen
        ("Paris[1]", "paris"),  # citation
        ("Paris [note 2]", "paris"),
        ("Paris†", "paris"),
        ("Paris*#", "paris"),
        ("[1]", ""),  # a bare numeric citation is removed even at the start
        ("[note]", "[note]"),  # other brackets only when not at the start
        ("Bangkok (Thailand)", "bangkok"),  # trailing parenthesized details
        ("Bangkok (Thailand) (2001)", "bangkok"),
        ("(a) (b)", "(a)"),  # never the whole string
        ('"Rome"', "rome"),
        ("Rome.", "rome"),
        ("Rome..", "rome."),  # only one final period
        ("New   York\tCity", "new york city"),
        ('"Bangkok (Thailand)"[2]', "bangkok"),  # repeated until stable
    ],
)
def test_normalize(raw: str, normalized: str) -> None:
    assert wtq_normalize(raw) == normalized


@pytest.mark.parametrize(
    ("prediction", "target", "canon", "expected"),
    [
        # strings
        (["italy"], ["Italy"], None, True),
        (["Sao Paulo"], ["São Paulo"], None, True),
        (["Paris"], ["Paris[1]"], None, True),
        (["Bangkok"], ["Bangkok, Thailand"], None, False),
        # numbers: tolerance 1e-6, int/float equivalence, no thousands separators
        (["2.0"], ["2"], None, True),
        (["2.0000001"], ["2"], None, True),
        (["2.1"], ["2"], None, False),
        (["1e3"], ["1000"], None, True),
        (["1,000"], ["1000"], None, False),  # "1,000" is a string, "1000" a number
        (["1_000"], ["1000"], None, False),  # Python 2 int() rejected underscores
        (["two"], ["2"], None, False),
        # numbers through targetCanon
        (["1000"], ["1,000"], ["1000.0"], True),
        (["1,000"], ["1,000"], ["1000.0"], True),  # normalized strings equal
        (["1000.0000001"], ["1,000"], ["1000.0"], True),
        (["1001"], ["1,000"], ["1000.0"], False),
        (["17"], ["17 years"], ["17.0"], True),
        (["17 years"], ["17 years"], ["17.0"], True),
        # dates (yyyy-mm-dd, xx for unknown fields)
        (["1995-01-26"], ["January 26, 1995"], ["1995-01-26"], True),
        (["1995-1-26"], ["January 26, 1995"], ["1995-01-26"], True),
        (["xx-01-26"], ["January 26, 1995"], ["1995-01-26"], False),
        (["xx-10-17"], ["October 17"], ["xxxx-10-17"], True),
        (["2011-10-17"], ["October 17"], ["xxxx-10-17"], False),
        (["October 2011"], ["October 2011"], ["2011-10-xx"], True),
        (["2004"], ["2004"], ["2004-xx-xx"], True),  # year-only date is a number
        (["2004.0"], ["in 2004"], ["2004-xx-xx"], True),
        (["2004-xx-xx"], ["2004"], None, True),  # predicted year-only date → number 2004
        (["1995-13-01"], ["1995-13-01"], None, True),  # invalid month: a plain string
        (["xx-xx-xx"], ["XX-xx-xx"], None, True),  # all fields unknown: a string
        (["a-b-c"], ["A-B-C"], None, True),
        (["nan"], ["NaN"], None, True),  # NaN / inf are not numbers
        (["inf"], ["1e999"], None, False),
        (["2004-01-01", "2004-1-1"], ["2004-01-01"], None, True),  # the same date twice
        # lists: a set of denotations, any order, same size
        (["b", "a"], ["a", "b"], None, True),
        (["a"], ["a", "b"], None, False),
        (["a", "b", "c"], ["a", "b"], None, False),
        (["a", "A."], ["a"], None, True),  # duplicates collapse
        (["2", "2.0"], ["2"], None, True),
        ([], [], None, True),
        # an empty canon item falls back to the original string
        (["3"], ["3"], [""], True),
        # gold given only as canon (empty original)
        (["5"], [""], ["5.0"], True),
        (["2001-02-xx"], [""], ["2001-02-xx"], True),
    ],
)
def test_wtq_match(
    prediction: list[str], target: list[str], canon: list[str] | None, expected: bool
) -> None:
    assert wtq_match(prediction, target, canon) is expected


def test_wtq_match_rejects_bare_strings_and_bad_canon() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        wtq_match("Italy", ["Italy"])
    with pytest.raises(TypeError, match="target_values"):
        wtq_match(["Italy"], "Italy")
    with pytest.raises(ValueError, match="target_canon has 1 items"):
        wtq_match(["a"], ["a", "b"], ["a"])


def test_wtq_denotation_splits_on_pipes() -> None:
    assert wtq_denotation("Alpha | Beta|") == ["Alpha", "Beta"]
    assert wtq_denotation("2004") == ["2004"]
    assert wtq_denotation("  ") == []
    assert wtq_match(wtq_denotation("Beta|Alpha"), ["Alpha", "Beta"])
