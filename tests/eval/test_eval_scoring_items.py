"""Scoring items as each benchmark's evaluator does (issue 41, item 1).

- HiTab: its own `hmt_score` (microsoft/HiTab `qa/table/utils.py`): numbers within 1e-5
  ("52.1%", "(3)", "1,234" read as numbers), strings WTQ-normalised, lists item by item in
  order; a verbatim answer that holds ", " matches in every method's list format.
- AIT-QA: one cell per question; the whole answer is compared, so a cell with ", " matches.
- RealHiTBench: scored against `FinalAnswer` (charts: `ProcessedAnswer`), as upstream.
- A failed question recalls nothing: R@all, R@final, GR@all and GR@final are 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablequest.eval.datasets import Question
from tablequest.eval.datasets.realhitbench import _question
from tablequest.eval.metrics.hitab import hitab_equal, hitab_match, hitab_process
from tablequest.eval.scoring import answer_metrics, score_question
from tablequest.llm.usage import StepBudget, UsageMeter
from tablequest.methods.query import Query
from tablequest.methods.rag.method import ANSWER_SEPARATORS as RAG
from tablequest.methods.research.method import ANSWER_SEPARATORS as DTR
from tablequest.methods.result import Result
from tablequest.methods.scope.method import ANSWER_SEPARATORS as SCOPE
from tablequest.trace import Trace

DATA = Path("/work/shared/data")
SEPARATORS = {"seek": (" | ",), "rag": RAG, "research": DTR, "scope": SCOPE}
JOIN = {"seek": " | ", "rag": ", ", "research": ", ", "scope": "\n"}


class NoCorpus:
    """The runner's corpus, for scoring only: table ids are the keys."""

    def table_ids(self, keys: list[str]) -> list[str]:
        return list(keys)


def finished(answer: str | None, method: str, status: str = "answered", **fields: object) -> Result:
    """A Result as `Query.finish` leaves it, with `method`'s list format."""
    query = Query(None, StepBudget(5, reserve=0), Trace.in_memory(), UsageMeter().scope("q"))
    result = Result(answer=answer, status=status, **fields)  # type: ignore[arg-type]
    return query.finish(result, method, SEPARATORS[method])


def em(dataset: str, q: Question, result: Result) -> float:
    return score_question(dataset, q, result, NoCorpus())["em"]  # type: ignore[arg-type]


def hitab_q(answer: list[object]) -> Question:
    """A HiTab question as the loader builds it (answers as text, the raw list in extra)."""
    from tablequest.table import cell_text

    texts = [cell_text(a) for a in answer]
    return Question("h", "?", texts, ["t"], extra={"answer_raw": answer})


def test_hitab_process_and_equal_follow_hmt_score() -> None:
    assert hitab_process("52.1%") == 52.1 and hitab_process("(3)") == 3.0
    assert hitab_process(" 1,234 ") == 1234.0 and hitab_process(55) == 55.0
    assert hitab_process("Montréal (Que.)") == "montreal"  # WTQ normalize
    assert hitab_process(["x"]) == "x" and hitab_process(["1", "b"]) == [1.0, "b"]
    assert hitab_equal(52.1, 52.100001) and not hitab_equal(52.1, 52.11)
    assert not hitab_equal("5", 5.0)  # types differ
    assert hitab_match(["52.1%"], [52.1]) and hitab_match(["5"], ["5.0"])
    assert hitab_match(["215", "197"], [215.0, 197.0])
    assert not hitab_match(["197", "215"], [215.0, 197.0])  # in order, as the evaluator
    assert not hitab_match(["215"], [215.0, 197.0]) and not hitab_match([], [1.0])
    with pytest.raises(TypeError):
        hitab_match("215", [215.0])  # type: ignore[arg-type]


@pytest.mark.parametrize("method", list(SEPARATORS))
def test_hitab_single_cell_with_a_comma_matches_in_every_format(method: str) -> None:
    q = hitab_q(["mining, oil and gas extraction, and utilities"])
    verbatim = finished("Mining, oil and gas extraction, and utilities.", method)
    assert em("hitab", q, verbatim) == 1.0, (method, verbatim.items)
    assert em("hitab", q, finished("Mining, oil and gas extraction", method)) == 0.0


@pytest.mark.parametrize("method", list(SEPARATORS))
def test_hitab_lists_are_scored_item_by_item(method: str) -> None:
    q = hitab_q([2548, 1470])
    assert em("hitab", q, finished(JOIN[method].join(["2,548", "1,470"]), method)) == 1.0
    assert em("hitab", q, finished(JOIN[method].join(["1470", "2548"]), method)) == 0.0
    assert em("hitab", q, finished("2548", method)) == 0.0
    assert answer_metrics("hitab", q, "2548 | 1470")["em"] == 1.0  # no items: split on "|"


def test_hitab_list_of_cells_with_commas_needs_a_format_that_can_tell_them_apart() -> None:
    """A comma list cannot separate items that hold commas (as for WTQ); " | " and lines can."""
    gold = ["construction", "mining, quarrying and oil and gas extraction", "public administration"]
    q = hitab_q(list(gold))
    assert em("hitab", q, finished(" | ".join(gold), "seek")) == 1.0
    assert em("hitab", q, finished("\n".join(gold), "scope")) == 1.0
    assert em("hitab", q, finished(", ".join(gold), "rag")) == 0.0


