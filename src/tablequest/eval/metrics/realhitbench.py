"""RealHiTBench's own metrics, per task family (Wu et al., 2025; DTR §4, Table 2).

The benchmark's scoring code (``metrics/qa_metrics.py`` and ``utils/chart_metric_util.py`` of
cspzyy/RealHiTBench) follows TableBench's; it is not in the data folder, so this module
re-implements what it computes:

- **Fact Checking, Numerical Reasoning, Structure Comprehending: EM and F1.** Both sides are
  pre-processed as TableBench's ``QAMetric`` does: decimals rounded to one place
  ("5.80" → "5.8"), SQuAD normalisation (lower case, punctuation and articles removed,
  whitespace collapsed), an empty text becomes "#". EM is equality of the processed texts; F1
  the token-overlap F1 (multiset) of them.
- **Data Analysis: ROUGE-L** of the processed texts through the ``rouge_score`` library
  (``RougeScorer(["rougeL"])``, no stemmer, its own tokenizer), which is what upstream's
  ``evaluate.load("rouge")`` runs (TableBench's ``QAMetric``); per question, then the mean
  (upstream's bootstrap aggregate is a resampled mean of the same scores). The paper's other
  column, LLM-EVAL, needs a judge model (`tablequest eval judge`).
- **Visualization: ECR and Pass@1.** ECR: the chart code ran and left a figure. Pass@1: the
  chart's y-values, taken from the current axes as the benchmark does (line y-data, bar
  heights, pie wedge fractions, scatter y-offsets), flattened, rounded to two places and
  sorted, equal the reference's (pie references are normalised to fractions first).
  References are ``ProcessedAnswer`` strings such as ``"[[56787, 59091], [6260, 4744]]\\n"``.

Structure Comprehending upstream (``inference/inference_llm.py`` and its siblings) asks the
model twice: its answer on the table is the *reference*, its answer on the table's ``_swap``
variant the prediction, then EM/F1 as above (``FinalAnswer`` is empty). The ``_swap`` tables
are not in the released data, so these questions cannot be scored from it: `score_realhitbench`
gives them no metric, the runner records them as not scored (`UNSCORED`) and the report lists
them apart with their count; `structure_consistency` is the upstream rule for when both
answers exist.

The reference is what upstream scores against (``inference/inference_llm.py``): the
question's ``FinalAnswer``, and for Visualization its ``ProcessedAnswer`` (the chart data);
the loader puts it in ``question.answers[0]``.

Runner integration (one call per question, then one aggregation):
    ``score_realhitbench(question.extra["question_type"], question.extra["sub_type"],
    result.answer, question.answers[0], chart_data=result.details.get("chart_data"))`` → a
    dict of metric values;
    ``aggregate_realhitbench(rows)`` → family → metric → percent.
"""

from __future__ import annotations

import ast
import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tablequest.eval.metrics.answers import rouge_l

__all__ = [
    "FAMILIES",
    "UNSCORED",
    "aggregate_realhitbench",
    "chart_type",
    "chart_values",
    "family",
    "pass_at_1",
    "preprocess",
    "qa_scores",
    "score_realhitbench",
    "structure_consistency",
]

UNSCORED = (
    "Structure Comprehending is scored upstream against the model's own answer on the "
    "table's _swap variant, which the released data does not include"
)
FAMILIES = (
    "Fact Checking",
    "Numerical Reasoning",
    "Structure Comprehending",
    "Data Analysis",
    "Visualization",
)
_DECIMAL = re.compile(r"\b\d+\.\d+\b")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)
_CHART_TYPES = ("LineChart", "BarChart", "PieChart", "ScatterChart")


def family(question_type: str) -> str:
    """The task family of a RealHiTBench ``QuestionType`` (unknown types pass through)."""
    return question_type.strip()


def preprocess(text: str, *, count_blank: bool = True) -> str:
    """TableBench's QAMetric pre-processing (see the module docstring)."""
    text = _DECIMAL.sub(lambda m: str(round(float(m.group()), 1)), text)
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = " ".join(_ARTICLES.sub(" ", text).split())
    return "#" if not text and count_blank else text


