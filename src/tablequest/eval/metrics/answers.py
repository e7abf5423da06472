"""Answer metrics: token F1 / EM, list F1, TabFact accuracy, ROUGE-L and BLEU.

- `token_f1` / `exact_match`: SQuAD-style normalisation (lowercase, drop punctuation and the
  articles a/an/the, whitespace tokens), as used for TCR-Bench F1 in the TableSeek paper
  (§Evaluation; the paper does not spell the normalisation out, SQuAD's is the usual one).
  With several gold strings the best score counts (alternatives, as in SQuAD).
  `tcr_token_f1` (TCR-Bench's `f1`) adds TCR-Bench's number rule (``tools/metrics.py`` of
  minger-hsxz/TCR-Bench-Open, ``safe_convert``): numeric tokens compare as numbers.
- `list_f1`: precision/recall/F1 over answer *items* (multiset), the form of TCR-Bench's
  `cal_score_list`: items are compared case-insensitively after stripping, and two items that
  both parse as numbers match when numerically equal ("35156" = "35156.0"). Ours: TCR-Bench's
  extra de-perturbation (Roman numerals, number words) is not applied.
- `tabfact_scores`: Acc over all claims, Acc-Sup over claims whose gold label is *supported*
  (entailed), Acc-Ref over *refuted* claims (TableSeek §Evaluation, Tables 3 and 26).
- `rouge_l` / `bleu`: FeTaQA's free-form metrics through `rouge-score` (ROUGE-L F-measure,
  Porter stemmer on) and `sacrebleu` (BLEU 0–100, default 13a tokenisation).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import TypedDict

__all__ = [
    "TabFactScores",
    "bleu",
    "exact_match",
    "list_f1",
    "normalize_answer",
    "rouge_l",
    "sentence_bleu",
    "tabfact_label",
    "tabfact_scores",
    "tcr_token_f1",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_EDGE = ",;:!?()[]{}\"'"


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation, drop articles, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(gold: str | Sequence[str]) -> list[str]:
    golds = [gold] if isinstance(gold, str) else list(gold)
    if not golds:
        raise ValueError("gold must hold at least one reference answer")
    return golds


def _f1_one(prediction: str, gold: str, *, numbers: bool = False) -> float:
    tokens = _tcr_tokens if numbers else (lambda text: normalize_answer(text).split())
    pred_tokens, gold_tokens = tokens(prediction), tokens(gold)
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold: str | Sequence[str]) -> float:
    """Token-overlap F1 (SQuAD); the best over several gold alternatives.

    Two empty token lists score 1.0, one empty list scores 0.0. For set-valued answers
    (TCR-Bench lists) pass the items joined into one string, or use `list_f1`.
    """
    return max(_f1_one(prediction, g) for g in _golds(gold))


def tcr_token_f1(prediction: str, gold: str | Sequence[str]) -> float:
    """`token_f1` with TCR-Bench's number rule: a token that reads as a number (its
    ``tools/metrics.py`` ``safe_convert``: ``float`` when it holds ".", else ``int``, after
    surrounding punctuation is stripped) is compared as that number ("19" = "19.0",
    "0.5" = "0.50"), before SQuAD normalisation would cut "19.0" into "190"; other tokens are
    normalised as in `token_f1`."""
    return max(_f1_one(prediction, g, numbers=True) for g in _golds(gold))


def _tcr_number(text: str) -> str | None:
    try:
        value: float = float(text) if "." in text else int(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _tcr_tokens(text: str) -> list[str]:
    out: list[str] = []
    for token in text.split():
        number = _tcr_number(token.strip(_EDGE))
        if number is not None:
            out.append(number)
        else:
            out.extend(normalize_answer(token).split())
    return out


def exact_match(prediction: str, gold: str | Sequence[str]) -> bool:
    """Normalised string equality with any gold alternative."""
    pred = normalize_answer(prediction)
    return any(pred == normalize_answer(g) for g in _golds(gold))


def _item_key(item: str) -> str | float:
    text = item.strip().lower()
    try:
        number = float(text) if text and "_" not in text else None
    except ValueError:
        number = None
    if number is not None and math.isfinite(number):
        return number
    return text


def list_f1(prediction: Sequence[str], gold: Sequence[str]) -> float:
    """Multiset F1 over answer items (TCR-Bench style); empty vs empty scores 1.0."""
    for name, arg in (("prediction", prediction), ("gold", gold)):
        if isinstance(arg, str):
            raise TypeError(f"{name} must be a list of items, got the string {arg!r}")
    if not prediction and not gold:
        return 1.0
    remaining = Counter(_item_key(g) for g in gold)
    tp = 0
    for item in prediction:
        key = _item_key(item)
        if remaining[key] > 0:
            remaining[key] -= 1
            tp += 1
    if tp == 0:
        return 0.0
    precision = tp / len(prediction)
    recall = tp / len(gold)
    return 2 * precision * recall / (precision + recall)


_TRUE = {"true", "yes", "1", "entailed", "entails", "supported", "support", "correct"}
_FALSE = {"false", "no", "0", "refuted", "refutes", "not supported", "unsupported", "incorrect"}


def tabfact_label(value: str | bool | int | None) -> bool | None:
    """Read a TabFact verdict: True (supported), False (refuted) or None (unreadable).

    Accepts booleans, 1/0 and the usual words (true/false, yes/no, entailed/refuted,
    supported/not supported), case-insensitively, ignoring surrounding punctuation.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {1: True, 0: False}.get(value)
    text = " ".join(value.strip().strip(string.punctuation + " ").lower().split())
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


