"""DTR planning: operation map and enumeration, Eq. 1–3 on hand-computed statistics, the updates,
feedback and reward, lessons, revision and the vote (no LLM, no sandbox)."""

from __future__ import annotations

import math
import random

import pytest

from tablequest.llm.parse import ParseError
from tablequest.methods.research.execute import OpRecord, PathOutcome
from tablequest.methods.research.feedback import (
    Feedback,
    Probe,
    guess_query_type,
    parse_probe,
    render_answer,
    reward,
    type_ok,
)
from tablequest.methods.research.operations import (
    Rule,
    TableTraits,
    enumerate_paths,
    parse_op,
    path_key,
    prior,
    violations,
)
from tablequest.methods.research.planner import (
    Candidate,
    PathStats,
    expectation,
    expectation_bound,
    propagate,
    rank,
    update,
)
from tablequest.methods.research.prompts import parse_mod, parse_step
from tablequest.methods.research.reflect import contrast, converged, lessons_from, revise, vote

FLAT = TableTraits()


# -- Eq. 1, 2, 3 ------------------------------------------------------------------------------
def test_eq1_on_hand_computed_statistics() -> None:
    stats = PathStats(r_hat=0.5, n=2)
    # 0.5 + 1.0 * 0.8 * sqrt(ln 10 / 3) = 0.5 + 0.8 * 0.8760870 = 1.2008696
    assert expectation(stats, 0.8, 10, 1.0) == pytest.approx(1.2008696, abs=1e-6)
    assert expectation(PathStats(0.25, 0), 0.5, 4, 2.0) == pytest.approx(
        0.25 + 2.0 * 0.5 * math.sqrt(math.log(4) / 1)
    )
    # Σ N = 1: the paper's formula itself gives 0 (log 1 = 0); Σ N = 0: log 0 is undefined,
    # the term is taken as 0 (no evidence yet)
    assert expectation(PathStats(0.3, 0), 1.0, 1, 1.0) == 0.3
    assert expectation(PathStats(0.3, 0), 1.0, 0, 1.0) == 0.3
    assert expectation(PathStats(0.3, 1), 1.0, 2, 1.0) == pytest.approx(
        0.3 + math.sqrt(math.log(2) / 2)
    )


def test_eq2_bound_and_eq3_limit() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = [rng.randint(0, 20) for _ in range(rng.randint(1, 6))]
        total, alpha = sum(n), rng.uniform(0, 3)
        bound = expectation_bound(total, alpha)
        for count in n:
            stats = PathStats(rng.uniform(0, 1), count)
            assert expectation(stats, rng.uniform(0, 1), total, alpha) <= bound + 1e-12
    assert expectation_bound(10, 1.0) == pytest.approx(1.0 + math.sqrt(math.log(10)))
    terms = [expectation(PathStats(0.0, n), 1.0, 1000, 1.0) for n in (0, 1, 10, 100, 10**6)]
    assert terms == sorted(terms, reverse=True) and terms[-1] < 0.003


def test_updates_incremental_mean_and_learning_rate() -> None:
    stats = PathStats()
    for r in (1.0, 0.0, 0.5, 0.9):
        update(stats, r)
    assert stats.n == 4 and stats.r_hat == pytest.approx((1.0 + 0.0 + 0.5 + 0.9) / 4)
    lr = PathStats(0.2, 3)
    update(lr, 1.0, rule="lr", eta=0.25)
    assert lr.r_hat == pytest.approx(0.75 * 0.2 + 0.25 * 1.0) and lr.n == 4


def test_related_paths_move_towards_the_reward() -> None:
    a = Candidate(("SELECT", "FILTER:raw", "AGG"), 1.0, PathStats(0.0, 1), executed=True)
    b = Candidate(("SELECT", "FILTER:raw", "SORT"), 1.0, PathStats(0.4, 0))
    c = Candidate(("CLEAN", "SELECT", "AGG"), 1.0, PathStats(0.4, 0))
    propagate([a, b, c], a, 1.0, eta=0.3)
    assert b.stats.r_hat == pytest.approx(0.4 + 0.3 * 2 / 3 * (1.0 - 0.4)) and b.stats.n == 0
    assert c.stats.r_hat == 0.4


