"""HiTab exact match: the official `hmt_score` of microsoft/HiTab, ported.

HiTab's QA code (`qa/table/utils.py` at commit 469b5c7, "QA code and updated HiTab data")
scores an answer with `hmt_score(prediction, answer)`, which this module follows:

- `hmt_process_answer`: a number stays a float; a string is read by `naive_str_to_float`
  (lower-cased and stripped; one leading "(" and one trailing "%" or ")" dropped, commas
  removed, then Python's `float`), else normalised with the WikiTableQuestions `normalize`
  (as that code runs under Python 3: `qa/datadump/utils.py`); a list of one item is that
  item, a longer list is a list of processed items.
- `hmt_equal`: equal types only; strings equal, numbers within 1e-5, lists of the same length
  equal item by item **in order** (the evaluator compares lists position by position, not as
  sets: the gold lists of HiTab's argmax/top-k questions are in the table's order, those of
  its "none" questions in the question's order).

What the evaluator does not say, and we choose: the prediction is the method's own item list
(`Result.items`, split in the method's prompt's list format); when a list of several items
does not match, the whole answer is tried as one item (a comma-separated format cannot tell
"mining, oil and gas extraction, and utilities" from three items), as for WTQ. The gold side
is the sample's `answer` list as released (numbers as numbers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tablequest.eval.metrics.wtq import normalize_text

__all__ = ["hitab_equal", "hitab_match", "hitab_process"]

Processed = float | str | list["Processed"]


def _str_to_float(text: str) -> float | str:
    """`naive_str_to_float`: the text as a number when it reads as one, else normalised."""
    sanitized = text
    try:
        if sanitized[0] == "(":
            sanitized = sanitized[1:]
        if sanitized[-1] in ("%", ")"):
            sanitized = sanitized[:-1]
        return float(sanitized.replace(",", ""))
    except (IndexError, ValueError):
        return normalize_text(text, py3=True)


def hitab_process(answer: object) -> Processed:
    """`hmt_process_answer`: numbers and number-like strings as floats, other strings
    normalised, a one-item list as its item, a longer list item by item.

    Raises:
        ValueError: an empty list (the evaluator fails on one) or an unsupported value.
    """
    if isinstance(answer, bool):
        raise ValueError(f"not a HiTab answer: {answer!r}")
    if isinstance(answer, (int, float)):
        return float(answer)
    if isinstance(answer, str):
        return _str_to_float(answer.strip().lower())
    if isinstance(answer, (list, tuple)):
        if not answer:
            raise ValueError("an empty answer list")
        if len(answer) == 1:
            return hitab_process(answer[0])
        return [hitab_process(a) for a in answer]
    raise ValueError(f"not a HiTab answer: {answer!r}")


def hitab_equal(prediction: Processed, answer: Processed) -> bool:
    """`hmt_equal`: same type, then string equality, numbers within 1e-5, lists in order."""
    if type(prediction) is not type(answer):
        return False
    if isinstance(prediction, str):
        return prediction == answer
    if isinstance(prediction, float) and isinstance(answer, float):
        return math.fabs(prediction - answer) < 1e-5
    if isinstance(prediction, list) and isinstance(answer, list):
        if len(prediction) != len(answer):
            return False
        return all(hitab_equal(p, a) for p, a in zip(prediction, answer, strict=True))
    return False


def hitab_match(prediction: Sequence[str], gold: Sequence[object]) -> bool:
    """`hmt_score(prediction, gold) == 1`: the item list `prediction` against the gold answer
    list (numbers or strings). An empty prediction or gold list never matches."""
    if isinstance(prediction, str):
        raise TypeError(f"prediction must be a list of items, got the string {prediction!r}")
    if not prediction or not gold:
        return False
    return hitab_equal(hitab_process(list(prediction)), hitab_process(list(gold)))
