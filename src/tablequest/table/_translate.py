"""A parsed Python pattern rewritten for RE2 or the `regex` module, with `re`'s meaning.

Search only asks *whether* a text holds a match, so the rewrite may change which match is
found but never whether one exists. Rules (ours):

- one-character nodes become explicit code-point classes (`_charsets`), so no case folding
  and no engine-specific class is left; the rewritten pattern is case-sensitive;
- groups become non-capturing for RE2; for `regex` they stay capturing (backreferences keep
  their numbers) and lazy or possessive repeats keep their kind;
- ``^``/``\\A`` are ``\\A``; ``\\Z`` is RE2's ``\\z``; multi-line ``^``/``$`` keep their
  meaning (RE2 ``(?m:^)``, lookarounds for `regex`);
- ``$`` (end, or before a final newline): for `regex` a lookahead; for RE2 ``\\n?\\z`` when
  nothing follows it in the pattern (consuming the newline cannot matter there), else ``\\z``
  when the text does not end with a newline;
- ``\\b``/``\\B``: for `regex` lookarounds over Python's word class; for RE2 its own ASCII
  ``\\b`` where that is the same thing (ASCII text, or the pattern's re.ASCII flag), and
  ``\\B`` only on a non-empty text (Python before 3.14 never matches ``\\B`` in ``""``);
- a large class is written once for `regex`, in a ``(?(DEFINE)...)`` group called by name
  (``\b`` alone needs Python's word class four times, and `regex` compiles big classes
  slowly);
- RE2 cannot express backreferences, lookarounds, conditionals, atomic groups, possessive
  repeats or counts above 1000: those raise `Unsupported` (the caller uses `regex`).

Where a rewrite depends on the text, `Shape` says what it may assume, and `Emitter.used`
records which of its fields were consulted, so a caller caches one rewrite per distinct
answer rather than per text. Backreferences under IGNORECASE compare with the `regex`
module's case folding (``(?i:\\1)``); that is the one place where its meaning may differ
from `re` (ſ/s, say).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from tablequest.table._charsets import (
    Ranges,
    Unsupported,
    node_set,
    re2_class,
    regex_class,
    word,
)

sre_c: Any = importlib.import_module("re._constants")

Flavor = Literal["re2", "regex"]
RE2_MAX_REPEAT = 1000
B_MATCHES_EMPTY = re.search(r"\B", "") is not None  # changed in Python 3.14
_CHAR_NODES = frozenset(("LITERAL", "NOT_LITERAL", "ANY", "IN"))
_REPEATS = frozenset(("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"))


@dataclass(frozen=True)
class Shape:
    """What an RE2 rewrite may assume about the text it will search."""

    ascii: bool = True
    ends_with_newline: bool = False
    empty: bool = False

    @classmethod
    def of(cls, text: str) -> Shape:
        return cls(text.isascii(), text.endswith("\n"), not text)


class Emitter:
    """Rewrites parse-tree items (`re._parser` output) into one flavor's syntax."""

    def __init__(self, flavor: Flavor, shape: Shape = Shape()) -> None:
        self.flavor = flavor
        self.shape = shape
        self.used: set[str] = set()  # Shape fields consulted
        self.problem: str | None = None  # why RE2 cannot take this pattern on this shape

    def char_class(self, ranges: Ranges) -> str:
        return re2_class(ranges) if self.flavor == "re2" else regex_class(ranges)

    def pattern(self, items: list[tuple[Any, Any]], flags: int) -> str:
        """The rewritten pattern; raises Unsupported after visiting every node."""
        out = self.seq(items, flags, tail=True)
        if self.problem is not None:
            raise Unsupported(self.problem)
        return out

    def _need(self, field_name: str, ok: bool, why: str) -> None:
        self.used.add(field_name)
        if not ok and self.problem is None:
            self.problem = why

    def _refuse(self, why: str) -> None:
        if self.problem is None:
            self.problem = why

    def seq(self, items: list[tuple[Any, Any]], flags: int, tail: bool) -> str:
        last = len(items) - 1
        return "".join(
            self.node(op, av, flags, tail and i == last) for i, (op, av) in enumerate(items)
        )

    def node(self, op: Any, av: Any, flags: int, tail: bool) -> str:
        name = str(op)
        if name in _CHAR_NODES:
            return self.char_class(node_set(op, av, flags))
        if name == "SUBPATTERN":
            group, add, remove, sub = av
            inner = self.seq(list(sub), (flags | add) & ~remove, tail)
            capture = self.flavor == "regex" and group is not None
            return f"({inner})" if capture else f"(?:{inner})"
        if name == "BRANCH":
            return "(?:" + "|".join(self.seq(list(b), flags, tail) for b in av[1]) + ")"
        if name in _REPEATS:
            return self.repeat(name, av, flags)
        if name == "AT":
            return self.anchor(str(av), flags, tail)
        if self.flavor == "re2":
            self._refuse(f"RE2 has no {name.lower()}")
            return ""
        return self.extended(name, av, flags)

    def repeat(self, name: str, av: Any, flags: int) -> str:
        low, high, sub = av
        body = self.seq(list(sub), flags, tail=False)
        unbounded = high is sre_c.MAXREPEAT
        count = f"{{{low},}}" if unbounded else f"{{{low},{high}}}"
        if self.flavor == "re2":
            if name == "POSSESSIVE_REPEAT":
                self._refuse("RE2 has no possessive repeat")
            if low > RE2_MAX_REPEAT or (not unbounded and high > RE2_MAX_REPEAT):
                self._refuse(f"RE2 counts stop at {RE2_MAX_REPEAT}")
            return f"(?:{body}){count}"
        kind = {"MIN_REPEAT": "?", "POSSESSIVE_REPEAT": "+"}.get(name, "")
        return f"(?:{body}){count}{kind}"

    def anchor(self, at: str, flags: int, tail: bool) -> str:
        multiline = bool(flags & re.MULTILINE)
        re2 = self.flavor == "re2"
        if at == "AT_BEGINNING_STRING" or (at == "AT_BEGINNING" and not multiline):
            return r"\A"
        if at == "AT_BEGINNING":
            return "(?m:^)" if re2 else r"(?:\A|(?<=\n))"
        if at == "AT_END_STRING":
            return r"\z" if re2 else r"\Z"
        if at == "AT_END" and multiline:
            return "(?m:$)" if re2 else r"(?:\Z|(?=\n))"
        if at == "AT_END":
            if not re2:
                return r"(?:\Z|(?=\n\Z))"
            if tail:
                return r"(?:\n?\z)"
            self._need("ends_with_newline", not self.shape.ends_with_newline, "$ before a newline")
            return r"\z"
        if at in ("AT_BOUNDARY", "AT_NON_BOUNDARY"):
            return self.boundary(at == "AT_BOUNDARY", flags)
        raise Unsupported(f"anchor {at}")

    def boundary(self, positive: bool, flags: int) -> str:
        if self.flavor == "re2":
            if not flags & re.ASCII:
                self._need("ascii", self.shape.ascii, r"\b on non-ASCII text")
            if not positive and not B_MATCHES_EMPTY:
                self._need("empty", not self.shape.empty, r"\B on an empty text")
            return r"\b" if positive else r"\B"
        w = self.char_class(word(flags))
        if positive:
            return f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))"
        guard = "" if B_MATCHES_EMPTY else r"(?!\A\Z)"
        return f"(?:{guard}(?:(?<={w})(?={w})|(?<!{w})(?!{w})))"

    def extended(self, name: str, av: Any, flags: int) -> str:
        """Constructs only the `regex` flavor has."""
        if name == "GROUPREF":
            return f"(?i:\\{av})" if flags & re.IGNORECASE else f"(?:\\{av})"
        if name == "GROUPREF_EXISTS":
            group, yes, no = av
            other = self.seq(list(no), flags, tail=False) if no is not None else ""
            return f"(?({group}){self.seq(list(yes), flags, tail=False)}|{other})"
        if name in ("ASSERT", "ASSERT_NOT"):
            direction, sub = av
            head = {
                ("ASSERT", 1): "(?=",
                ("ASSERT", -1): "(?<=",
                ("ASSERT_NOT", 1): "(?!",
                ("ASSERT_NOT", -1): "(?<!",
            }[(name, direction)]
            return head + self.seq(list(sub), flags, tail=False) + ")"
        if name == "ATOMIC_GROUP":
            return "(?>" + self.seq(list(av), flags, tail=False) + ")"
        raise Unsupported(f"construct {name}")


