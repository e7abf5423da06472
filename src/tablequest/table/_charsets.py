"""Character sets exactly as Python's `re` matches them, as code-point ranges.

Translating a pattern to RE2 or to the `regex` module must not change what it matches, and
the engines disagree with `re` on case folding (`re` equates ı with i, RE2 does not), on
Unicode classes (RE2's ``\\w`` is ASCII) and on Unicode versions. So every one-character node
of a parsed pattern (a literal, a negated literal, ``.``, a set ``[...]`` with ranges and
``\\d \\w \\s`` classes) is turned into the explicit set of code points that `re` itself
matches with it under the pattern's flags: the translated pattern then contains no case
folding and no class whose meaning depends on the engine.

How the set is found without running `re` on all 1.1 million code points for every node:

- `cased()`: the code points whose ``str.lower()`` or ``str.upper()`` differs from themselves
  (2,927 in Unicode 14, all below U+20000). Under IGNORECASE `re` lower-cases the text
  character before comparing, so a character outside this set is matched exactly when it is
  matched case-sensitively, and no case-insensitive literal matches a character outside it
  other than itself (tests check both over every code point). The members of the set are
  tested with `re` itself.
- ``\\d``, ``\\w`` and ``\\s`` (Unicode or ASCII) are found once per process by running `re`
  over a string of every code point.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tablequest.errors import RunError

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, non-adjacent, inclusive

MAX_CODE = 0x10FFFF
SURROGATES: Ranges = ((0xD800, 0xDFFF),)
_CASE_LIMIT = 0x20000  # no code point at or above this has a case mapping (tested)
_CATEGORY = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_WORD": r"\w",
}
_NEGATED = {
    "CATEGORY_NOT_DIGIT": "CATEGORY_DIGIT",
    "CATEGORY_NOT_SPACE": "CATEGORY_SPACE",
    "CATEGORY_NOT_WORD": "CATEGORY_WORD",
}
_FLAGS = re.IGNORECASE | re.ASCII | re.DOTALL


class Unsupported(RunError):
    """A construct the target engine cannot express with `re`'s exact meaning."""


