"""TableSeek Algorithm 1, branch by branch, with a scripted LLM (Tian et al., 2026)."""

from __future__ import annotations

import json
import re

import pytest

from tablequest.corpus import Store
from tablequest.llm import Scripted
from tablequest.llm.base import LLMTimeout
from tablequest.methods.base import MethodContext
from tablequest.methods.options import OptionError
from tablequest.methods.seek import SeekConfig, TableSeek
from tablequest.table import Source, Table
from tablequest.trace import Trace

LEAGUE = Table.from_rows(
    [
        ["Year", "Division", "League"],
        ["2001", "2", "USL A-League"],
        ["2004", "2", "USL A-League"],
        ["2005", "2", "USL First Division"],
    ],
    source=Source(format="csv"),
)
CITIES = Table.from_rows(
    [["City", "July rainfall (mm)"], ["Zurich", "110"], ["Oslo", "81"]],
    source=Source(format="markdown"),
)
MEDALS = Table.from_rows(
    [["Nation", "Gold", "Silver"], ["Norway", "16", "8"], ["Germany", "12", "10"]],
    source=Source(format="html"),
)
SOCCER = Table.from_rows(
    [["Club", "League", "Founded"], ["Rochester Rhinos", "USL A-League", "1996"]],
    source=Source(format="csv"),
)


@pytest.fixture()
def store() -> Store:
    st = Store()
    for key, table in [
        ("league.csv", LEAGUE),
        ("cities.md", CITIES),
        ("medals.html", MEDALS),
        ("clubs.csv", SOCCER),
    ]:
        st.add_table(table, key=f"/secret/dir/{key}")
    return st


def j(**data: object) -> str:
    return json.dumps(data)


def ids_in(prompt: str) -> list[str]:
    return re.findall(r"\[(Table_\d+)\]", prompt)


def answer(status: str = "answered", value: str = "2004") -> str:
    return j(status=status, answer=value, evidence=[])


def run(
    store: Store,
    replies: list[object],
    config: SeekConfig | None = None,
    question: str = "What was the last year the team was in the USL A-League?",
    task: str = "tableqa",
) -> tuple[Scripted, object, Trace]:
    llm = Scripted(replies)  # type: ignore[arg-type]
    trace = Trace.in_memory()
    seek = TableSeek(config, MethodContext(llm=llm))
    result = seek.answer(question, store, task=task, trace=trace)  # type: ignore[arg-type]
    return llm, result, trace


def llm_calls(trace: Trace) -> int:
    return sum(1 for e in trace.events if e["kind"] == "llm_call")


def test_select_on_first_round(store: Store) -> None:
    def reply(messages: list[dict[str, str]], params: dict[str, object]) -> str:
        prompt = messages[-1]["content"]
        if "grep patterns" in prompt and "Candidate tables" not in prompt:
            return j(patterns=["USL A-League", "year"])
        if "Candidate tables" in prompt:
            # pick whichever anonymous id shows the league table
            for block in prompt.split("[Table_")[1:]:
                if "First Division" in block:
                    return j(action="select", selected_tables=["Table_" + block.split("]")[0]])
        return answer()

    llm, result, trace = run(store, reply)  # type: ignore[arg-type]
    assert result.status == "answered" and result.answer == "2004"
    assert result.steps == 3
    assert result.details["action_counts"] == {
        "pattern_gen": 1,
        "refine": 1,
        "refine_select": 1,
        "qa": 1,
    }
    assert result.tables_consulted == [store.ids_for_path("/secret/dir/league.csv")[0]]
    assert result.final_table == result.tables_consulted[0]
    assert llm_calls(trace) == len(llm.calls) == 3
    # the reply cites no cell: no evidence, never a search of the table it read for "2004"
    assert result.evidence == [] and result.verified == "unverified"


