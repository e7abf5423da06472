"""TabScope branch by branch with a scripted model: Table 9, stages, budget, variants."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scope_helpers import LEAGUE, MEDALS, Bot, ask, fallback_stages, llm_events

from tablequest.errors import BadValue
from tablequest.llm import Scripted
from tablequest.llm.base import LLM, Completion, Message
from tablequest.llm.usage import StepBudget
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.options import OptionError
from tablequest.methods.registry import get_method
from tablequest.methods.scope import POLICY, ScopeOptions, TabScope
from tablequest.table import Table

# -- Table 9, both size regimes ------------------------------------------------------------------
EXPECTED = {  # type → (default, large): TabScope (arXiv:2609.03395) Table 9
    "lookup": ("local", "local"),
    "order_superlative": ("local", "local"),
    "local_reasoning": ("local", "local"),
    "count_diff": ("local", "local"),
    "count_general": ("full", "full"),
    "count_frequency": ("full", "local"),
    "compare": ("full", "full"),
}


def test_policy_table_is_table_9() -> None:
    assert EXPECTED == POLICY


@pytest.mark.parametrize("large", [False, True], ids=["default", "large"])
@pytest.mark.parametrize("qtype", list(EXPECTED))
def test_each_type_through_table_9(qtype: str, large: bool) -> None:
    bot = Bot(classify=json.dumps({"question_type": qtype}))
    result, trace, _ = ask(bot, large_tokens=1 if large else 100_000)
    scope = EXPECTED[qtype][int(large)]
    assert result.status == "answered" and result.answer == "2004"
    assert result.details["breakdown"] == {
        "question_type": qtype,
        "scope": scope,
        "regime": "large" if large else "default",
    }
    expected_stages = (
        ["classify", "rows", "cols", "refine", "answer"]
        if scope == "local"
        else ["classify", "answer"]
    )
    assert sorted(bot.seen) == sorted(expected_stages)
    assert len(llm_events(trace)) == result.steps == len(expected_stages)
    sub = result.details["subtable"]
    if scope == "local":
        assert sub["rows"] == [0, 1] and sub["columns"] == ["Year", "League"]
    else:
        assert sub["rows"] == [0, 1, 2] and sub["col_ids"] == [0, 1, 2]


def test_localized_answer_sees_only_the_subtable_with_original_ids() -> None:
    bot = Bot(rows="f_row([row_1, row_2])", cols="f_col([Year])")
    result, _trace, llm = ask(bot, refine=False)
    assert isinstance(llm, Scripted)
    qa_prompt = llm.calls[-1].prompt
    assert "[ROW 1] 2004" in qa_prompt and "[ROW 2] 2005" in qa_prompt
    assert "[ROW 0]" not in qa_prompt and "League" not in qa_prompt.split("Question:")[0]
    assert [(e.row, e.col, e.value) for e in result.evidence] == [(1, 0, "2004")]
    assert result.tables_consulted == ["t1"] and result.final_table == "t1"
    assert result.details["evidence_source"] == "answer_cells"


def test_sub_table_row_ids_shown_are_the_originals() -> None:
    part = LEAGUE.sub_table(rows=[1, 2])
    bot = Bot(rows="f_row([row_0, row_2])")  # row 0 is not in this table
    result, _, llm = ask(bot, table=part, refine=False)
    assert isinstance(llm, Scripted)
    assert "[ROW 1] 2004" in llm.calls[1].prompt
    assert result.details["subtable"]["rows"] == [2]
    assert result.details["retrieval"]["rows"]["dropped"] == ["0"]


def test_multi_level_headers_keep_their_paths() -> None:
    bot = Bot(rows="f_row([row_0])", cols="f_col([Nation, Gold])")
    result, _, llm = ask(bot, table=MEDALS, refine=False)
    assert isinstance(llm, Scripted)
    assert "[HEADER] Nation | Medals / Gold | Medals / Silver" in llm.calls[1].prompt
    assert result.details["subtable"]["columns"] == ["Nation", "Medals / Gold"]
    assert "Medals / Gold" in llm.calls[-1].prompt


# -- aggregation inputs: sampling, logprobs ------------------------------------------------------
def test_k_samples_in_one_request_at_temperature_half_with_logprobs() -> None:
    _result, _trace, llm = ask(Bot())
    assert isinstance(llm, Scripted)
    retrieval = [c for c in llm.calls if "f_row()" in c.prompt or "f_col()" in c.prompt]
    assert len(retrieval) == 2
    for call in retrieval:
        assert call.params["n"] == 4 and call.params["temperature"] == 0.5
        assert call.params["logprobs"] is True
    others = [c for c in llm.calls if c not in retrieval]
    assert all(c.params["temperature"] == 0.0 and c.params["n"] == 1 for c in others)
    assert llm.calls[-1].params["max_tokens"] == 2048


def test_logprobs_weight_the_vote() -> None:
    confident = Completion("f_row([row_2])", token_logprobs=[-0.01, -0.01])
    unsure = Completion("f_row([row_0])", token_logprobs=[-3.0, -3.0])
    bot = Bot(rows=[unsure, unsure, confident, confident])
    result, _, _ = ask(bot, refine=False, alpha=0.3)
    agg = result.details["retrieval"]["aggregation"]
    assert agg["frequency_voting"]["rows"] is False
    assert agg["row_groups"][0]["ids"] == [2]
    assert result.details["retrieval"]["rows"]["logprobs"] == "present"
    assert result.details["retrieval"]["rows"]["scores"][0] == pytest.approx(-3.0)


def test_logprobs_absent_means_frequency_voting() -> None:
    plain = [
        Completion("f_row([row_0])"),
        Completion("f_row([row_0])"),
        Completion("f_row([row_2])"),
        Completion("f_row([row_0])"),
    ]
    result, _, _ = ask(Bot(rows=plain), refine=False)
    rows = result.details["retrieval"]["rows"]
    assert rows["logprobs"] == "absent" and rows["scores"] == [None] * 4
    agg = result.details["retrieval"]["aggregation"]
    assert agg["frequency_voting"]["rows"] is True
    assert [(g["ids"], g["weight"]) for g in agg["row_groups"]] == [([0], 3.0), ([2], 1.0)]


def test_all_samples_star_keep_every_row() -> None:
    result, _, _ = ask(Bot(rows="f_row([*])"), refine=False)
    assert result.details["subtable"]["rows"] == [0, 1, 2]


def test_aggregate_false_takes_one_greedy_sample() -> None:
    result, _, llm = ask(Bot(), aggregate=False)
    assert isinstance(llm, Scripted)
    retrieval = [c for c in llm.calls if "f_row()" in c.prompt]
    assert retrieval[0].params["n"] == 1 and retrieval[0].params["temperature"] == 0.0
    assert result.details["retrieval"]["rows"]["requested"] == 1


def test_separate_sampling_issues_k_single_requests() -> None:
    result, trace, llm = ask(Bot(), sampling="separate", k=3)
    assert isinstance(llm, Scripted)
    rows = [c for c in llm.calls if "f_row()" in c.prompt]
    assert len(rows) == 3 and all(c.params["n"] == 1 for c in rows)
    assert result.steps == 1 + 3 + 3 + 1 + 1 == len(llm_events(trace))


class IgnoresN(LLM):
    """A backend that returns one completion whatever n (as some servers do)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.ns: list[int] = []

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def chat(self, messages: Any, **params: Any) -> list[Completion]:
        self.ns.append(params.get("n", 1))
        return self.inner.chat(messages, **{**params, "n": 1})