def test_rank_uses_expectation_then_prior() -> None:
    a = Candidate(("SELECT",), 0.6, PathStats(0.9, 3))
    b = Candidate(("SELECT", "SORT"), 0.9, PathStats(0.0, 0))
    c = Candidate(("SELECT", "AGG"), 0.7, PathStats(0.0, 0))
    ranked = rank([a, b, c], alpha=1.0)
    # Σ N = 3: b gets 0.9*sqrt(ln 3), c 0.7*sqrt(ln 3), a 0.9 + 0.6*sqrt(ln3/4)
    assert [x.path for x, _ in ranked] == [a.path, b.path, c.path]
    cold = rank([Candidate(("A",), 0.2), Candidate(("B",), 0.8)], alpha=1.0)
    assert [x.path for x, _ in cold] == [("B",), ("A",)]


# -- the operation map and enumeration --------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (("AGG", "SELECT"), "AGG needs"),
        (("SELECT", "SORT", "AGG"), "SORT must be last"),
        (("SELECT", "AGG", "FILTER:raw"), "FILTER:raw after GROUP/AGG"),
        (("SELECT", "FILTER:agg", "AGG"), "FILTER:agg before AGG"),
        (("SELECT", "CLEAN"), "CLEAN must be first"),
        (("SELECT", "CHART", "SORT"), "CHART must be last"),
        (("SELECT", "GROUP", "SORT"), "GROUP that nothing uses"),
        (("SELECT", "SELECT"), "twice in a row"),
        (("JOIN", "AGG"), "JOIN needs"),
    ],
)
def test_operation_map_rejects(path: tuple[str, ...], problem: str) -> None:
    assert any(problem in v for v in violations(path)), violations(path)


@pytest.mark.parametrize(
    "path",
    [
        ("SELECT", "FILTER:raw", "AGG"),
        ("SELECT", "GROUP", "AGG", "FILTER:agg", "SORT"),
        ("CLEAN", "SELECT", "SORT", "CHART"),
        ("SELECT", "JOIN", "DERIVE", "COMPARE"),
    ],
)
def test_operation_map_admits(path: tuple[str, ...]) -> None:
    assert violations(path) == []


def test_enumeration_prunes_and_keeps_k_by_prior() -> None:
    paths = enumerate_paths(
        ["SELECT", "FILTER", "GROUP", "AGG", "SORT"], query_type="ranking", traits=FLAT, k=50,
        max_len=5,
    )  # fmt: skip
    keys = [path_key(p) for p, _ in paths]
    assert keys[0] == "SELECT>FILTER:raw>GROUP>AGG>SORT"  # the proposed order, FILTER on raw
    assert all(not violations(p) for p, _ in paths)
    assert all("SORT" in p for p, _ in paths)  # needed for ranking, never dropped
    assert "SELECT>GROUP>AGG>FILTER:agg>SORT" in keys
    assert not any(k.endswith("AGG>FILTER:raw>SORT") for k in keys)
    assert [s for _, s in paths] == sorted((s for _, s in paths), reverse=True)
    top2 = enumerate_paths(["SELECT", "FILTER", "GROUP", "AGG", "SORT"], query_type="ranking",
                           traits=FLAT, k=2, max_len=5)  # fmt: skip
    assert top2 == paths[:2]
    # optional operations give shorter variants; an unusable proposal is repaired
    clean = enumerate_paths(["CLEAN", "SELECT", "AGG"], query_type="aggregation", traits=FLAT, k=9)
    assert ("SELECT", "AGG") in [p for p, _ in clean]
    assert enumerate_paths(["AGG"], query_type="aggregation", traits=FLAT, k=3)[0][0] == (
        "SELECT",
        "AGG",
    )
    assert enumerate_paths(["GROUP"], query_type="lookup", traits=FLAT, k=3)[0][0] == ("SELECT",)


