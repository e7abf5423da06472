"""Scoring that cannot reward a failure, on real rows of the shared benchmark data.

- A failed or empty answer scores 0 on every answer metric (RealHiTBench's "#" for an empty
  text made a failed answer an exact match of an empty reference).
- RealHiTBench's Structure Comprehending questions are scored upstream against the model's
  answer on a `_swap` table the released data lacks: they get no EM/F1 and are reported apart.
- WTQ list answers are compared as item lists, each method's items parsed from its own
  prompt's list format (TableSeek " | ", TableRAG and DTR ", ", TabScope one per line).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tablequest.eval.datasets import Question, load
from tablequest.eval.datasets.realhitbench import _question
from tablequest.eval.metrics.realhitbench import UNSCORED, qa_scores
from tablequest.eval.report import summarize, to_markdown
from tablequest.eval.runner import RunSpec, answer_metrics, question_record, score_question
from tablequest.llm.usage import StepBudget, UsageMeter
from tablequest.methods.query import Query, answer_items
from tablequest.methods.rag.method import ANSWER_SEPARATORS as RAG
from tablequest.methods.research.method import ANSWER_SEPARATORS as DTR
from tablequest.methods.result import Result
from tablequest.methods.scope.method import ANSWER_SEPARATORS as SCOPE
from tablequest.trace import Trace

DATA = Path("/work/shared/data")
SEEK = (" | ",)


class NoCorpus:
    """The runner's corpus, for scoring only: no table ids to map."""

    def table_ids(self, keys: list[str]) -> list[str]:
        return list(keys)

    def key_of(self, table_id: str) -> str | None:
        return None


@cache
def wtq() -> dict[str, Question]:
    return {q.id: q for q in load("wtq", DATA / "wtq").questions}


def realhitbench_rows(question_type: str, n: int) -> list[Question]:
    rows = json.loads((DATA / "realhitbench/data/QA_final.json").read_text())
    rows = rows.get("queries", rows) if isinstance(rows, dict) else rows
    picked = [r for r in rows if r["QuestionType"] == question_type][:n]
    return [_question(r, str(r["FileName"])) for r in picked]


def finished(answer: str | None, separators: tuple[str, ...], status: str = "answered") -> Result:
    """A Result as a method's `Query.finish` leaves it, with that method's list format."""
    query = Query(None, StepBudget(5, reserve=0), Trace.in_memory(), UsageMeter().scope("q"))
    result = Result(answer=answer, status=status)  # type: ignore[arg-type]
    return query.finish(result, "m", separators)


def spec(dataset: str) -> RunSpec:
    return RunSpec(dataset=dataset, method="m", config="", format="", model="")


@pytest.mark.parametrize(
    ("qid", "formats"),
    [
        ("nu-10", {"seek": "2004 | 2005 | 2006", "rag": "2004, 2005, 2006",
                   "research": "2004, 2005, 2006", "scope": "2004\n2005\n2006"}),
        ("nu-48", {"seek": "Chile | Ecuador", "rag": "Ecuador, Chile",
                   "research": "Chile, Ecuador", "scope": "Chile\nEcuador"}),
    ],
)  # fmt: skip
def test_wtq_multi_item_answers_score_in_every_methods_format(
    qid: str, formats: dict[str, str]
) -> None:
    q = wtq()[qid]
    assert len(q.answers) > 1  # a real multi-item question
    separators = {"seek": SEEK, "rag": RAG, "research": DTR, "scope": SCOPE}
    for method, text in formats.items():
        result = finished(text, separators[method])
        assert len(result.items) == len(q.answers), method
        assert score_question("wtq", q, result, NoCorpus())["em"] == 1.0, method  # type: ignore[arg-type]
    # the runner no longer splits on "|" alone: TableRAG's comma list scored 0 before
    assert answer_metrics("wtq", q, formats["rag"], answer_items(formats["rag"], RAG))["em"] == 1
    assert answer_metrics("wtq", q, formats["rag"])["em"] == 0.0  # no items: one wrong value
    wrong = finished(formats["rag"].split(", ")[0], RAG)  # one item of several
    assert score_question("wtq", q, wrong, NoCorpus())["em"] == 0.0  # type: ignore[arg-type]


def test_wtq_single_value_with_a_comma_still_matches() -> None:
    q = Question(id="x", question="?", answers=["Washington, D.C."], gold_table_ids=[])
    result = finished("Washington, D.C.", RAG)
    assert result.items == ["Washington", "D.C."]
    assert score_question("wtq", q, result, NoCorpus())["em"] == 1.0  # type: ignore[arg-type]


def test_failed_or_empty_answers_never_score() -> None:
    q = wtq()["nu-0"]  # "Italy"
    failed = finished("Italy", SEEK, status="failed")
    assert failed.items == ["Italy"]  # a failed Result may keep text; scoring ignores it
    assert score_question("wtq", q, failed, NoCorpus())["em"] == 0.0  # type: ignore[arg-type]
    for dataset, question in (("hitab", q), ("aitqa", q), ("tcrbench", q)):
        scores = answer_metrics(dataset, question, "   ")
        assert scores and all(v == 0.0 for v in scores.values()), (dataset, scores)
    assert qa_scores("", "") == {"EM": 0.0, "F1": 0.0, "ROUGE-L": 0.0}
    assert qa_scores(None, "") == {"EM": 0.0, "F1": 0.0, "ROUGE-L": 0.0}
    assert qa_scores("5.80", "5.8")["EM"] == 1.0


def test_realhitbench_structure_questions_are_not_scored_and_reported_apart() -> None:
    questions = realhitbench_rows("Structure Comprehending", 5)
    assert len(questions) == 5 and all(not q.answers for q in questions)  # empty references
    records = []
    for q in questions:
        result = finished(None, SEEK, status="failed")
        result.details["reason"] = "cannot reach the model server"
        metrics = score_question("realhitbench", q, result, NoCorpus())  # type: ignore[arg-type]
        assert "em" not in metrics and "f1" not in metrics  # was em = f1 = 1.0
        record = question_record(spec("realhitbench"), q, result, NoCorpus(), 0.1, None)  # type: ignore[arg-type]
        assert record["unscored"] == UNSCORED
        records.append(record)
    fact = realhitbench_rows("Fact Checking", 1)[0]
    answered = finished(fact.answers[0], SEEK)
    record = question_record(spec("realhitbench"), fact, answered, NoCorpus(), 0.1, None)  # type: ignore[arg-type]
    assert record["metrics"]["em"] == 1.0 and "unscored" not in record
    summary = summarize([*records, record])
    assert summary["metrics"]["em"] == 1.0  # the mean is over the one scored question
    assert summary["unscored"] == [
        {"reason": UNSCORED, "count": 5, "ids": [q.id for q in questions]}
    ]
    assert "## Not scored" in to_markdown(summary) and "×5" in to_markdown(summary)