def test_fewer_samples_than_n_are_filled_by_single_calls() -> None:
    llm = IgnoresN(Scripted(Bot()))
    result, trace, _ = ask(llm, budget=StepBudget(20), refine=False)
    assert result.details["retrieval"]["rows"]["received"] == 4
    assert llm.ns.count(4) == 2 and llm.ns.count(1) == 1 + 3 + 3 + 1
    stages = [
        e for e in trace.events if e.get("problem") == "backend returned fewer samples than n"
    ]
    assert len(stages) == 2


def test_fill_calls_stop_at_the_budget() -> None:
    llm = IgnoresN(Scripted(Bot()))
    result, _trace, _ = ask(llm, steps=6, refine=False)
    assert result.status == "answered" and result.steps <= 6
    got = result.details["retrieval"]
    assert got["rows"]["received"] + got["cols"]["received"] == 1 + 1 + 2
    assert "rows" in fallback_stages(result) or "cols" in fallback_stages(result)


# -- refinement ----------------------------------------------------------------------------------
def test_refinement_keep() -> None:
    result, _, _ = ask(Bot())
    assert result.details["refinement"]["action"] == "keep"
    assert result.details["subtable"]["rows"] == [0, 1]


def test_refinement_expand_adds_only_existing_ids() -> None:
    refine = json.dumps(
        {
            "action": "expand",
            "final_rows": ["row_2", 7, "x"],
            "final_columns": ["Division", "Coach"],
            "reason": "need 2005",
        }
    )
    result, trace, _ = ask(Bot(refine=refine))
    assert result.details["subtable"]["rows"] == [0, 1, 2]
    assert result.details["subtable"]["columns"] == ["Year", "Division", "League"]
    report = result.details["refinement"]
    assert report["added_rows"] == [2] and report["added_cols"] == [1]
    assert sorted(report["dropped"]) == sorted(["x", "7", "Coach"])
    assert any(
        e.get("problem") == "invented ids dropped"
        for e in trace.events
        if e.get("stage") == "refine"
    )


