"""Search patterns as TableSeek uses them: grep-style, case-insensitive regular expressions.

TableSeek (Tian et al., 2026, Eq. 1 and App. C) matches LLM-generated patterns against the
serialized table. Choices (ours, the paper is silent): matching is case-insensitive; a pattern
that is not a valid regex (an LLM writes "C++" or "(2004") is escaped and matched literally
instead of being dropped; compiled patterns are cached.

**Bounded matching.** Patterns come from an LLM, and through it from table content, so they
are untrusted, and Python's backtracking `re` takes exponential time on ``(a+)+$``. Every
search that may meet such a pattern goes through `bounded(pattern)`, which answers with the
first engine that can take the pattern (and text):

1. ``re`` itself, when the pattern has no variable-width repetition and Python's
   backtracking makes at most `RE_STEP_LIMIT` steps per start position (literals,
   ``\\bword\\b``, phrases, alternations of words, ``\\d{4}``): linear time, the code path
   of before;
2. ``re2`` (RE2, linear time) on the pattern rewritten with `re`'s exact meaning
   (`tablequest.table._translate`: explicit code-point classes, anchors made explicit);
3. ``regex`` (the `regex` module, backtracking) on the same rewrite with a time budget:
   backreferences, lookarounds, possessive repeats, ``\\b`` inside a repeated pattern on
   non-ASCII text. One `PatternBudget` is shared by every text one call searches; past it
   the search raises `PatternDropped` and the caller drops the pattern and records why.
   Compiling is not counted: it is bounded by the rewrite's size (`MAX_REGEX_SOURCE`; a
   longer rewrite is dropped unrun).

Results equal `re`'s in all three (property-tested), except backreferences under
case-insensitivity in tier 3 (see `_translate`). Only tier 3 can run out of time, so an
ordinary pattern is never dropped, however loaded the machine is; tiers 1 and 2 are linear
in the text.

API for callers: `pattern_search(pattern, text, *, budget=None) -> bool` for one text,
`matching_lines(pattern, lines, *, budget=PATTERN_BUDGET) -> list[int]` for the rows of one
table (one budget for all of them); both raise `PatternDropped` (``.pattern``, ``.reason``).
"""

from __future__ import annotations

import importlib
import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from tablequest.errors import RunError
from tablequest.table._charsets import Unsupported
from tablequest.table._translate import Emitter, Shape, backtrack_cost

__all__ = [
    "PATTERN_BUDGET",
    "BoundedPattern",
    "DroppedPattern",
    "PatternBudget",
    "PatternDropped",
    "bounded",
    "compile_pattern",
    "fold_text",
    "matching_lines",
    "pattern_search",
]

sre_parse: Any = importlib.import_module("re._parser")

PATTERN_BUDGET = 1.0  # seconds one pattern may spend in the backtracking fallback per call
RE_STEP_LIMIT = 2048  # tier 1: at most this many backtracking steps per start position
# Rewrites spell classes out, and compiling takes time no budget can interrupt (RE2 ~0.6 µs,
# `regex` ~9 µs per character of pattern): longer rewrites are not compiled.
MAX_RE2_SOURCE = 300_000
MAX_REGEX_SOURCE = 50_000
Engine = Literal["re", "re2", "regex"]

