"""What every match of a regex must contain, read from its syntax tree (for `grep`).

`required_literals` gives the literals every match contains, as an OR of ANDs, so candidate
tables can be found from trigram and token postings before any regex runs; `single_line`
says whether a match can span or look past a line, so confirmation may search only the
lines holding a literal. Both read Python's own parse tree (`re._parser`, private but stable
since 3.11), so they agree with what `re` will match.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

from tablequest.corpus.lexical.trigrams import trigram_codes

sre_parse: Any = importlib.import_module("re._parser")
sre_c: Any = importlib.import_module("re._constants")

_MAX_ALTERNATIVES = 16


Requirement = list[list[str]] | None  # OR of ANDs of literals; None = anything may match
MARK = "\x00"  # edge of a literal that sits on a `\b` (stripped before matching text)


def required_literals(pattern: str) -> Requirement:
    """Literals every match of `pattern` contains, as an OR of ANDs (None: no constraint)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = sre_parse.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError):
        return [[pattern]]  # invalid regexes are matched literally
    req = seq_requirement(list(tree))
    if req is None:
        return None
    useful = [[lit.replace(MARK, "") for lit in alt if _has_trigram(lit)] for alt in req]
    return None if any(not alt for alt in useful) else useful


def _has_trigram(lit: str) -> bool:
    return trigram_codes(lit).size > 0


def _and(a: Requirement, b: Requirement) -> Requirement:
    if a is None:
        return b
    if b is None:
        return a
    product = [x + y for x in a for y in b]
    return product if len(product) <= _MAX_ALTERNATIVES else (a if len(a) <= len(b) else b)


def seq_requirement(items: list[tuple[Any, Any]]) -> Requirement:
    req: Requirement = None
    run: list[str] = []
    left_boundary = False  # a `\b` just before the run being collected

    def flush(right_boundary: bool = False) -> None:
        nonlocal req, run
        if run:
            req = _and(req, [["".join(run) + (MARK if right_boundary else "")]])
            run = []

    for op, av in items:
        if op is sre_c.LITERAL and av != 0:  # a NUL in a pattern is no constraint (MARK)
            if not run and left_boundary:
                run.append(MARK)
            left_boundary = False
            run.append(chr(av))
            continue
        if op is sre_c.AT and av is sre_c.AT_BOUNDARY:
            flush(right_boundary=True)
            left_boundary = True
            continue
        flush()
        left_boundary = False
        if op is sre_c.SUBPATTERN:
            req = _and(req, seq_requirement(list(av[-1])))
        elif op is sre_c.BRANCH:
            alts: list[list[str]] = []
            for branch in av[1]:
                sub = seq_requirement(list(branch))
                if sub is None:
                    alts = []
                    break
                alts.extend(sub)
            if alts and len(alts) <= _MAX_ALTERNATIVES:
                req = _and(req, alts)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, _high, sub = av
            if low >= 1:
                req = _and(req, seq_requirement(list(sub)))
        elif op is sre_c.ATOMIC_GROUP:
            req = _and(req, seq_requirement(list(av)))
    flush()
    return req


_LINE_OPS = frozenset(
    ("LITERAL", "ANY", "IN", "AT", "SUBPATTERN", "BRANCH", "MAX_REPEAT", "MIN_REPEAT")
) | {"POSSESSIVE_REPEAT", "ATOMIC_GROUP"}
_LINE_CATEGORIES = frozenset(("CATEGORY_DIGIT", "CATEGORY_WORD"))


def single_line(items: list[tuple[Any, Any]]) -> bool:
    """True when no match can contain a newline nor depend on text beyond its line.

    Such a pattern matches a text exactly when it matches one of its lines, which lets
    confirmation run the regex on the lines holding a required literal only.
    """
    for op, av in items:
        name = str(op)
        if name not in _LINE_OPS:
            return False
        if name == "LITERAL" and av == 10:
            return False
        if name == "AT" and str(av) not in ("AT_BOUNDARY", "AT_NON_BOUNDARY"):
            return False
        if name == "IN" and not _line_set(av):
            return False
        if name == "SUBPATTERN" and not single_line(list(av[-1])):
            return False
        if name == "BRANCH" and not all(single_line(list(b)) for b in av[1]):
            return False
        if name.endswith("REPEAT") and not single_line(list(av[2])):
            return False
        if name == "ATOMIC_GROUP" and not single_line(list(av)):
            return False
    return True


def _line_set(items: list[tuple[Any, Any]]) -> bool:
    for op, av in items:
        name = str(op)
        if name == "LITERAL" and av != 10:
            continue
        if name == "RANGE" and not av[0] <= 10 <= av[1]:
            continue
        if name == "CATEGORY" and str(av) in _LINE_CATEGORIES:
            continue
        return False  # NEGATE, \s, \W, \D, a newline: may match "\n"
    return True