def test_refine_false_skips_the_call() -> None:
    bot = Bot()
    result, _, _ = ask(bot, refine=False)
    assert "refine" not in bot.seen and result.steps == 4


# -- variants ------------------------------------------------------------------------------------
def test_forced_full_still_classifies_for_the_breakdown() -> None:
    bot = Bot()
    result, _, _ = ask(bot, scope="full")
    assert bot.seen == ["classify", "answer"]
    assert result.details["breakdown"]["question_type"] == "lookup"
    assert result.details["scope"]["why"] == "forced by option scope=full"


@pytest.mark.parametrize(
    ("config", "stages"),
    [
        ("decomposition-only", ["rows", "cols", "refine", "answer"]),
        ("full-cot", ["answer"]),
        ("no-scope", ["rows", "cols", "refine", "answer"]),
        ("no-refine", ["classify", "answer"]),  # compare → full: nothing to refine
        ("no-refine,scope=local", ["classify", "rows", "cols", "answer"]),
    ],
)
def test_named_baselines(config: str, stages: list[str]) -> None:
    # "compare" takes the full table under the policy; the baselines ignore the policy
    bot = Bot(classify=json.dumps({"question_type": "compare"}))
    opts = ScopeOptions.from_config(config)
    result, _, _ = ask(bot, **{**opts.model_dump(exclude_unset=True)})
    assert sorted(bot.seen) == sorted(stages)
    assert result.status == "answered"


def test_op_aware_false_uses_the_plain_relevance_prompt() -> None:
    _, _, llm = ask(Bot(), op_aware=False)
    assert isinstance(llm, Scripted)
    prompts = [c.prompt for c in llm.calls]
    assert any("Select the rows relevant to the question" in p for p in prompts)
    assert not any("identify the table operation" in p for p in prompts)


def test_op_aware_prompt_is_the_papers() -> None:
    _, _, llm = ask(Bot())
    assert isinstance(llm, Scripted)
    row = next(c.prompt for c in llm.calls if "f_row()" in c.prompt)
    assert "First identify the table operation required by the question" in row
    assert "Optional caption:\nRochester Rhinos seasons" in row
    assert "[TITLE]" not in row


# -- budget --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("steps", "stages", "fallback"),
    [
        (1, ["answer"], "classify"),
        (2, ["classify", "answer"], "retrieve"),
        (3, ["classify", "answer"], "retrieve"),
        (4, ["classify", "rows", "cols", "answer"], "refine"),
        (5, ["classify", "rows", "cols", "refine", "answer"], None),
    ],
)
def test_steps_cap_every_call_and_keep_one_for_the_answer(
    steps: int, stages: list[str], fallback: str | None
) -> None:
    bot = Bot()
    result, trace, _ = ask(bot, steps=steps)
    assert result.status == "answered" and result.answer == "2004"
    assert sorted(bot.seen) == sorted(stages)
    assert result.steps == len(llm_events(trace)) == len(stages) <= steps
    if fallback:
        assert fallback in fallback_stages(result)


