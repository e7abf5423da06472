"""Per-question scores of an evaluation run: each benchmark's answer metric, then retrieval.

Answer metrics by dataset (`answer_metrics`, `realhitbench_metrics`), each on the item list
the method parsed from its own answer format (`Result.items`: TableSeek " | ", TableRAG and
DTR ", ", TabScope one item per line):

- WTQ `em`: the official evaluator's rules (`wtq_match`); a list of several items that does
  not match is tried as one value ("Washington, D.C.").
- HiTab `em`: HiTab's own `hmt_score` (`metrics.hitab`: numbers within 1e-5, strings
  normalised, lists item by item in order), with the same whole-answer fallback; `f1`.
- AIT-QA `em`: every answer is one cell and the benchmark publishes no evaluator: the whole
  answer (or the method's one item) equals the gold cell, case-insensitively, numbers as
  numbers (`list_f1`'s item rule); `f1`.
- TabFact `acc`; ArcadeQA / BirdQA `acc` (TableRAG's `evaluate_qa`); TCR-Bench `f1` (token F1
  against the gold items joined, numbers compared as numbers as TCR-Bench's ``safe_convert``
  does: `tcr_token_f1`) and `list_f1`; FeTaQA `rouge_l` and `bleu`; RealHiTBench its
  own metrics per family against the reference upstream scores (`FinalAnswer`; the chart data
  for Visualization); others `em` (item-wise, numbers compared as numbers) and `f1`.

A failed or empty answer scores 0 on every answer metric, and a failed question recalls
nothing: `r_all`, `r_final`, `gr_all` and `gr_final` are 0 whatever tables it had been given
(the oracle `direct` is handed the gold table, so its R@all read 1.0 on an LLM error).
`r_at_1` is the LLM-free ranking's, made before the answer: it stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets import Question
from tablequest.eval.metrics import (
    gr_all,
    gr_final,
    list_f1,
    r_all,
    r_final,
    recall_at_k,
    tabfact_label,
    tcr_token_f1,
    token_f1,
    wtq_match,
)
from tablequest.eval.metrics.hitab import hitab_match
from tablequest.methods import Result

__all__ = [
    "aitqa_items_match",
    "answer_metrics",
    "hitab_items_match",
    "question_breakdown",
    "realhitbench_metrics",
    "score_question",
    "split_items",
    "unscored_reason",
    "wtq_items_match",
]


def split_items(prediction: str | None) -> list[str]:
    """Answer items of a prediction: split on "|" (the QA prompts' list separator)."""
    if prediction is None:
        return []
    return [p.strip() for p in prediction.split("|") if p.strip()]


def answer_metrics(
    dataset: str, q: Question, prediction: str | None, items: Sequence[str] | None = None
) -> dict[str, float]:
    """Answer metrics of one prediction. `items` is the answer as the method listed it
    (`Result.items`); without them the prediction is split on "|". An empty prediction
    scores 0 on every metric."""
    if prediction is not None and not prediction.strip():
        prediction = None
    pred = prediction or ""
    if q.task == "fact_verification":
        label = tabfact_label(q.answers[0]) if q.answers else None
        return {"acc": float(prediction is not None and tabfact_label(pred) == label)}
    items = list(items) if items and prediction is not None else split_items(prediction)
    base = dataset.split("+")[0]
    if base == "wtq":
        return {"em": float(wtq_items_match(q, items, prediction))}
    if base in ("arcadeqa", "birdqa"):  # TableRAG's evaluate_qa (exact-match accuracy)
        from tablequest.eval.datasets.tablerag_eval import tablerag_match

        answer: str | list[str] = items if len(items) > 1 else pred
        return {"acc": float(prediction is not None and tablerag_match(answer, q.extra["label"]))}
    f1 = token_f1(pred, " ".join(q.answers)) if prediction else 0.0
    if base == "tcrbench":  # TCR-Bench's number rule (tcr_token_f1)
        f1 = tcr_token_f1(pred, " ".join(q.answers)) if prediction else 0.0
        return {"f1": f1, "list_f1": list_f1(items, q.answers) if items else 0.0}
    if q.task == "free_form":
        from tablequest.eval.metrics import rouge_l, sentence_bleu

        gold = " ".join(q.answers)
        return {
            "rouge_l": rouge_l([pred], [gold])[1][0] if prediction else 0.0,
            "bleu": sentence_bleu(pred, gold) if prediction else 0.0,
        }
    if base == "hitab":
        return {"em": float(hitab_items_match(q, items, prediction)), "f1": f1}
    if base == "aitqa":
        return {"em": float(aitqa_items_match(q, items, prediction)), "f1": f1}
    em = float(bool(items) and list_f1(items, q.answers) == 1.0)
    return {"em": em, "f1": f1}


def wtq_items_match(q: Question, items: Sequence[str], prediction: str | None) -> bool:
    """The official WTQ rule on the method's item list; when a list of several items does not
    match, the whole answer as one item (ours: a comma-separated format cannot tell
    "Washington, D.C." from two items, so the single value gets its chance too)."""
    if not items or prediction is None:
        return False
    canon = q.extra.get("target_canon") or q.answers
    if wtq_match(list(items), q.answers, canon):
        return True
    return len(items) > 1 and wtq_match([prediction.strip()], q.answers, canon)


def hitab_items_match(q: Question, items: Sequence[str], prediction: str | None) -> bool:
    """HiTab's `hmt_score` on the method's item list against the released answer list
    (`extra["answer_raw"]`: numbers as numbers), then, for a list of several items, on the
    whole answer as one item (as `wtq_items_match`)."""
    if not items or prediction is None:
        return False
    gold = list(q.extra.get("answer_raw") or q.answers)
    if hitab_match(list(items), gold):
        return True
    return len(items) > 1 and hitab_match([prediction.strip()], gold)


def aitqa_items_match(q: Question, items: Sequence[str], prediction: str | None) -> bool:
    """AIT-QA: the answer is one cell. The whole answer, or the method's item when it listed
    exactly one, equals a gold cell (`list_f1`'s item rule: case-insensitive, numbers as
    numbers). No official evaluator is published (IBM/AITQA ships data only)."""
    if prediction is None or not q.answers:
        return False
    candidates = [prediction.strip(), *(items if len(items) == 1 else [])]
    return any(list_f1([c], [g]) == 1.0 for c in candidates if c for g in q.answers)


_REALHITBENCH_NAMES = {"EM": "em", "F1": "f1", "ROUGE-L": "rouge_l", "ECR": "ecr",
                       "Pass@1": "pass_at_1"}  # fmt: skip


def realhitbench_metrics(q: Question, result: Result) -> dict[str, float]:
    """RealHiTBench's own metric per task family (EM/F1; ROUGE-L for Data Analysis; ECR and
    Pass@1 against the reference chart data for Visualization), lower-case names, against
    the reference the upstream code reads (`q.answers[0]`: `FinalAnswer`, the chart data for
    Visualization; see `datasets.realhitbench`)."""
    from tablequest.eval.metrics.realhitbench import score_realhitbench

    scores = score_realhitbench(
        str(q.extra.get("question_type") or ""),
        q.extra.get("sub_type"),
        result.answer,
        q.answers[0] if q.answers else "",
        chart_data=result.details.get("chart_data"),
    )
    return {_REALHITBENCH_NAMES.get(k, k): v for k, v in scores.items() if v is not None}


def unscored_reason(dataset: str, q: Question) -> str | None:
    """Why a question's answer cannot be scored from the released data (None: it can)."""
    from tablequest.eval.metrics.realhitbench import UNSCORED, family

    question_type = str(q.extra.get("question_type") or "")
    if dataset.split("+")[0] == "realhitbench" and family(question_type) == (
        "Structure Comprehending"
    ):
        return UNSCORED
    return None


def question_breakdown(dataset: str, q: Question, result: Result) -> dict[str, Any]:
    """The result's breakdown keys plus the benchmark's own grouping (RealHiTBench family)."""
    out = dict(result.details.get("breakdown") or {})
    if dataset.split("+")[0] == "realhitbench" and q.extra.get("question_type"):
        out["family"] = str(q.extra["question_type"])
    return out


def score_question(
    dataset: str, q: Question, result: Result, corpus: BuiltCorpus
) -> dict[str, float]:
    """Per-question metrics of one result (see module doc)."""
    if result.status == "failed":  # a failed question: no answer, and it recalled nothing
        result = replace(result, answer=None, items=[], tables_consulted=[], final_table=None,
                         details={**result.details, "chart_data": None})  # fmt: skip
    if dataset.split("+")[0] == "realhitbench":
        metrics = realhitbench_metrics(q, result)
    else:
        metrics = answer_metrics(dataset, q, result.answer, result.items)
    gold = corpus.table_ids(q.gold_table_ids)
    metrics["r_all"] = r_all(result.tables_consulted, gold)
    metrics["r_final"] = r_final(result.final_table, gold)
    ranked = result.details.get("ranked")
    if isinstance(ranked, list):
        metrics["r_at_1"] = recall_at_k(ranked, gold, 1) if ranked else 0.0
    if q.group:
        group = corpus.table_ids(q.group)
        metrics["gr_all"] = gr_all(result.tables_consulted, result.final_table, gold, group)
        metrics["gr_final"] = gr_final(result.final_table, group, gold)
    return metrics