# -- how much work Python's backtracking can do ------------------------------------------
_PATH_CAP = 1 << 20


def backtrack_cost(items: list[tuple[Any, Any]]) -> int | None:
    """Upper bound on `re`'s steps per start position; None when a repeat has variable width.

    Without variable-width repetition a match attempt follows at most `paths` alternatives
    of at most `width` steps each, so a search is linear in the text, as RE2's is.
    """
    found = _cost(items)
    if found is None:
        return None
    paths, width = found
    return paths * (width + 1)


def _cost(items: list[tuple[Any, Any]]) -> tuple[int, int] | None:
    paths, width = 1, 0
    for op, av in items:
        part = _node_cost(str(op), av, width)
        if part is None:
            return None
        paths = min(_PATH_CAP, paths * part[0])
        width += part[1]
    return paths, width


def _node_cost(name: str, av: Any, width_so_far: int) -> tuple[int, int] | None:
    if name in _CHAR_NODES:
        return 1, 1
    if name in ("AT", "GROUPREF"):  # a backreference repeats text matched before it
        return (1, 0) if name == "AT" else (1, width_so_far)
    if name == "SUBPATTERN":
        return _cost(list(av[-1]))
    if name == "ATOMIC_GROUP":
        return _cost(list(av))
    if name in ("ASSERT", "ASSERT_NOT"):
        return _cost(list(av[1]))
    if name in ("BRANCH", "GROUPREF_EXISTS"):
        branches = av[1] if name == "BRANCH" else [b for b in av[1:] if b is not None]
        parts = [_cost(list(b)) for b in branches]
        if any(p is None for p in parts):
            return None
        known = [p for p in parts if p is not None]
        return min(_PATH_CAP, sum(p[0] for p in known)), max((p[1] for p in known), default=0)
    if name in _REPEATS:
        low, high, sub = av
        inner = _cost(list(sub))
        if low != high or inner is None:
            return None
        paths = 1 if inner[0] == 1 else min(_PATH_CAP, inner[0] ** min(low, 64))
        return paths, inner[1] * low
    return None