def test_regenerate_then_select(store: Store) -> None:
    replies = [
        j(patterns=["zzz-no-match", "USL"]),
        j(action="regenerate", patterns=["rainfall", "July"]),
        j(action="select", selected_tables=["Table_0"]),
        answer(value="Zurich"),
    ]
    _, result, _ = run(store, replies)
    assert result.answer == "Zurich"
    assert result.details["action_counts"]["refine_regenerate"] == 1
    assert result.details["patterns"] == [["zzz-no-match", "USL"], ["rainfall", "July"]]
    cities = store.ids_for_path("/secret/dir/cities.md")[0]
    assert result.tables_consulted == [cities]
    assert result.details["rounds_top1"][-1] == cities
    assert len(result.details["rounds_top1"]) == 2


def test_refine_none_uses_fallback_top_k(store: Store) -> None:
    replies = [j(patterns=["Gold", "Norway"]), j(action="none"), answer(value="Norway")]
    _, result, _ = run(store, replies)
    assert result.tables_consulted == [store.ids_for_path("/secret/dir/medals.html")[0]]
    assert result.details["action_counts"]["refine_none"] == 1


def test_budget_exhausted_during_refinement_runs_qa_on_top1(store: Store) -> None:
    replies = [j(patterns=["USL"])] + [j(action="regenerate", patterns=["USL", "League"])] * 3
    replies.append(answer())
    llm, result, trace = run(store, replies, SeekConfig(max_steps=5))
    assert len(llm.calls) == 5 and result.steps == 5
    assert result.details["action_counts"]["refine_regenerate"] == 3
    top1 = result.details["rounds_top1"][-1]
    assert result.tables_consulted == [top1]
    assert llm_calls(trace) == 5


def test_fallback_order_and_stop(store: Store) -> None:
    replies = [
        j(patterns=["USL A-League", "League", r"\d"]),
        j(action="none"),
        answer("insufficient", ""),
        answer("mismatch", ""),
        answer(value="2004"),
    ]
    llm, result, trace = run(store, replies, SeekConfig(max_steps=5))
    assert result.status == "answered" and len(llm.calls) == 5
    ranked = [h["table_id"] for h in next(e for e in trace.events if e["kind"] == "rank")["hits"]]
    assert result.tables_consulted == ranked[:3]
    assert sum(1 for e in trace.events if e["kind"] == "fallback") == 2


def test_fallback_stops_when_budget_is_spent(store: Store) -> None:
    replies = [j(patterns=["USL A-League", "League", r"\d"]), j(action="none")] + [
        answer("insufficient", "")
    ] * 3
    llm, result, _ = run(store, replies, SeekConfig(max_steps=5))
    assert result.status == "insufficient" and result.answer is None
    assert len(llm.calls) == 5


@pytest.mark.parametrize("steps", [5, 10])
def test_budget_never_exceeded_with_garbage(store: Store, steps: int) -> None:
    llm = Scripted(lambda m, p: "I think the answer is somewhere {not json")
    trace = Trace.in_memory()
    result = TableSeek(SeekConfig(max_steps=steps), MethodContext(llm=llm)).answer(
        "usl league year", store, trace=trace
    )
    assert len(llm.calls) <= steps
    assert llm_calls(trace) == len(llm.calls)
    # whatever the status, it is an honest one: an answer only when answered, a reason
    # whenever it failed
    assert (result.answer is not None) == (result.status == "answered"), result
    assert result.status != "failed" or result.reason, result


def test_unparsable_patterns_repair_then_content_words(store: Store) -> None:
    replies = ["no idea", "still no json", j(action="none"), answer()]
    _, result, trace = run(store, replies)
    assert result.details["action_counts"]["repair"] == 1
    assert result.details["patterns"][0] == [r"\byear\b", r"\bteam\b", r"\busl\b", r"\ba\-league\b"]
    assert any(e["kind"] == "fallback" and e["stage"] == "pattern_gen" for e in trace.events)


def test_repair_succeeds(store: Store) -> None:
    replies = ["patterns: USL", j(patterns=["USL"]), j(action="none"), answer()]
    _, result, _ = run(store, replies)
    assert result.details["patterns"][0] == ["USL"]


def test_hallucinated_ids_are_ignored_and_recorded(store: Store) -> None:
    replies = [
        j(patterns=["USL"]),
        j(action="select", selected_tables=["Table_99", "t_abc"]),
        answer(),
    ]
    _, result, trace = run(store, replies)
    assert result.details["action_counts"]["refine_none"] == 1
    err = [e for e in trace.events if e["kind"] == "error" and e.get("ids")]
    assert err and err[0]["ids"] == ["Table_99", "t_abc"]


