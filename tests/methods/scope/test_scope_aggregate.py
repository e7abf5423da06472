"""Evidence aggregation, Eqs 2–5 of TabScope (arXiv:2609.03395), on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from tablequest.methods.scope.aggregate import (
    Candidate,
    aggregate,
    candidate_score,
    rank_groups,
)

ROWS10 = frozenset(range(10))
COLS4 = frozenset(range(4))


def c(*ids: int, s: float | None = None) -> Candidate:
    return Candidate(frozenset(ids), s)


def run(rows: list[Candidate], cols: list[Candidate], alpha: float = 0.2):  # type: ignore[no-untyped-def]
    return aggregate(rows, cols, n_rows=10, n_cols=4, all_rows=ROWS10, all_cols=COLS4, alpha=alpha)


def test_candidate_score_is_the_mean_token_logprob() -> None:
    assert candidate_score([-1.0, -0.5, 0.0]) == pytest.approx(-0.5)
    assert candidate_score(None) is None
    assert candidate_score([]) is None


def test_one_sample_each_picks_it_with_hand_computed_score() -> None:
    agg = run([c(1, 2)], [c(0)])
    # RowScore = ColScore = 1; ρ = 2·1 / (10·4) = 0.05; S = 1 / 0.05^0.2
    assert agg.rows == {1, 2} and agg.cols == {0}
    assert agg.support == 1.0
    assert agg.rho == pytest.approx(0.05)
    assert agg.score == pytest.approx(0.05**-0.2)


def test_frequency_voting_without_logprobs() -> None:
    # rows: {1} ×3, {1,2} ×1 → w = 3, 1 (exp(0) each). Candidates: {1}, {1,2}.
    # RowScore({1}) = 3/4, RowScore({1,2}) = 4/4. Columns: one group {0}.
    # S({1},{0}) = sqrt(0.75) / (1/40)^0.2 ; S({1,2},{0}) = 1 / (2/40)^0.2
    agg = run([c(1), c(1), c(1), c(1, 2)], [c(0)] * 4)
    s1 = math.sqrt(0.75) / (1 / 40) ** 0.2
    s2 = 1.0 / (2 / 40) ** 0.2
    assert s2 == pytest.approx(1.82056, abs=1e-5) and s1 == pytest.approx(1.81110, abs=1e-5)
    assert agg.rows == {1, 2} and agg.score == pytest.approx(s2)  # support wins at α = 0.2
    assert agg.frequency_voting == (True, True)
    assert [(sorted(g.ids), g.weight, g.count) for g in agg.row_groups] == [
        ([1], 3.0, 3),
        ([1, 2], 1.0, 1),
    ]


def test_larger_alpha_prefers_compact_smaller_alpha_prefers_support() -> None:
    rows = [c(1), c(1, 2), c(1, 2), c(1, 3)]
    # groups: {1,2} w=2, {1} w=1, {1,3} w=1 (tie with {1}: smaller set first)
    # unions: {1,2} (covers {1,2} and {1}: 3/4), {1,2} ∪ {1} = the same (dropped),
    # {1,2,3} (4/4)
    low = run(rows, [c(0)], alpha=0.0)
    assert low.rows == {1, 2, 3} and low.row_score == 1.0
    high = run(rows, [c(0)], alpha=1.0)
    # α=1: S({1,2}) = sqrt(.75)/(2/40) = 17.32; S({1,2,3}) = 1/(3/40) = 13.33
    assert high.rows == {1, 2}
    assert high.row_score == pytest.approx(0.75)
    assert high.score == pytest.approx(math.sqrt(0.75) / (2 / 40))


def test_logprobs_weight_groups() -> None:
    # {5} once with s = 0 (w = 1); {6} twice with s = -2 (w = 2·e^-2 ≈ 0.27): {5} ranks first
    groups, voting = rank_groups([c(6, s=-2.0), c(5, s=0.0), c(6, s=-2.0)])
    assert not voting
    assert [sorted(g.ids) for g in groups] == [[5], [6]]
    assert groups[1].weight == pytest.approx(2 * math.exp(-2.0))
    agg = run([c(6, s=-2.0), c(5, s=0.0), c(6, s=-2.0)], [c(0, s=-0.1)])
    # candidates {5} (1/(1+.27)) and {5,6} (1.0); α=0.2
    total = 1 + 2 * math.exp(-2.0)
    s_5 = math.sqrt(1 / total) / (1 / 40) ** 0.2
    s_56 = 1.0 / (2 / 40) ** 0.2
    assert agg.score == pytest.approx(max(s_5, s_56))
    assert agg.rows == ({5} if s_5 > s_56 else {5, 6})


def test_one_missing_logprob_turns_the_dimension_into_voting() -> None:
    groups, voting = rank_groups([c(1, s=-5.0), c(2, s=None), c(2, s=-5.0)])
    assert voting
    assert [(sorted(g.ids), g.weight) for g in groups] == [([2], 2.0), ([1], 1.0)]


def test_weight_ties_prefer_smaller_then_earlier_groups() -> None:
    groups, _ = rank_groups([c(1, 2), c(3), c(4)])
    assert [sorted(g.ids) for g in groups] == [[3], [4], [1, 2]]


def test_score_ties_prefer_the_smaller_subtable() -> None:
    # rows {1} and {2} each w=1: unions {1} (0.5) and {1,2} (1.0); with α = 0.5:
    # S({1}) = sqrt(.5)/sqrt(1/40) = sqrt(20); S({1,2}) = 1/sqrt(2/40) = sqrt(20): a tie
    agg = run([c(1), c(2)], [c(0)], alpha=0.5)
    assert agg.rows == {1}
    assert agg.score == pytest.approx(math.sqrt(20))


def test_all_samples_star_select_the_whole_table() -> None:
    agg = run([Candidate(ROWS10)] * 4, [Candidate(COLS4)] * 4)
    assert agg.rows == ROWS10 and agg.cols == COLS4
    assert agg.rho == 1.0 and agg.score == 1.0


def test_empty_outputs_never_become_an_empty_subtable() -> None:
    # f_row([]) is a group (∅ ⊆ every R′, so it always counts) but never a candidate
    agg = run([c(), c(), c(7)], [c(1)])
    assert agg.rows == {7}
    assert agg.row_score == 1.0
    only_empty = run([c(), c()], [c(1)])
    assert only_empty.rows == ROWS10  # no non-empty union: the dimension keeps all ids


def test_no_candidates_keep_all_ids() -> None:
    agg = run([], [c(2)])
    assert agg.rows == ROWS10 and agg.cols == {2}
    assert agg.row_score == 1.0 and agg.rho == pytest.approx(10 / 40)