# -- range arithmetic ------------------------------------------------------------------
def merge(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, disjoint, non-adjacent form of any ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CODE:
        out.append((start, MAX_CODE))
    return tuple(out)


def subtract(ranges: Ranges, other: Ranges) -> Ranges:
    """Code points of `ranges` not in `other`."""
    return complement(merge((*complement(ranges), *other)))


def from_points(points: Iterable[int]) -> Ranges:
    return merge((p, p) for p in points)


# -- what `re` matches -------------------------------------------------------------------
@functools.cache
def _every_code_point() -> str:
    return np.arange(MAX_CODE + 1, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@functools.cache
def cased() -> tuple[str, Ranges]:
    """Code points with a case mapping, as a string to search and as ranges."""
    text = "".join(
        ch for ch in _every_code_point()[:_CASE_LIMIT] if ch.lower() != ch or ch.upper() != ch
    )
    return text, from_points(map(ord, text))


def _found(rx: re.Pattern[str], text: str) -> Ranges:
    """The code points of `text` that `rx` (one character wide) matches, as ranges."""
    hits = "".join(rx.findall(text))
    if not hits:
        return ()
    codes = np.unique(np.frombuffer(hits.encode("utf-32-le", "surrogatepass"), dtype="<u4"))
    breaks = np.flatnonzero(np.diff(codes) != 1)
    starts = [int(codes[0]), *codes[breaks + 1].tolist()]
    ends = [*codes[breaks].tolist(), int(codes[-1])]
    return tuple(zip(starts, ends, strict=True))


def _runs(rx: Any) -> Ranges:
    """Ranges of code points a ``(?:X)+`` pattern matches in the string of every code point
    (character i of that string is code point i, so a run's span is a range)."""
    return tuple((m.start(), m.end() - 1) for m in rx.finditer(_every_code_point()))


@functools.lru_cache(maxsize=16)
def category(name: str, ascii_only: bool) -> Ranges:
    """The code points `re` matches with ``\\d``, ``\\w``, ``\\s`` (or their negations)."""
    if name in _NEGATED:
        return complement(category(_NEGATED[name], ascii_only))
    return _runs(re.compile(_CATEGORY[name] + "+", re.ASCII if ascii_only else 0))


def word(flags: int) -> Ranges:
    """Word characters for ``\\b`` under `flags` (Unicode unless re.ASCII)."""
    return category("CATEGORY_WORD", bool(flags & re.ASCII))


def _escape(code: int) -> str:
    return f"\\U{code:08x}"


def _set_source(items: Sequence[tuple[Any, Any]]) -> str:
    """A `re` set with the same members as parsed set `items` (no NEGATE)."""
    parts = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            parts.append(_escape(av))
        elif name == "RANGE":
            parts.append(f"{_escape(av[0])}-{_escape(av[1])}")
        elif name == "CATEGORY" and (av in _CATEGORY or av in _NEGATED):
            src = _CATEGORY[_NEGATED.get(av, av)]
            parts.append(src.upper() if av in _NEGATED else src)
        else:
            raise Unsupported(f"set item {name}")
    return "[" + "".join(parts) + "]"


def _case_sensitive(items: Sequence[tuple[Any, Any]], flags: int) -> Ranges:
    spans: list[tuple[int, int]] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            spans.append((av, av))
        elif name == "RANGE":
            spans.append((av[0], av[1]))
        elif name == "CATEGORY" and (av in _CATEGORY or av in _NEGATED):
            spans.extend(category(av, bool(flags & re.ASCII)))
        else:
            raise Unsupported(f"set item {name}")
    return merge(spans)


@functools.lru_cache(maxsize=4096)
def _positive_set(items: tuple[tuple[str, Any], ...], flags: int) -> Ranges:
    exact = _case_sensitive(items, flags)
    if not flags & re.IGNORECASE:
        return exact
    text, cased_ranges = cased()
    rx = re.compile(_set_source(items), flags & _FLAGS)
    return merge((*subtract(exact, cased_ranges), *_found(rx, text)))


@functools.lru_cache(maxsize=4096)
def _literal(code: int, flags: int) -> Ranges:
    if not flags & re.IGNORECASE:
        return ((code, code),)
    text, _ = cased()
    return _found(re.compile(_escape(code), flags & _FLAGS), text + chr(code))


def node_set(op: Any, av: Any, flags: int) -> Ranges:
    """Code points one parsed one-character node matches under `flags` (see module doc)."""
    name = str(op)
    if name == "ANY":
        return ((0, MAX_CODE),) if flags & re.DOTALL else complement(((10, 10),))
    if name == "LITERAL":
        return _literal(av, flags)
    if name == "NOT_LITERAL":
        return complement(_literal(av, flags))
    if name == "IN":
        negate = bool(av) and str(av[0][0]) == "NEGATE"
        items = tuple(
            (str(op2), str(av2) if str(op2) == "CATEGORY" else av2)
            for op2, av2 in (av[1:] if negate else av)
        )
        positive = _positive_set(items, flags & _FLAGS)
        return complement(positive) if negate else positive
    raise Unsupported(f"not a character node: {name}")


# -- rendering ---------------------------------------------------------------------------
def _body(ranges: Ranges, escape: Any) -> str:
    return "".join(escape(lo) if lo == hi else f"{escape(lo)}-{escape(hi)}" for lo, hi in ranges)


def _re2_escape(code: int) -> str:
    return f"\\x{{{code:x}}}"


@functools.lru_cache(maxsize=1024)
def re2_class(ranges: Ranges) -> str:
    """The set as an RE2 class (UTF-8 text holds no surrogates, so they are left out)."""
    ranges = subtract(ranges, SURROGATES)
    if not ranges:
        return r"[^\x00-\x{10ffff}]"
    negated = subtract(complement(ranges), SURROGATES)
    if not negated:
        return r"[\x00-\x{10ffff}]"
    if len(negated) < len(ranges):
        return "[^" + _body(negated, _re2_escape) + "]"
    return "[" + _body(ranges, _re2_escape) + "]"


def _plain_regex_class(ranges: Ranges) -> str:
    if not ranges:
        return "(?!)"
    negated = complement(ranges)
    if not negated:
        return r"[\U00000000-\U0010ffff]"
    if len(negated) < len(ranges):
        return "[^" + _body(negated, _escape) + "]"
    return "[" + _body(ranges, _escape) + "]"


# Python's \w spelled out takes ~730 ranges, which the `regex` module compiles slowly (and
# ``\b`` needs it four times); relative to `regex`'s own letters-and-digits it takes ~90.
_REGEX_BASES = (r"[\p{L}\p{N}_]", r"[^\p{L}\p{N}_]")
_LARGE = 64  # ranges; smaller classes are always spelled out


@functools.cache
def _regex_base(source: str) -> Ranges:
    import regex

    return _runs(regex.compile(f"(?:{source})+"))


@functools.lru_cache(maxsize=1024)
def regex_class(ranges: Ranges) -> str:
    """The set as a `regex` module class (which, like `re`, can meet surrogates).

    A large set is written as one of `regex`'s own classes (whose members are found by
    running `regex` itself) minus a lookahead for what it has too many, plus what it lacks,
    when that is shorter.
    """
    plain = _plain_regex_class(ranges)
    if min(len(ranges), len(complement(ranges))) <= _LARGE:
        return plain
    best = plain
    for base in _REGEX_BASES:
        members = _regex_base(base)
        extra, missing = subtract(members, ranges), subtract(ranges, members)
        guard = f"(?!{_plain_regex_class(extra)})" if extra else ""
        lacking = f"|{_plain_regex_class(missing)}" if missing else ""
        candidate = f"(?:{guard}{base}{lacking})"
        if len(candidate) < len(best):
            best = candidate
    return best