def test_unparsable_refine_falls_back_to_none(store: Store) -> None:
    replies = [j(patterns=["USL"]), "hmm", "hmm again", answer()]
    _, result, _ = run(store, replies)
    assert result.status == "answered"
    assert result.details["action_counts"]["refine_none"] == 1


def test_unparsable_qa_short_text_is_the_answer(store: Store) -> None:
    replies = [j(patterns=["USL"]), j(action="none"), "2004"]
    _, result, _ = run(store, replies)
    assert result.answer == "2004" and result.status == "answered"


def test_llm_errors_never_crash(store: Store) -> None:
    """Every call times out: each stage takes its recorded fallback (content-word patterns,
    refine-none, QA on the next ranked table) and the question fails with the error."""
    llm = Scripted([LLMTimeout("slow")] * 12)
    trace = Trace.in_memory()
    result = TableSeek(context=MethodContext(llm=llm)).answer("usl league", store, trace=trace)
    assert (result.status, result.answer, result.reason) == ("failed", None, "LLMTimeout: slow")
    assert result.steps == len(llm.calls) == 4  # patterns, refine, QA, the fallback's QA
    calls = [e for e in trace.events if e["kind"] == "llm_call"]
    assert [e["error"] for e in calls] == ["LLMTimeout"] * 4
    fallbacks = [(e["stage"], e["reason"]) for e in trace.events if e["kind"] == "fallback"]
    assert fallbacks == [
        ("pattern_gen", "LLMTimeout: slow"),
        ("pattern_gen", "no usable patterns"),
        ("refine", "LLMTimeout: slow"),
        ("refine", "no usable decision → none"),
        ("qa", "LLMTimeout: slow"),
        ("qa", "QA said failed"),
        ("qa", "LLMTimeout: slow"),
    ]
    patterns = next(e for e in trace.events if e.get("reason") == "no usable patterns")
    assert patterns["patterns"] == [r"\busl\b", r"\bleague\b"]  # the question's content words
    rank = next(e for e in trace.events if e["kind"] == "rank")
    usl = [hit["table_id"] for hit in rank["hits"]]
    assert len(usl) == 2 and all("USL" in store.text(t) for t in usl)  # league and clubs
    assert result.tables_consulted == usl  # QA on the top table, then the fallback's next
    nxt = next(e for e in trace.events if e.get("reason") == "QA said failed")
    assert nxt["next_table"] == usl[1]
    assert result.details["action_counts"] == {"pattern_gen": 1, "refine": 1, "qa": 2,
                                               "refine_none": 1}  # fmt: skip


def test_no_refine_ablation(store: Store) -> None:
    replies = [j(patterns=["Gold"]), answer(value="Norway")]
    llm, result, _ = run(store, replies, SeekConfig(refine=False))
    assert len(llm.calls) == 2 and result.answer == "Norway"


def test_no_fallback_ablation(store: Store) -> None:
    replies = [j(patterns=["USL"]), j(action="none"), answer("insufficient", "")]
    llm, result, _ = run(store, replies, SeekConfig(fallback=False))
    assert len(llm.calls) == 3 and result.status == "insufficient"


def test_no_select_offers_only_regenerate(store: Store) -> None:
    replies = [j(patterns=["USL"]), j(action="select", selected_tables=["Table_0"]), answer()]
    llm, result, _ = run(store, replies, SeekConfig(select=False))
    refine_prompt = llm.calls[1].prompt
    assert '"action": "select"' not in refine_prompt and "regenerate" in refine_prompt
    assert result.details["action_counts"]["refine_none"] == 1


def test_no_regenerate_offers_only_select(store: Store) -> None:
    replies = [j(patterns=["USL"]), j(action="regenerate", patterns=["x"]), answer()]
    llm, result, _ = run(store, replies, SeekConfig(regenerate=False))
    assert '"action": "regenerate"' not in llm.calls[1].prompt
    assert "refine_regenerate" not in result.details["action_counts"]


