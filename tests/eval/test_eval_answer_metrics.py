"""Answer metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from tablequest.eval.metrics import (
    bleu,
    exact_match,
    list_f1,
    normalize_answer,
    rouge_l,
    sentence_bleu,
    tabfact_label,
    tabfact_scores,
    tcr_token_f1,
    token_f1,
)


def test_normalize_answer_squad_style() -> None:
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("") == ""


def test_token_f1_hand_computed() -> None:
    # pred {cat, sat}; gold {cat, sat, on, mat}: P = 1, R = 1/2, F1 = 2/3
    assert token_f1("the cat sat", "cat sat on mat") == pytest.approx(2 / 3)
    # pred x y y vs gold x y: overlap 2, P = 2/3, R = 1, F1 = 0.8
    assert token_f1("x y y", "x y") == pytest.approx(0.8)
    assert token_f1("x", "z") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("a", "x") == 0.0  # "a" is an article: empty prediction
    # alternatives: best one counts
    assert token_f1("cat sat", ["dog", "cat sat"]) == 1.0
    with pytest.raises(ValueError, match="at least one"):
        token_f1("x", [])


def test_tcr_token_f1_compares_numbers_as_numbers() -> None:
    """TCR-Bench's ``safe_convert``: "19.0" is 19, so it matches "19" (SQuAD alone would read
    "190"); "0.50" is 0.5; text tokens are normalised as in token_f1."""
    assert token_f1("19.0", "19") == 0.0  # SQuAD: "190" vs "19"
    assert tcr_token_f1("19.0", "19") == 1.0
    assert tcr_token_f1("about 0.50 percent", "0.5") == pytest.approx(0.5)  # P 1/3, R 1
    assert tcr_token_f1("(19.0), the Cat", "19 cat") == 1.0
    assert tcr_token_f1("19.5", "19") == 0.0
    assert tcr_token_f1("1,234", "1234") == 1.0  # not a number to TCR; SQuAD drops the comma
    assert tcr_token_f1("-3", "-3.0") == 1.0 and tcr_token_f1("", "") == 1.0


def test_exact_match() -> None:
    assert exact_match("The Cat.", "cat")
    assert exact_match("cat", ["dog", "CAT"])
    assert not exact_match("cats", "cat")


def test_list_f1_multiset_with_numbers() -> None:
    # 2 of 2 predicted items match, 2 of 3 gold items found: P = 1, R = 2/3, F1 = 0.8
    assert list_f1(["35156", "b"], ["35156.0", "B", "c"]) == pytest.approx(0.8)
    assert list_f1(["a", "a"], ["a"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert list_f1([], []) == 1.0
    assert list_f1(["x"], []) == 0.0
    assert list_f1(["1_0"], ["10"]) == 0.0  # underscores are not digit separators
    with pytest.raises(TypeError, match="list of items"):
        list_f1("x", ["x"])


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        (2, None),
        (None, None),
        ("True", True),
        (" yes. ", True),
        ("Entailed", True),
        ("not supported", False),
        ("REFUTED", False),
        ("maybe", None),
    ],
)
def test_tabfact_label(value: str | bool | int | None, label: bool | None) -> None:
    assert tabfact_label(value) is label


def test_tabfact_scores_hand_computed() -> None:
    preds = ["true", "true", "false", "false", "unsure"]
    golds = [1, 1, 0, 1, 0]
    # correct: T T T F F → Acc 3/5; supported (0, 1, 3): T T F → 2/3; refuted (2, 4): T F → 1/2
    scores = tabfact_scores(preds, golds)
    assert scores["acc"] == pytest.approx(0.6)
    assert scores["acc_sup"] == pytest.approx(2 / 3)
    assert scores["acc_ref"] == pytest.approx(0.5)
    assert (scores["n"], scores["n_sup"], scores["n_ref"]) == (5, 3, 2)
    flagged = tabfact_scores(preds, golds, [True, False, False, False, False])
    assert flagged["acc_sup"] == 1.0
    assert flagged["acc_ref"] == pytest.approx(0.5)


def test_tabfact_scores_edge_cases() -> None:
    only_sup = tabfact_scores([True], ["entailed"])
    assert only_sup["acc"] == 1.0
    assert math.isnan(only_sup["acc_ref"])
    with pytest.raises(ValueError, match="same length"):
        tabfact_scores([True], [True, False])
    with pytest.raises(ValueError, match="unreadable gold"):
        tabfact_scores([True], ["perhaps"])


def test_rouge_l_hand_computed() -> None:
    # LCS "the cat sat" = 3 tokens; P = 3/3, R = 3/5, F = 0.75
    corpus, items = rouge_l(["the cat sat", "a b"], ["the cat sat on mat", "a b"])
    assert items == pytest.approx([0.75, 1.0])
    assert corpus == pytest.approx(0.875)
    empty, none = rouge_l([], [])
    assert math.isnan(empty) and none == []
    with pytest.raises(ValueError, match="pair them up"):
        rouge_l(["x"], [])
    with pytest.raises(TypeError, match="lists of strings"):
        rouge_l("x", "x")


def test_bleu_identical_and_disjoint() -> None:
    text = "the quick brown fox jumps over the lazy dog"
    corpus, items = bleu([text, "alpha beta gamma delta"], [text, "one two three four"])
    assert items[0] == pytest.approx(100.0)
    assert items[1] == pytest.approx(0.0, abs=1e-9)
    assert 0.0 < corpus < 100.0
    assert sentence_bleu(text, text) == pytest.approx(100.0)
    nan, none = bleu([], [])
    assert math.isnan(nan) and none == []
