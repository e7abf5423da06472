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

__all__ = ["compile_pattern"]


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` case-insensitively; an invalid regex becomes a literal match."""
    try:
        with warnings.catch_warnings():  # "Possible nested set" and friends are not errors here
            warnings.simplefilter("ignore")
            return re.compile(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return re.compile(re.escape(pattern), re.IGNORECASE)