def test_prior_components() -> None:
    proposed = ("SELECT", "FILTER:raw", "AGG")
    same = prior(proposed, proposed=proposed, query_type="aggregation", traits=FLAT, min_len=3)
    assert same == pytest.approx(1.0)
    swapped = prior(("FILTER:raw", "SELECT", "AGG"), proposed=proposed, query_type="aggregation",
                    traits=FLAT, min_len=3)  # fmt: skip
    assert swapped == pytest.approx(0.5 * (1 - 1 / 3) + 0.3 + 0.2)
    longer = prior(proposed, proposed=proposed, query_type="aggregation", traits=FLAT, min_len=2)
    assert longer == pytest.approx(0.5 + 0.3 + 0.2 / 1.25)
    messy = TableTraits(has_aggregates=True)
    without = prior(("SELECT", "AGG"), proposed=proposed, query_type="aggregation", traits=messy)
    with_clean = prior(("CLEAN", "SELECT", "AGG"), proposed=proposed, query_type="aggregation",
                       traits=messy, min_len=2)  # fmt: skip
    assert with_clean > without
    rule = Rule("before", "FILTER", "AGG")
    good = prior(("SELECT", "FILTER:raw", "AGG"), proposed=("SELECT", "AGG", "FILTER:agg"),
                 query_type="aggregation", traits=FLAT, rules=[rule])  # fmt: skip
    bad = prior(("SELECT", "AGG", "FILTER:agg"), proposed=("SELECT", "AGG", "FILTER:agg"),
                query_type="aggregation", traits=FLAT, rules=[rule])  # fmt: skip
    assert 0.0 <= bad <= 1.0 and 0.0 <= good <= 1.0
    assert good - 0.5 * (1 - 1 / 3) > bad - 0.5  # the rule raises fit, order lowers it


def test_parse_op_and_rules() -> None:
    assert parse_op("groupby") == "GROUP" and parse_op("Filter (raw)") == "FILTER:raw"
    assert parse_op("filter:agg") == "FILTER:agg" and parse_op("PLOT") == "CHART"
    assert parse_op("teleport") is None
    rule = Rule.decode(Rule("needs", "CLEAN", "AGG").encode())
    assert rule == Rule("needs", "CLEAN", "AGG")
    assert rule.holds(("CLEAN", "SELECT", "AGG")) and not rule.holds(("SELECT", "AGG"))
    assert Rule("before", "FILTER", "AGG").holds(("SELECT", "AGG"))  # vacuous without FILTER
    assert Rule.decode("nonsense") is None


# -- feedback and reward ----------------------------------------------------------------------
def test_reward_phi() -> None:
    assert reward(Feedback(0, 0.1, 1)) == 0.0
    assert reward(Feedback(1, 0.0, 1)) == pytest.approx(1.0)
    assert reward(Feedback(1, 10.0, 0), w_type=0.8, time_scale=10.0) == pytest.approx(
        0.2 * math.exp(-1)
    )
    assert 0 < reward(Feedback(1, 5.0, 1)) < 1


@pytest.mark.parametrize(
    ("query_type", "probe", "figures", "ok"),
    [
        ("aggregation", Probe("number", 1, [4200.0]), 0, True),
        ("aggregation", Probe("text", 1, ["4200 dollars"]), 0, False),
        ("aggregation", Probe("series", 1, [3.0], ["a"]), 0, True),
        ("aggregation", Probe("series", 3, [1, 2, 3]), 0, False),
        ("ranking", Probe("series", 3, [3, 2, 1], ["a", "b", "c"], range_index=False), 0, True),
        ("ranking", Probe("number", 1, [3]), 0, False),
        ("comparison", Probe("bool", 1, [True]), 0, True),
        ("comparison", Probe("list", 2, [1, 2]), 0, True),
        ("comparison", Probe("number", 1, [2]), 0, False),
        ("fact_check", Probe("text", 1, ["Yes."]), 0, True),
        ("chart", None, 1, True),
        ("chart", Probe("number", 1, [1]), 0, False),
        ("lookup", Probe("series", 0), 0, False),
        ("lookup", Probe("text", 1, ["Boston"]), 0, True),
        ("analysis", Probe("text", 1, ["  "]), 0, False),
    ],
)
def test_f_type(query_type: str, probe: Probe | None, figures: int, ok: bool) -> None:
    assert type_ok(query_type, probe, figures) is ok


def test_render_answer_and_probe_parsing() -> None:
    ranking = Probe("series", 2, [9.0, 3.0], ["West", "East"], range_index=False)
    assert render_answer("ranking", ranking) == "West, East"
    assert render_answer("aggregation", Probe("number", 1, [4200.0])) == "4200"
    assert render_answer("aggregation", Probe("number", 1, [1 / 3])) == "0.333333"
    assert render_answer("fact_check", Probe("bool", 1, [False])) == "false"
    assert render_answer("lookup", Probe("frame", 2, [["a"], ["b"]])) == "a, b"
    assert render_answer("chart", None, figures=2) == "chart (2 figures)"
    probe, rest = parse_probe('hello\n__DTR_PROBE__{"kind": "number", "size": 1, "items": [2]}')
    assert probe is not None and probe.items == [2] and rest == "hello"
    assert guess_query_type("Draw a bar chart of sales") == "chart"
    assert guess_query_type("Which region had the highest total?") == "aggregation"
    assert guess_query_type("Anything", "fact_verification") == "fact_check"