def test_match_only_previews_have_no_table_head(store: Store) -> None:
    replies = [j(patterns=["2004"]), j(action="none"), answer()]
    llm, _, _ = run(store, replies, SeekConfig(match_only=True))
    refine_prompt = llm.calls[1].prompt
    assert "2004" in refine_prompt
    assert "Division" not in refine_prompt.split("Candidate tables")[1]


def test_match_only_qa(store: Store) -> None:
    replies = [j(patterns=["2004"]), j(action="none"), answer()]
    llm, _, _ = run(store, replies, SeekConfig(match_only_qa=True))
    qa_prompt = llm.calls[2].prompt
    assert "2004" in qa_prompt and "2001" not in qa_prompt


def test_rerank_strategy_reorders_and_forwards_top(store: Store) -> None:
    replies = [j(patterns=["USL A-League", "League"])]

    def reply(messages: list[dict[str, str]], params: dict[str, object]) -> str:
        prompt = messages[-1]["content"]
        if replies:
            return str(replies.pop())
        if "rerank" in prompt:
            ids = ids_in(prompt)
            return j(action="rerank", ranking=list(reversed(ids)))
        return answer()

    llm = Scripted(reply)
    trace = Trace.in_memory()
    result = TableSeek(SeekConfig.named("10step-r5-medium"), MethodContext(llm=llm)).answer(
        "usl league", store, trace=trace
    )
    ranked = [h["table_id"] for h in next(e for e in trace.events if e["kind"] == "rank")["hits"]]
    assert result.tables_consulted == [ranked[:5][-1]]
    assert result.details["action_counts"]["refine_rerank"] == 1


def test_fact_verification_answers_true_false(store: Store) -> None:
    replies = [
        j(patterns=["Norway", "Gold"]),
        j(action="none"),
        j(status="answered", answer="Supported", evidence=[]),
    ]
    _, result, _ = run(
        store, replies, question="Norway won 16 gold medals", task="fact_verification"
    )
    assert result.answer == "true"


def test_fact_check_with_mismatch_everywhere_is_false(store: Store) -> None:
    """Every QA call says "mismatch": unverifiable counts as false (the paper's Table 23)."""
    replies = [j(patterns=["Norway", "Gold", r"\d"]), j(action="none")]
    replies += [answer("mismatch", "")] * 3
    llm, result, trace = run(
        store, replies, SeekConfig(max_steps=5), question="Norway won 99 gold medals",
        task="fact_verification",
    )  # fmt: skip
    assert len(llm.calls) == 5 and len(result.tables_consulted) == 3  # QA, then 2 fallbacks
    assert (result.status, result.answer, result.evidence) == ("answered", "false", [])
    last = [e for e in trace.events if e["kind"] == "fallback"][-1]
    assert last["verdict"] == "false" and last["reason"] == "QA said mismatch on every table"
    # a question (not a fact check) keeps "insufficient": no answer is made up
    replies = [j(patterns=["Norway", "Gold", r"\d"]), j(action="none")]
    replies += [answer("mismatch", "")] * 3
    _, plain, _ = run(store, replies, SeekConfig(max_steps=5), question="Gold of Norway?")
    assert (plain.status, plain.answer) == ("insufficient", None)


def test_no_prompt_reveals_paths_or_formats(store: Store) -> None:
    def reply(messages: list[dict[str, str]], params: dict[str, object]) -> str:
        prompt = messages[-1]["content"]
        if "Candidate tables" in prompt:
            return j(action="regenerate", patterns=["Gold", "City"])
        if "grep patterns" in prompt:
            return j(patterns=["USL", "League", "Gold"])
        return answer("insufficient", "")

    llm = Scripted(reply)
    TableSeek(SeekConfig(max_steps=10), MethodContext(llm=llm)).answer("usl league gold", store)
    text = "\n".join(m["content"] for c in llm.calls for m in c.messages)
    for leak in ("/secret", "secret", "league.csv", ".csv", ".md", ".html", "cities"):
        assert leak not in text
    for tid in store.table_ids():
        assert tid not in text


