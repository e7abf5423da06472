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
import unicodedata
from collections.abc import Sequence
from math import isinf, isnan

__all__ = ["tablerag_answer_key", "tablerag_label_items", "tablerag_match", "tablerag_normalize"]

_SINGLE_QUOTES = re.compile(r"[‘’´`]")
_DOUBLE_QUOTES = re.compile(r"[“”]")
_DASHES = re.compile(r"[‐‑‒–—−]")
_CITATIONS = re.compile(r"((?<!^)\[[^\]]*\]|\[\d+\]|[•♦†‡*#+])*$")
_PARENTHESES = re.compile(r"(?<!^)( \([^)]*\))*$")
_OUTER_QUOTES = re.compile(r'^"([^"]*)"$')
_WHITESPACE = re.compile(r"\s+", flags=re.U)
_AND = re.compile(" and ", flags=re.IGNORECASE)  # upstream: " and " after lower()


def tablerag_normalize(text: str) -> str:
    """Upstream `normalize` (the WTQ evaluator's string normalization, Python 3 `re`)."""
    x = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn")
    x = _SINGLE_QUOTES.sub("'", x)
    x = _DOUBLE_QUOTES.sub('"', x)
    x = _DASHES.sub("-", x)
    while True:
        old_x = x
        x = _CITATIONS.sub("", x.strip())
        x = _PARENTHESES.sub("", x.strip())
        x = _OUTER_QUOTES.sub(r"\1", x.strip())
        if x == old_x:
            break
    if x and x[-1] == ".":
        x = x[:-1]
    return _WHITESPACE.sub(" ", x).lower().strip()


def _parse_number(text: str) -> int | float | None:
    if text.startswith("$"):
        text = text[1:].strip()
    try:
        return int(text)
    except ValueError:
        try:
            amount = float(text)
        except ValueError:
            return None
        return None if isnan(amount) or isinf(amount) else amount


def _parse_date(text: str) -> tuple[int, int, int] | None:
    try:
        ymd = text.lower().split("-")
        if len(ymd) != 3:
            return None
        year = -1 if ymd[0] in ("xx", "xxxx") else int(ymd[0])
        month = -1 if ymd[1] == "xx" else int(ymd[1])
        day = -1 if ymd[2] == "xx" else int(ymd[2])
    except ValueError:
        return None
    if year == month == day == -1 or not (month == -1 or 1 <= month <= 12):
        return None
    if not (day == -1 or 1 <= day <= 31):
        return None
    return year, month, day


def _number_text(amount: int | float) -> str:
    return str(int(amount)) if abs(amount - round(amount)) < 1e-6 else str(float(amount))


def _value_text(original: str) -> str:
    """`str(to_value(original))` of upstream: the text a value contributes to the key."""
    amount = _parse_number(original)
    if amount is not None:
        return _number_text(amount)
    ymd = _parse_date(original)
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
