"""Search patterns as TableSeek uses them: grep-style, case-insensitive regular expressions.

TableSeek (papers/tableseek.txt, Eq. 1 and App. C) matches LLM-generated patterns against the
serialized table. Choices (ours, the paper is silent): matching is case-insensitive; a pattern
that is not a valid regex (an LLM writes "C++" or "(2004") is escaped and matched literally
instead of being dropped; compiled patterns are cached.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

__all__ = ["compile_pattern", "fold_text"]

# Characters `re.IGNORECASE` equates with an ASCII letter whose case fold differs.
_FOLD_PAIRS = (("ſ", "s"), ("K", "k"), ("ı", "i"), ("İ", "i"))


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` case-insensitively; an invalid regex becomes a literal match."""
    try:
        with warnings.catch_warnings():  # "Possible nested set" and friends are not errors here
            warnings.simplefilter("ignore")
            return re.compile(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return re.compile(re.escape(pattern), re.IGNORECASE)


def fold_text(text: str) -> str:
    """The case fold `re.IGNORECASE` agrees with, for fast literal search.

    Python's case-insensitive matching equates two characters when their simple lower cases
    agree (plus the extra pairs of `re._casefix`). After mapping ſ, K, ı and İ to their ASCII
    partners, two characters are equated by `re` exactly when their one-character case folds
    are equal (checked over every code point), so a literal `re` finds in a text has its fold
    inside the text's fold. Folds that change length (ß → ss) need the regex to confirm.
    """
    if text.isascii():  # O(1) check; lower() has a fast ASCII path, casefold has not
        return text.lower()
    for ch, ascii_ch in _FOLD_PAIRS:  # str.replace is much faster than str.translate
        if ch in text:
            text = text.replace(ch, ascii_ch)
    return text.casefold()
