"""Grep ranking: TableSeek's Eq. 1, answered from postings where they are exact.

Score(T) = (1/|P|) · Σ_{p∈P} 1[p matches T] over the table's serialized text (headers
included), patterns being case-insensitive regexes (SEEDS.md §1, papers/tableseek.txt Eq. 1).

Speed (ours): a naive scan runs every regex over every table. Results here are exactly the
naive scan's (property-tested against it); each pattern is parsed (`plan`) and answered by
the cheapest exact route:

- ``\bword\b`` — one dictionary lookup in the word-token postings (`tokens.TokenIndex`);
- a bare literal — trigram postings (`trigrams.Trigrams`; exact for three characters), or the
  vocabulary tokens containing it when it is one word held by few tokens;
- anything else — candidates are the tables holding every trigram of the literals every
  match must contain (an OR of ANDs derived from the regex syntax tree) and every whole word
  those literals pin down; each candidate is confirmed by searching the folded text for the
  longest literal and running the regex on the lines holding it (whole text when the
  pattern could match across a line);
- a pattern without any required literal (``\\d{4}``) — the regex over every table.

Case folding is `fold_text` (its docstring says why finding a folded literal is exact);
texts whose fold changes their length (ß → ss) are always confirmed with the regex.

Tie-break (ours, the paper is silent): higher score first, then the shorter serialized table
(the same patterns hitting a smaller table are denser evidence), then the table id.
"""

from __future__ import annotations

import functools
import importlib
import io
import re
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tablequest.corpus.tokens import MIXED, WORD, TokenIndex, token_safe
from tablequest.corpus.trigrams import IntArray, Trigrams, trigram_codes
from tablequest.table.patterns import compile_pattern, fold_text

# The stdlib regex parser (private, untyped; stable since 3.11) gives us a pattern's syntax tree.
sre_parse: Any = importlib.import_module("re._parser")
sre_c: Any = importlib.import_module("re._constants")

_MAX_ALTERNATIVES = 16


# -- required literals of a regex ------------------------------------------------------
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
    req = _seq(list(tree))
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


def _seq(items: list[tuple[Any, Any]]) -> Requirement:
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
            req = _and(req, _seq(list(av[-1])))
        elif op is sre_c.BRANCH:
            alts: list[list[str]] = []
            for branch in av[1]:
                sub = _seq(list(branch))
                if sub is None:
                    alts = []
                    break
                alts.extend(sub)
            if alts and len(alts) <= _MAX_ALTERNATIVES:
                req = _and(req, alts)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, _high, sub = av
            if low >= 1:
                req = _and(req, _seq(list(sub)))
        elif op is sre_c.ATOMIC_GROUP:
            req = _and(req, _seq(list(av)))
    flush()
    return req


_LINE_OPS = frozenset(
    ("LITERAL", "ANY", "IN", "AT", "SUBPATTERN", "BRANCH", "MAX_REPEAT", "MIN_REPEAT")
) | {"POSSESSIVE_REPEAT", "ATOMIC_GROUP"}
_LINE_CATEGORIES = frozenset(("CATEGORY_DIGIT", "CATEGORY_WORD"))


def _single_line(items: list[tuple[Any, Any]]) -> bool:
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
        if name == "SUBPATTERN" and not _single_line(list(av[-1])):
            return False
        if name == "BRANCH" and not all(_single_line(list(b)) for b in av[1]):
            return False
        if name.endswith("REPEAT") and not _single_line(list(av[2])):
            return False
        if name == "ATOMIC_GROUP" and not _single_line(list(av)):
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


@dataclass(frozen=True)
class Plan:
    """How to evaluate one pattern against the index (see `GrepIndex.matching`)."""

    regex: re.Pattern[str]
    word: str | None  # the pattern is `\bword\b` with a token-safe word: a token lookup
    literal: bool  # the pattern is one literal string: a folded substring test decides
    alternatives: list[list[str]] | None  # literals (with MARK at `\b` edges); None = any
    single_line: bool