def _f1(prediction: list[str], reference: list[str]) -> float:
    common = sum((Counter(prediction) & Counter(reference)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(reference)
    return 2 * precision * recall / (precision + recall)


def qa_scores(prediction: str | None, reference: str) -> dict[str, float]:
    """EM, F1 and ROUGE-L (each in [0, 1]) of one answer against one reference; an empty
    answer (nothing left after pre-processing) scores 0 on all three, whatever the
    reference (upstream's "#" for both would make it an exact match)."""
    if not preprocess(prediction or "", count_blank=False):
        return {"EM": 0.0, "F1": 0.0, "ROUGE-L": 0.0}
    pred = preprocess(prediction or "").split()
    ref = preprocess(reference).split()
    return {
        "EM": float(pred == ref),
        "F1": _f1(pred, ref),
        "ROUGE-L": rouge_l([" ".join(pred)], [" ".join(ref)], use_stemmer=False)[1][0],
    }


def structure_consistency(answer: str | None, swapped_answer: str | None) -> dict[str, float]:
    """Structure Comprehending upstream: EM/F1 of the answer on the swapped table vs the
    answer on the original table."""
    scores = qa_scores(swapped_answer, answer or "")
    return {"EM": scores["EM"], "F1": scores["F1"]}


def chart_type(sub_type: str | None) -> str | None:
    """ "LineChart" for "LineChart Generation", …; None when the sub-type names no chart."""
    head = (sub_type or "").split()[:1]
    return head[0] if head and head[0] in _CHART_TYPES else None


def _flatten(values: Iterable[Any]) -> list[float]:
    out: list[float] = []
    for value in values:
        if isinstance(value, list | tuple):
            out.extend(_flatten(value))
        elif value is not None:
            out.append(float(value))
    return out


def chart_values(chart_data: Mapping[str, Any], kind: str) -> list[float] | None:
    """The y-values the benchmark reads from the current axes for a chart of `kind`."""
    key = {"LineChart": "lines", "BarChart": "bars", "PieChart": "pie", "ScatterChart": "scatter"}
    field = key.get(kind)
    values = chart_data.get(field) if field else None
    if not isinstance(values, list):
        return None
    try:
        return _flatten(values)
    except (TypeError, ValueError):
        return None


def _same(reference: list[float], prediction: list[float]) -> bool:
    if len(reference) != len(prediction):
        return False
    for a, b in zip(sorted(reference), sorted(prediction), strict=True):
        if math.isnan(a) != math.isnan(b) or (not math.isnan(a) and a != b):
            return False
    return True


def pass_at_1(
    reference: str | Sequence[Any], chart_data: Mapping[str, Any] | None, kind: str
) -> bool:
    """Pass@1 of one chart (see the module docstring); False when there is no chart data."""
    if not chart_data:
        return False
    try:
        ref = ast.literal_eval(reference.strip()) if isinstance(reference, str) else reference
        expected = _flatten(ref if isinstance(ref, list | tuple) else [ref])
    except (ValueError, SyntaxError, TypeError):
        return False
    got = chart_values(chart_data, kind)
    if got is None:
        return False
    if kind == "PieChart":
        total = sum(expected)
        if not total:
            return False
        expected = [round(x / total, 2) for x in expected]
    return _same([round(x, 2) for x in expected], [round(x, 2) for x in got])


def score_realhitbench(
    question_type: str,
    sub_type: str | None,
    prediction: str | None,
    reference: str,
    *,
    chart_data: Mapping[str, Any] | None = None,
) -> dict[str, float | None]:
    """The family's metrics for one question (values in [0, 1]; ECR/Pass as 0 or 1)."""
    fam = family(question_type)
    if fam == "Visualization":
        kind = chart_type(sub_type)
        executed = bool(chart_data) and not (chart_data or {}).get("error")
        passed = pass_at_1(reference, chart_data, kind) if kind and executed else False
        return {"ECR": float(executed), "Pass@1": float(passed)}
    if fam == "Structure Comprehending":
        return {}  # scored against the `_swap` tables, not released: see `UNSCORED`
    scores = qa_scores(prediction, reference)
    if fam == "Data Analysis":
        return {"ROUGE-L": scores["ROUGE-L"]}
    return {"EM": scores["EM"], "F1": scores["F1"]}


def aggregate_realhitbench(
    rows: Iterable[tuple[str, Mapping[str, float | None]]],
) -> dict[str, dict[str, float]]:
    """(question type, scores) pairs → family → metric → mean in percent, plus ``n``."""
    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, Counter[str]] = {}
    for question_type, scores in rows:
        fam = family(question_type)
        for metric, value in scores.items():
            if value is None:
                continue
            bucket = sums.setdefault(fam, {})
            bucket[metric] = bucket.get(metric, 0.0) + float(value)
            counts.setdefault(fam, Counter())[metric] += 1
    out: dict[str, dict[str, float]] = {}
    for fam, metrics in sums.items():
        out[fam] = {m: round(100 * v / counts[fam][m], 2) for m, v in metrics.items()}
        out[fam]["n"] = float(max(counts[fam].values()))
    return out