class TabFactScores(TypedDict):
    """TabFact accuracies; `acc_sup` / `acc_ref` are NaN when there is no such claim."""

    acc: float
    acc_sup: float
    acc_ref: float
    n: int
    n_sup: int
    n_ref: int


def tabfact_scores(
    preds: Sequence[str | bool | int | None],
    golds: Sequence[str | bool | int],
    supported_flags: Sequence[bool] | None = None,
) -> TabFactScores:
    """Acc, Acc-Sup and Acc-Ref.

    Args:
        preds: predicted verdicts (see `tabfact_label`); unreadable ones count as wrong.
        golds: gold verdicts.
        supported_flags: whether each claim's gold label is *supported*; derived from
            `golds` when None. Acc-Sup is the accuracy over flagged claims, Acc-Ref over the
            others.
    """
    gold_labels = [tabfact_label(g) for g in golds]
    bad = [i for i, g in enumerate(gold_labels) if g is None]
    if bad:
        raise ValueError(f"unreadable gold labels at positions {bad[:10]}: {golds[bad[0]]!r}")
    flags = [bool(g) for g in gold_labels] if supported_flags is None else list(supported_flags)
    if not len(preds) == len(golds) == len(flags):
        raise ValueError(
            f"preds ({len(preds)}), golds ({len(golds)}) and supported_flags ({len(flags)}) "
            "must have the same length"
        )
    correct = [tabfact_label(p) == g for p, g in zip(preds, gold_labels, strict=True)]
    sup = [c for c, f in zip(correct, flags, strict=True) if f]
    ref = [c for c, f in zip(correct, flags, strict=True) if not f]

    def mean(xs: list[bool]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    return TabFactScores(
        acc=mean(correct),
        acc_sup=mean(sup),
        acc_ref=mean(ref),
        n=len(correct),
        n_sup=len(sup),
        n_ref=len(ref),
    )


def _check_pairs(predictions: Sequence[str], references: Sequence[str]) -> None:
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("predictions and references must be lists of strings")
    if len(predictions) != len(references):
        raise ValueError(
            f"{len(predictions)} predictions but {len(references)} references; pair them up"
        )


def rouge_l(
    predictions: Sequence[str], references: Sequence[str], *, use_stemmer: bool = True
) -> tuple[float, list[float]]:
    """ROUGE-L F-measure: (corpus mean, per-item scores); an empty input gives (NaN, [])."""
    from rouge_score import rouge_scorer

    _check_pairs(predictions, references)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    items = [
        float(scorer.score(ref, pred)["rougeL"].fmeasure)
        for pred, ref in zip(predictions, references, strict=True)
    ]
    return (sum(items) / len(items) if items else math.nan), items


def sentence_bleu(prediction: str, reference: str) -> float:
    """Sentence BLEU (sacrebleu, 0–100, exponential smoothing) for one item."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(prediction, [reference]).score)


def bleu(predictions: Sequence[str], references: Sequence[str]) -> tuple[float, list[float]]:
    """Corpus BLEU (sacrebleu, 0–100) and per-item sentence BLEU; empty input → (NaN, [])."""
    import sacrebleu

    _check_pairs(predictions, references)
    if not predictions:
        return math.nan, []
    corpus = float(sacrebleu.corpus_bleu(list(predictions), [list(references)]).score)
    items = [sentence_bleu(p, r) for p, r in zip(predictions, references, strict=True)]
    return corpus, items