@functools.lru_cache(maxsize=4096)
def plan(pattern: str) -> Plan:
    """Parse the effective pattern (invalid regexes are literals) into a `Plan`."""
    rx = compile_pattern(pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = list(sre_parse.parse(rx.pattern, re.IGNORECASE))
    req = _seq(items)
    word, literal = None, False
    if req is not None and len(req) == 1 and len(req[0]) == 1:
        lit = req[0][0]
        bare = lit.strip(MARK)
        if all(op is sre_c.LITERAL and av != 0 for op, av in items):
            literal = len(fold_text(bare)) == len(bare)
        elif (
            lit.startswith(MARK)
            and lit.endswith(MARK)
            and token_safe(bare)
            and all(op is sre_c.LITERAL or av is sre_c.AT_BOUNDARY for op, av in items)
            and sum(1 for op, _ in items if op is sre_c.AT) == 2
        ):
            word = bare
    return Plan(rx, word, literal, req, _single_line(items))


# -- the index -------------------------------------------------------------------------
@dataclass
class GrepIndex:
    """Trigram and word-token postings over table texts, plus the texts for confirmation."""

    ids: list[str]
    texts: list[str]
    grams: Trigrams
    tokens: TokenIndex
    _cache: OrderedDict[str, IntArray] = field(default_factory=OrderedDict, repr=False)
    _lengths: npt.NDArray[np.int64] | None = field(default=None, repr=False)
    _id_ranks: npt.NDArray[np.int64] | None = field(default=None, repr=False)
    _folded: list[str] | None = field(default=None, repr=False)
    _unaligned: IntArray | None = field(default=None, repr=False)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> GrepIndex:
        folded = [fold_text(t) for t in texts]
        grams = Trigrams.build(folded)
        index = cls(list(ids), list(texts), grams, TokenIndex.build(texts))
        index._folded = folded
        return index

    def __len__(self) -> int:
        return len(self.ids)

    # persistence: a compact npz blob (ids and texts live in the store itself)
    def arrays_blob(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, allow_pickle=False, **self.grams.arrays(), **self.tokens.arrays())
        return buf.getvalue()

    @classmethod
    def from_blob(cls, ids: Sequence[str], texts: Sequence[str], blob: bytes) -> GrepIndex:
        """Load persisted arrays; ValueError/KeyError when they are of another layout."""
        with np.load(io.BytesIO(blob)) as npz:
            arrays = {name: npz[name] for name in npz.files}
        grams = Trigrams.from_arrays(arrays)
        return cls(list(ids), list(texts), grams, TokenIndex.from_arrays(arrays))

    @property
    def folded(self) -> list[str]:
        """Case-folded texts, for fast literal search before the regex confirms."""
        if self._folded is None:
            self._folded = [fold_text(t) for t in self.texts]
        return self._folded

    def matching(self, pattern: str) -> IntArray:
        """Indices of tables whose text matches `pattern` (exactly the naive scan's answer)."""
        hit = self._cache.get(pattern)
        if hit is not None:
            self._cache.move_to_end(pattern)
            return hit
        found = self._match(plan(pattern))
        self._cache[pattern] = found
        if len(self._cache) > 4096:
            self._cache.popitem(last=False)
        return found

    def _match(self, p: Plan) -> IntArray:
        rx, texts = p.regex, self.texts
        if p.word is not None:
            tables, exact = self.tokens.lookup(p.word)
            if exact:
                return tables
            return self._confirm(tables, rx, fold_text(p.word), p.single_line)
        if p.literal and p.alternatives is not None:
            fast = self._literal_from_index(p.alternatives[0][0], rx)
            if fast is not None:
                return fast
        if p.alternatives is None:
            return np.fromiter(
                (i for i, t in enumerate(texts) if rx.search(t) is not None), dtype=np.int32
            )
        found = [
            self._confirm(self._pool(alt), rx, _anchor(alt), p.single_line, p.literal)
            for alt in p.alternatives
        ]
        return found[0] if len(found) == 1 else np.unique(np.concatenate(found))

    def _literal_from_index(self, literal: str, rx: re.Pattern[str]) -> IntArray | None:
        """A literal pattern answered from postings alone, where they are exact; texts whose
        fold changed length are confirmed with the regex. None: scan the candidates."""
        if self.grams.exact(literal):
            tables = self.grams.candidates(literal)
            exact = True
        else:
            answer = self.tokens.containing(literal) if token_safe(literal) else None
            if answer is None:
                return None
            tables, exact = answer
        if tables is None or tables.size == 0:
            return np.zeros(0, dtype=np.int32)
        if not exact:
            return self._confirm(tables, rx, fold_text(literal), True)
        odd = self.unaligned
        if odd.size == 0:
            return tables
        sure = np.setdiff1d(tables, odd, assume_unique=True)
        odd_hits = np.intersect1d(tables, odd, assume_unique=True)
        check = self._confirm(odd_hits, rx, fold_text(literal), True)
        return np.union1d(sure, check).astype(np.int32)

    @property
    def unaligned(self) -> IntArray:
        """Tables whose case fold changed the text's length (ß → ss): no position mapping."""
        if self._unaligned is None:
            odd = [
                i
                for i, (f, t) in enumerate(zip(self.folded, self.texts, strict=True))
                if len(f) != len(t)
            ]
            self._unaligned = np.asarray(odd, dtype=np.int32)
        return self._unaligned

    def _pool(self, literals: Sequence[str]) -> IntArray | None:
        """Tables that may hold all `literals`: trigram and whole-token constraints (None: any)."""
        pool: IntArray | None = None
        for lit in literals:
            for cand in (self.grams.candidates(lit), *self._token_constraints(lit)):
                if cand is not None:
                    pool = cand if pool is None else np.intersect1d(pool, cand, assume_unique=True)
        return pool

    def _token_constraints(self, literal: str) -> list[IntArray]:
        """Word runs of a literal bounded on both sides must be whole tokens of the text."""
        bare = literal.strip(MARK)
        out: list[IntArray] = []
        if MIXED & set(bare):  # its non-word U+0345 equals a word character under IGNORECASE
            return out
        for m in WORD.finditer(bare):
            left = m.start() > 0 or literal.startswith(MARK)
            right = m.end() < len(bare) or literal.endswith(MARK)
            if left and right and token_safe(m.group()):
                out.append(self.tokens.lookup(m.group())[0])
        return out

    def _confirm(
        self,
        pool: IntArray | None,
        rx: re.Pattern[str],
        anchor: str,
        single_line: bool,
        literal: bool = False,
    ) -> IntArray:
        """The tables of `pool` (None: all) the regex matches, searched near `anchor` only.

        `literal`: the pattern is the anchor itself, so where text and fold align one
        character to one, finding the anchor decides (module docstring of `fold_text`)."""
        indices: Sequence[int] = range(len(self.texts)) if pool is None else pool.tolist()
        texts, folded = self.texts, self.folded
        keep = []
        for i in indices:
            f, t = folded[i], texts[i]
            pos = f.find(anchor)
            if pos < 0:
                continue
            if literal and len(f) == len(t):
                keep.append(i)
                continue
            if not single_line or len(f) != len(t):  # a fold that changed length: whole text
                if rx.search(t) is not None:
                    keep.append(i)
                continue
            while pos >= 0:
                end = f.find("\n", pos)
                end = len(f) if end < 0 else end
                if rx.search(t, f.rfind("\n", 0, pos) + 1, end) is not None:
                    keep.append(i)
                    break
                pos = f.find(anchor, end + 1)  # the next line
        return np.asarray(keep, dtype=np.int32)

    def scores(self, patterns: Sequence[str]) -> npt.NDArray[np.float64]:
        """Eq. 1 for every table: fraction of (distinct) patterns found in it."""
        unique = list(dict.fromkeys(p for p in patterns if p))
        counts = np.zeros(len(self.texts), dtype=np.float64)
        for p in unique:
            counts[self.matching(p)] += 1.0
        return counts / len(unique) if unique else counts

    def top(self, patterns: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The k best (index, score) pairs with score > 0, tie-broken as documented."""
        scores = self.scores(patterns)
        nonzero = np.flatnonzero(scores > 0)
        if nonzero.size == 0 or k <= 0:
            return []
        if self._lengths is None or self._id_ranks is None:
            self._lengths = np.fromiter((len(t) for t in self.texts), dtype=np.int64)
            self._id_ranks = _id_rank(self.ids)
        lengths, id_rank = self._lengths, self._id_ranks
        order = np.lexsort((id_rank[nonzero], lengths[nonzero], -scores[nonzero]))
        chosen = nonzero[order[:k]]
        return [(int(i), float(scores[i])) for i in chosen]


def _anchor(literals: Sequence[str]) -> str:
    """The longest literal, folded: every match holds it, so search for it first."""
    return fold_text(max((lit.replace(MARK, "") for lit in literals), key=len))


def _id_rank(ids: Sequence[str]) -> npt.NDArray[np.int64]:
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(len(ids))
    return rank


def naive_scores(texts: Sequence[str], patterns: Sequence[str]) -> list[float]:
    """Reference implementation of Eq. 1 (a regex over every text); used by tests and benchmarks."""
    unique = list(dict.fromkeys(p for p in patterns if p))
    if not unique:
        return [0.0] * len(texts)
    compiled = [compile_pattern(p) for p in unique]
    return [sum(1 for rx in compiled if rx.search(t)) / len(unique) for t in texts]
