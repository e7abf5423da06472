"""TableRAG's answer accuracy for ArcadeQA / BirdQA: `evaluate_qa` of its `evaluate.py`.

Source: google-research/google-research `table_rag/evaluate.py` (commit 4c42994). The paper
(§4.3) scores these benchmarks with "exact-match accuracy"; the code does it as follows, and
so do we: the gold `label` and the predicted answer are each turned into a key by
`normalize_answer` and the two keys must be equal.

`normalize_answer(ans)`:

1. a string that starts with `[` and ends with `]` is evaluated as a Python literal (upstream
   calls `eval`; we call `ast.literal_eval`, which gives the same list for every literal and
   falls back, as upstream does on failure, to the text between the brackets);
2. a list becomes `[str(a).lower() for a in ans]`; any other value becomes `str(ans).lower()`
   with `" and "` replaced by `", "`, then split on `", "` and stripped;
3. each item becomes a WTQ-evaluator value (`to_value`: number, date or normalized string;
   Python 3 `int`/`float` parsing, as upstream runs under Python 3) and the key is
   `"|".join(sorted(set(str(value))))`: order and duplicates do not matter.

Upstream reads the prediction as the text after the last "Answer:" of the solver's output, one
string; a method that lists several items (`Result.items`) is scored on that list (step 2's
list branch), which is what the string "a, b" would give.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from tablequest.eval.metrics.wtq import normalize_text, parse_date, parse_number

__all__ = ["tablerag_answer_key", "tablerag_label_items", "tablerag_match", "tablerag_normalize"]

_AND = re.compile(" and ", flags=re.IGNORECASE)  # upstream: " and " after lower()


def tablerag_normalize(text: str) -> str:
    """Upstream `normalize`: the WTQ evaluator's string normalization under Python 3 `re`."""
    return normalize_text(text, py3=True)


def _parse_number(text: str) -> int | float | None:
    """Upstream's number reading: a leading ``$`` dropped, then Python 3 `int`/`float`."""
    if text.startswith("$"):
        text = text[1:].strip()
    return parse_number(text, py3=True)


def _number_text(amount: int | float) -> str:
    return str(int(amount)) if abs(amount - round(amount)) < 1e-6 else str(float(amount))


def _value_text(original: str) -> str:
    """`str(to_value(original))` of upstream: the text a value contributes to the key."""
    amount = _parse_number(original)
    if amount is not None:
        return _number_text(amount)
    ymd = parse_date(original, py3=True)
    if ymd is not None:
        if ymd[1] == ymd[2] == -1:
            return _number_text(ymd[0])
        return f"{ymd[0]},{ymd[1]},{ymd[2]}"
    return tablerag_normalize(original)


def _literal_list(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text[1:-1]


def tablerag_label_items(ans: object, *, keep_case: bool = False) -> list[str]:
    """Steps 1–2 of `normalize_answer`: the lower-cased answer items of a label or answer
    (`keep_case`: the same items with their case, for showing gold answers)."""
    if isinstance(ans, str) and ans.startswith("[") and ans.endswith("]"):
        ans = _literal_list(ans)
    if isinstance(ans, list | tuple):
        return [str(a) if keep_case else str(a).lower() for a in ans]
    text = str(ans) if keep_case else str(ans).lower()
    text = _AND.sub(", ", text)
    return [span.strip() for span in text.split(", ")]


def tablerag_answer_key(ans: object) -> str:
    """Upstream `normalize_answer(ans)`: the comparison key of a label or an answer."""
    return "|".join(sorted({_value_text(x) for x in tablerag_label_items(ans)}))


def tablerag_match(prediction: str | Sequence[str], label: object) -> bool:
    """True iff `prediction` (the answer text, or its list of items) equals `label` under
    TableRAG's `evaluate_qa`."""
    pred: object = prediction if isinstance(prediction, str) else list(prediction)
    return tablerag_answer_key(pred) == tablerag_answer_key(label)
