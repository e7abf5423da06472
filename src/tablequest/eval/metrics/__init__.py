"""Metrics of the seed papers: WTQ exact match, F1/EM, TabFact accuracy, retrieval recall
family (R@k, R@all, R@final, GR, DS), format robustness (FRS, WCD), efficiency, sub-table
quality, ROUGE-L and BLEU, and DTR's LLM-as-judge metrics (LLM-EVAL, Win / Score Rate).
Each submodule documents the paper section it follows.
"""

from tablequest.eval.metrics.answers import (
    TabFactScores,
    bleu,
    exact_match,
    list_f1,
    normalize_answer,
    rouge_l,
    sentence_bleu,
    tabfact_label,
    tabfact_scores,
    token_f1,
)
from tablequest.eval.metrics.judge import (
    JudgeItem,
    JudgeOutcome,
    PairOutcome,
    judge_records,
    win_rate,
)
from tablequest.eval.metrics.retrieval import (
    UsageSummary,
    discriminative_score,
    efficiency,
    frs,
    gr_all,
    gr_final,
    group_coverage_at_k,
    group_recall_at_k,
    mean,
    r_all,
    r_final,
    recall_at_k,
    top1_hit_rate_by_round,
    usage_summary,
    wcd,
)
from tablequest.eval.metrics.subtable import SubTableScores, set_prf, subtable_scores
from tablequest.eval.metrics.wtq import wtq_denotation, wtq_match, wtq_normalize

__all__ = [
    "JudgeItem",
    "JudgeOutcome",
    "PairOutcome",
    "SubTableScores",
    "TabFactScores",
    "UsageSummary",
    "bleu",
    "discriminative_score",
    "efficiency",
    "exact_match",
    "frs",
    "gr_all",
    "gr_final",
    "group_coverage_at_k",
    "group_recall_at_k",
    "judge_records",
    "list_f1",
    "mean",
    "normalize_answer",
    "r_all",
    "r_final",
    "recall_at_k",
    "rouge_l",
    "sentence_bleu",
    "set_prf",
    "subtable_scores",
    "tabfact_label",
    "tabfact_scores",
    "token_f1",
    "top1_hit_rate_by_round",
    "usage_summary",
    "wcd",
    "win_rate",
    "wtq_denotation",
    "wtq_match",
    "wtq_normalize",
]