@pytest.mark.parametrize("method", list(SEPARATORS))
def test_aitqa_cell_with_commas_matches_in_every_format(method: str) -> None:
    cell = 'Transportation Workers of America, AFL-CIO, Local 550 ("TWU 550")'
    q = Question("q-490", "?", [cell], ["t"])
    assert em("aitqa", q, finished(cell, method)) == 1.0
    assert em("aitqa", q, finished("Transportation Workers of America", method)) == 0.0
    number = Question("q-30", "?", ["(1,844)"], ["t"])
    assert em("aitqa", number, finished("(1,844)", method)) == 1.0
    assert em("aitqa", number, finished("1,844", method)) == 0.0  # the cell, as printed


def _real_rows(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_real_hitab_and_aitqa_answers_with_commas_score_verbatim() -> None:
    """Every real single-cell gold answer holding ", " (12 HiTab, 2 AIT-QA) scores EM 1 when
    answered verbatim, in every method's format (each scored 0 from the comma formats)."""
    rows = _real_rows(DATA / "hitab/data/test_samples.jsonl")
    hitab = [r for r in rows if len(r["answer"]) == 1 and ", " in str(r["answer"][0])]  # type: ignore[arg-type,index]
    cells = [r for r in _real_rows(DATA / "aitqa/raw_data/aitqa_questions.jsonl")
             if any(", " in a for a in r["answers"])]  # type: ignore[attr-defined]  # fmt: skip
    assert (len(hitab), len(cells)) == (12, 2)
    for method in SEPARATORS:
        for row in hitab:
            q = hitab_q(list(row["answer"]))  # type: ignore[call-overload]
            assert em("hitab", q, finished(q.answers[0], method)) == 1.0, (method, row["id"])
        for row in cells:
            q = Question(str(row["id"]), "?", list(row["answers"]), ["t"])  # type: ignore[call-overload]
            assert em("aitqa", q, finished(q.answers[0], method)) == 1.0, (method, row["id"])


def test_realhitbench_reference_is_final_answer_as_upstream() -> None:
    row = {"id": 374, "FileName": "education-table07", "Question": "Total?",
           "QuestionType": "Numerical Reasoning", "SubQType": "Calculation",
           "FinalAnswer": "1297800", "ProcessedAnswer": "31297800"}  # fmt: skip
    q = _question(row, "data/tables/education-table07.xlsx")
    assert q.answers == ["1297800"] and q.extra["processed_answer"] == "31297800"
    assert em("realhitbench", q, finished("1297800", "research")) == 1.0
    assert em("realhitbench", q, finished("31297800", "research")) == 0.0
    chart = _question({**row, "QuestionType": "Visualization", "FinalAnswer": "plt.bar(x)",
                       "ProcessedAnswer": "[1, 2]\n"}, "k")  # fmt: skip
    assert chart.answers == ["[1, 2]\n"]  # the chart's data: Pass@1 compares y-values with it


def test_real_realhitbench_question_374() -> None:
    path = DATA / "realhitbench/data/QA_final.json"
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    rows = json.loads(path.read_text(encoding="utf-8"))["queries"]
    differ = [r["id"] for r in rows if r["QuestionType"] != "Visualization"
              and r["FinalAnswer"] != r["ProcessedAnswer"]]  # fmt: skip
    assert differ == [374]
    row = next(r for r in rows if r["id"] == 374)
    assert _question(row, "k").answers == [row["FinalAnswer"]] == ["1297800"]


def test_a_failed_question_recalls_nothing() -> None:
    """The oracle `direct` is handed the gold table: a failed answer still recalled it."""
    q = Question("x", "?", ["1"], ["gold"], group=["gold", "sib"])
    fields = {"tables_consulted": ["gold"], "final_table": "gold"}
    failed = finished(None, "seek", status="failed", **fields)
    metrics = score_question("tcrbench", q, failed, NoCorpus())  # type: ignore[arg-type]
    assert {k: metrics[k] for k in ("r_all", "r_final", "gr_all", "gr_final", "f1")} == {
        "r_all": 0.0, "r_final": 0.0, "gr_all": 0.0, "gr_final": 0.0, "f1": 0.0}  # fmt: skip
    answered = finished("1", "seek", **fields)
    metrics = score_question("tcrbench", q, answered, NoCorpus())  # type: ignore[arg-type]
    assert metrics["r_all"] == metrics["r_final"] == metrics["gr_all"] == 1.0
    insufficient = finished(None, "seek", status="insufficient", **fields)
    assert score_question("tcrbench", q, insufficient, NoCorpus())["r_all"] == 1.0  # type: ignore[arg-type]
    ranked = finished(None, "seek", status="failed", details={"ranked": ["gold"]}, **fields)
    assert score_question("tcrbench", q, ranked, NoCorpus())["r_at_1"] == 1.0  # type: ignore[arg-type]