# -- prompts' parsers -------------------------------------------------------------------------
def test_parse_step_variants() -> None:
    both = parse_step("[THINK] sum it\n[CODE]\n```python\nresult = df.a.sum()\n```")
    assert (both.think, both.code) == ("sum it", "result = df.a.sum()")
    bare = parse_step("[THINK] x\n[CODE]\nresult = 1")
    assert bare.code == "result = 1"
    fence_only = parse_step("I will sum.\n```python\nresult = 2\n```")
    assert fence_only.code == "result = 2" and fence_only.think == "I will sum."
    think_only = parse_step("<think>hidden</think>[THINK] nothing to run")
    assert think_only.code == "" and think_only.think == "nothing to run"
    with pytest.raises(ParseError):
        parse_step("no flags at all")


def test_parse_mod_drops_unknown_ops_and_invented_columns() -> None:
    text = (
        '{"query_type": "Ranking", "sub_queries": [{"text": "x", "operations": '
        '["select", "teleport", "sort"]}], "columns": ["Sales", "Invented"]}'
    )
    plan = parse_mod(text, columns=["Sales"], max_ops=4)
    assert plan.query_type == "ranking" and plan.operations == ["SELECT", "SORT"]
    assert plan.unknown_ops == ["teleport"] and plan.invented_columns == ["Invented"]
    with pytest.raises(ParseError):
        parse_mod('{"sub_queries": [{"operations": ["fly"]}]}', columns=[], max_ops=4)


# -- reflection and the vote ------------------------------------------------------------------
def outcome(path: tuple[str, ...], answer: str = "", valid: bool = False, kind: str | None = None
            ) -> PathOutcome:  # fmt: skip
    o = PathOutcome(path, ops=[OpRecord(op) for op in path], answer=answer, valid=valid)
    o.error_kind = kind
    return o


def test_lessons_and_contrast() -> None:
    [missing] = lessons_from(outcome(("FILTER:raw", "AGG"), kind="missing_column"), "aggregation")
    assert missing.rule == Rule("first", "SELECT") and "header paths" in missing.text
    [kept] = lessons_from(outcome(("SELECT", "AGG"), kind="missing_column"), "aggregation")
    assert kept.rule is None and kept.text == missing.text  # the path already selected first
    [shape] = lessons_from(outcome(("SELECT",), kind="wrong_type"), "ranking")
    assert "ordered list" in shape.text
    good = outcome(("SELECT", "FILTER:raw", "AGG"), "1", True)
    bad = outcome(("SELECT", "AGG", "FILTER:agg"), kind="wrong_type")
    [lesson] = contrast(good, bad)
    assert lesson.rule == Rule("before", "FILTER", "AGG") and "FILTER before AGG" in lesson.text


def test_revise_makes_paths_that_satisfy_new_rules() -> None:
    paths = [("SELECT", "AGG", "FILTER:agg"), ("SELECT", "AGG")]
    added = revise(paths, [Rule("before", "FILTER", "AGG"), Rule("needs", "CLEAN", "AGG")], 4)
    assert ("SELECT", "FILTER:raw", "AGG") in added
    assert ("CLEAN", "SELECT", "AGG") in added
    assert all(not violations(p) and p not in paths for p in added)


def test_vote_counts_only_format_valid_answers() -> None:
    outcomes = [
        outcome(("A",), "7", False),
        outcome(("B",), "7", False),
        outcome(("C",), "4,200", True),
        outcome(("D",), "4200.0", True),
        outcome(("E",), "12", True),
    ]
    answer, votes = vote(outcomes, ordered=False)
    assert answer == "4,200" and votes == {"4200": 2, "12": 1}
    assert vote([outcome(("A",), "x", False)], ordered=False) == (None, {})
    # ties: the first executed wins; rankings keep their order
    assert vote([outcome(("A",), "a, b", True), outcome(("B",), "b, a", True)], ordered=True)[
        0
    ] == ("a, b")
    assert converged(outcomes[2:4], 2, ordered=False)
    assert not converged([outcomes[2], outcomes[4]], 2, ordered=False)
    assert converged(outcomes[2:], 2, ordered=False)