# Characters `re.IGNORECASE` equates with an ASCII letter whose case fold differs.
_FOLD_PAIRS = (("ſ", "s"), ("K", "k"), ("ı", "i"), ("İ", "i"))


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` case-insensitively; an invalid regex becomes a literal match.

    The result is Python's unbounded `re`: search untrusted patterns with `bounded`.
    """
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


@dataclass(frozen=True)
class DroppedPattern:
    """A pattern left out of a ranking or a preview, and why (for traces and results)."""

    pattern: str
    reason: str


class PatternDropped(RunError):
    """A pattern could not be searched within its bound; callers drop it and report `reason`."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"pattern {pattern!r} dropped: {reason}")

    @property
    def record(self) -> DroppedPattern:
        return DroppedPattern(self.pattern, self.reason)


class PatternBudget:
    """Time one pattern may spend in the backtracking fallback, across many texts."""

    def __init__(self, seconds: float = PATTERN_BUDGET) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def exclude(self, seconds: float) -> None:
        """Do not count `seconds` spent on something else (compiling, which is bounded
        by the rewrite's size)."""
        self.deadline += seconds


class BoundedPattern:
    """One pattern with its engines (module docstring); `search` is the bounded test."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.regex = compile_pattern(pattern)  # the meaning every engine reproduces
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = sre_parse.parse(self.regex.pattern, self.regex.flags)
        #: The parse tree of `regex` (``re._parser`` items), for callers that analyse it.
        self.items: list[tuple[Any, Any]] = list(tree)
        self._flags: int = tree.state.flags
        cost = backtrack_cost(self.items)
        #: Python's compiled pattern when tier 1 applies (callers may use pos/endpos on it).
        self.python = self.regex if cost is not None and cost <= RE_STEP_LIMIT else None
        self._re2_fields: tuple[str, ...] | None = None
        self._re2: dict[tuple[bool, ...], Any] = {}
        self._fallback: Any = None
        self._fallback_error: str | None = None

    def __repr__(self) -> str:
        return f"BoundedPattern({self.pattern!r}, engine={self.engine!r})"

    @property
    def engine(self) -> Engine:
        """The engine used for an ASCII text that does not end with a newline."""
        return self.engine_for("x")

    def engine_for(self, text: str) -> Engine:
        """The engine `search` uses for `text`."""
        if self.python is not None:
            return "re"
        return "re2" if self._re2_for(Shape.of(text)) is not None else "regex"

    def search(self, text: str, budget: PatternBudget | None = None) -> bool:
        """Whether the pattern matches somewhere in `text`, as `re` would say.

        Raises PatternDropped when the fallback engine runs past `budget` (a fresh
        `PatternBudget()` when None) or no bounded engine can take the pattern.
        """
        if self.python is not None:
            return self.python.search(text) is not None
        rx = self._re2_for(Shape.of(text))
        if rx is not None:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: RE2 reads UTF-8 only
                pass
            else:
                return bool(rx.Match(_anchor(), data, 0, len(data))[0][0] >= 0)
        return self._search_fallback(text, budget or PatternBudget())

    def _re2_for(self, shape: Shape) -> Any:
        """The compiled RE2 rewrite for texts of this shape, or None (use the fallback)."""
        if self._re2_fields is not None:
            key = tuple(getattr(shape, name) for name in self._re2_fields)
            if key in self._re2:
                return self._re2[key]
        emitter = Emitter("re2", shape)
        compiled = None
        try:
            source = emitter.pattern(self.items, self._flags)
            if len(source) <= MAX_RE2_SOURCE:
                compiled = _re2_compile(source)
        except Unsupported:
            compiled = None
        if self._re2_fields is None:
            self._re2_fields = tuple(sorted(emitter.used))
        self._re2[tuple(getattr(shape, name) for name in self._re2_fields)] = compiled
        return compiled

    def _search_fallback(self, text: str, budget: PatternBudget) -> bool:
        if self._fallback is None and self._fallback_error is None:
            started = time.monotonic()
            try:
                source = Emitter("regex").pattern(self.items, self._flags)
                if len(source) > MAX_REGEX_SOURCE:
                    raise Unsupported(f"its rewrite has {len(source):,} characters")
                import regex  # imported on first need: it takes ~0.1 s

                self._fallback = regex.compile(source)
            except Exception as exc:  # Unsupported, or the regex module refusing the rewrite
                self._fallback_error = f"no bounded regex engine takes it ({exc})"
            budget.exclude(time.monotonic() - started)
        if self._fallback_error is not None:
            raise PatternDropped(self.pattern, self._fallback_error)
        remaining = budget.remaining()
        try:
            if remaining <= 0:
                raise TimeoutError
            return self._fallback.search(text, timeout=remaining) is not None
        except TimeoutError:
            reason = f"ran past its {budget.seconds:g} s time budget (backtracking fallback)"
            raise PatternDropped(self.pattern, reason) from None


@lru_cache(maxsize=1)
def _anchor() -> Any:
    from re2 import _re2

    return _re2.RE2.Anchor.UNANCHORED


def _re2_compile(source: str) -> Any:
    """RE2's own compiled object: the `re2` wrapper's `search` adds microseconds per call
    (offset bookkeeping for match objects) that a yes/no test does not need."""
    import re2
    from re2 import _re2

    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    options.max_mem = 8 << 20  # RE2's default; a rewrite needing more falls back to `regex`
    rx = _re2.RE2(source.encode("utf-8"), options)
    if not rx.ok():
        raise Unsupported(rx.error().decode("utf-8", "replace"))
    return rx


@lru_cache(maxsize=4096)
def bounded(pattern: str) -> BoundedPattern:
    """The bounded matcher of `pattern` (cached)."""
    return BoundedPattern(pattern)


def pattern_search(pattern: str, text: str, *, budget: PatternBudget | None = None) -> bool:
    """Whether `pattern` (TableSeek's semantics) matches in `text`, within the bound.

    Raises PatternDropped (see `BoundedPattern.search`).
    """
    return bounded(pattern).search(text, budget)


def matching_lines(
    pattern: str, lines: Sequence[str], *, budget: float = PATTERN_BUDGET
) -> list[int]:
    """Indices of the `lines` `pattern` matches; one `budget` (seconds) for all of them.

    Raises PatternDropped when the pattern runs past it: drop the pattern, report `.reason`.
    """
    matcher = bounded(pattern)
    clock = PatternBudget(budget)
    return [i for i, line in enumerate(lines) if matcher.search(line, clock)]