def test_separate_sampling_lowers_k_to_fit_the_budget() -> None:
    result, _, _ = ask(Bot(), steps=6, sampling="separate")
    assert result.details["retrieval"]["rows"]["requested"] == 2
    assert "K lowered from 4 to 2" in str(result.details["fallbacks"])
    assert result.steps == 6


def test_default_steps() -> None:
    assert ScopeOptions().default_steps() == 5 + 2
    assert ScopeOptions(sampling="separate").default_steps() == 1 + 8 + 1 + 1 + 2
    assert ScopeOptions.from_config("full-cot").default_steps() == 1 + 2
    assert ScopeOptions(scope="full").default_steps() == 2 + 2
    result, _, _ = ask(Bot())
    assert result.steps == 5


# -- sizes and context ---------------------------------------------------------------------------
BIG = Table.from_rows(
    [["Id", "Name", "Score"]]
    + [[str(i), f"player number {i}", str(i * 7 % 100)] for i in range(400)]
)


def test_table_too_large_for_the_context_is_never_sent() -> None:
    bot = Bot()
    result, _trace, _llm = ask(bot, table=BIG, context_tokens=1000)
    assert result.status == "failed" and result.answer is None
    assert "too large" in (result.reason or "")
    assert bot.seen == ["classify"]  # the preview fits; retrieval and answer prompts do not
    assert "retrieve" in fallback_stages(result) and "answer" in fallback_stages(result)
    assert result.details["regime"] == "large"


def test_answer_max_tokens_lowered_to_fit() -> None:
    result, _, llm = ask(Bot(), scope="full", classify=False, context_tokens=600)
    assert isinstance(llm, Scripted)
    assert result.status == "answered"
    lowered = result.details["answer"]["max_tokens_lowered_to"]
    assert 64 <= lowered < 2048 and llm.calls[-1].params["max_tokens"] == lowered


def test_without_a_model_preview_reports_size_and_policy() -> None:
    method = TabScope(ScopeOptions(tokenizer="local"), MethodContext(llm=None))
    result = method.answer("q?", TableSet([("t1", LEAGUE)]))
    assert result.status == "failed" and result.reason == "no LLM configured"
    assert result.details["regime"] == "default" and result.details["tokens"] > 0
    assert result.details["tokenizer"] in ("minilm-wordpiece", "chars/4")
    assert {row["question_type"] for row in result.details["policy"]} == set(POLICY)
    assert result.steps == 0


def test_source_must_hold_one_table() -> None:
    method = TabScope(ScopeOptions(), MethodContext(llm=Scripted(Bot())))
    with pytest.raises(BadValue, match="--table-id"):
        method.answer("q?", TableSet([("a", LEAGUE), ("b", MEDALS)]))


# -- registry and options ------------------------------------------------------------------------
def test_registered_with_options_and_configs() -> None:
    spec = get_method("scope")
    assert spec.input == "table" and "arXiv:2609.03395" in (spec.paper or "")
    opts = spec.make_options({"k": "8", "alpha": "0.3", "refine": "false"})
    assert isinstance(opts, ScopeOptions) and opts.k == 8 and not opts.refine
    method = spec.build(opts, MethodContext(llm=Scripted(Bot())))
    assert isinstance(method, TabScope) and method.name == "scope"
    assert ScopeOptions.from_config("no-refine,k=8").label() == "k=8,refine=False"
    with pytest.raises(OptionError, match="presets"):
        ScopeOptions.from_config("bogus")
    with pytest.raises(OptionError):
        spec.make_options({"alpha": "7"})


def test_messages_are_plain_chat() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message], params: dict[str, Any]) -> Any:
        seen.append(messages)
        return Bot()(messages, params)

    ask(Scripted(reply))
    assert all(m[0]["role"] == "user" for m in seen)


def test_concurrent_questions_under_the_eval_runner_gate() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tablequest.eval.runner import Gate, GatedLLM

    gate = Gate()
    method = TabScope(
        ScopeOptions(tokenizer="local"), MethodContext(llm=GatedLLM(Scripted(Bot()), gate))
    )

    def work(i: int) -> str | None:
        with gate.held():
            return method.answer(f"q{i}?", TableSet([("t1", LEAGUE)])).answer

    with ThreadPoolExecutor(3) as pool:
        answers = [f.result(timeout=60) for f in [pool.submit(work, i) for i in range(3)]]
    assert answers == ["2004"] * 3