def test_empty_ranking_still_refines_then_insufficient_without_qa() -> None:
    llm = Scripted([j(patterns=["x"]), j(action="regenerate", patterns=["y"]), j(action="none")])
    result = TableSeek(context=MethodContext(llm=llm)).answer("anything", Store())
    assert result.status == "insufficient" and len(llm.calls) == 3
    assert "(no table matches the current patterns)" in llm.calls[1].messages[-1]["content"]
    assert result.details["action_counts"] == {
        "pattern_gen": 1,
        "refine": 2,
        "refine_regenerate": 1,
        "refine_none": 1,
    }


def test_empty_ranking_regenerates_until_a_table_matches(store: Store) -> None:
    replies = [
        j(patterns=["zzz-no-match"]),
        j(action="regenerate", patterns=["USL"]),
        j(action="select", selected_tables=["Table_0"]),
        answer(),
    ]
    llm, result, _ = run(store, replies)
    assert result.status == "answered" and result.answer == "2004" and len(llm.calls) == 4
    assert result.details["patterns"] == [["zzz-no-match"], ["USL"]]


def test_config_names() -> None:
    cfg = SeekConfig.named("10step-10s3-big")
    assert (cfg.max_steps, cfg.n_candidates, cfg.max_select_tables, cfg.rerank) == (
        10,
        10,
        3,
        False,
    )
    assert (cfg.rows_per_pattern, cfg.max_matched_rows) == (3, 15)
    assert SeekConfig.named("r3").n_candidates == 3 and SeekConfig.named("r3").rerank
    assert SeekConfig().name == "5step-5s1-small"
    with pytest.raises(OptionError):
        SeekConfig.named("7x9")
    with pytest.raises(ValueError):
        SeekConfig(strategy="5s9")


def test_match_only_qa_implies_match_only_refinement(store: Store) -> None:
    cfg = SeekConfig(match_only_qa=True)
    assert cfg.match_only_refine and cfg.label() == "5step-5s1-small match-only QA"
    assert SeekConfig().label() == "5step-5s1-small" and not SeekConfig().match_only_refine
    replies = [j(patterns=["USL"]), j(action="select", selected_tables=["Table_0"]), answer()]
    llm, _, _ = run(store, replies, cfg)
    refine_prompt = llm.calls[1].messages[-1]["content"]
    assert "Year,Division,League" not in refine_prompt  # no table head: matched rows only


def test_pattern_over_budget_is_dropped_recorded_and_the_query_goes_on(store: Store) -> None:
    store.add_table(
        Table.from_rows([["Notes"], ["a" * 40 + "!"]], source=Source(format="csv")),
        key="/secret/dir/notes.csv",
    )
    hostile = r"(a|aa)+\1$"  # a backreference: RE2 cannot, backtracking takes forever
    replies = [j(patterns=[hostile, "Gold"]), j(action="none"), answer(value="Norway")]
    _, result, trace = run(store, replies, question="Which nation won 16 golds?")
    assert result.status == "answered" and result.answer == "Norway"  # type: ignore[attr-defined]
    medals = store.ids_for_path("/secret/dir/medals.html")[0]
    assert result.tables_consulted == [medals]  # type: ignore[attr-defined]
    dropped = result.details["dropped_patterns"]  # type: ignore[attr-defined]
    assert [d["pattern"] for d in dropped] == [hostile]
    assert "time budget" in dropped[0]["reason"]
    rank = next(e for e in trace.events if e["kind"] == "rank")
    assert rank["dropped"][0]["pattern"] == hostile
    assert rank["hits"][0] == {"table_id": medals, "score": 1.0}  # Eq. 1 over "Gold" alone


@pytest.mark.parametrize("said", ["insufficient", "f_row([*])", "I cannot determine that.", ""])
def test_refusals_and_tool_syntax_are_never_answers(store: Store, said: str) -> None:
    replies = [j(patterns=["Gold"]), j(action="none"), answer(value=said)]
    _, result, _ = run(store, replies, question="Which nation won 16 golds?")
    assert result.status == "insufficient" and result.answer is None  # type: ignore[attr-defined]
