"""Grep ranking: TableSeek's Eq. 1 with a trigram pre-filter.

Score(T) = (1/|P|) · Σ_{p∈P} 1[p matches T] over the table's serialized text (headers
included), patterns being case-insensitive regexes (SEEDS.md §1, papers/tableseek.txt Eq. 1).

Speed (ours): a naive scan runs every regex over every table. We keep an ASCII trigram index
(postings as sorted int32 arrays in CSR form, built with numpy) and, for each pattern, derive
from its regex syntax tree the literal strings any match must contain (an OR of ANDs). Only
tables holding all trigrams of those literals are confirmed with the real regex, so results
are exactly those of the naive scan. Patterns without a literal of three or more ASCII
letters/digits fall back to the full scan.

Tie-break (ours, the paper is silent): higher score first, then the shorter serialized table
(the same patterns hitting a smaller table are denser evidence), then the table id.
"""

from __future__ import annotations

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

from tablequest.table.patterns import compile_pattern

# The stdlib regex parser (private, untyped; stable since 3.11) gives us a pattern's syntax tree.
sre_parse: Any = importlib.import_module("re._parser")
sre_c: Any = importlib.import_module("re._constants")

_ALPHABET = 37  # 0 = separator, 1..26 = a-z, 27..36 = 0-9
_N_CODES = _ALPHABET**3
_LUT = np.zeros(256, dtype=np.int32)
for _i, _ch in enumerate("abcdefghijklmnopqrstuvwxyz0123456789", start=1):
    _LUT[ord(_ch)] = _i
# Characters that Unicode case-insensitive matching equates with ASCII letters.
_FOLD = str.maketrans({"ſ": "s", "K": "k", "ı": "i", "İ": "i"})
_MAX_ALTERNATIVES = 16

IntArray = npt.NDArray[np.int32]


def fold(text: str) -> bytes:
    """Lower-case ASCII projection of `text` used for trigrams (other chars become '?')."""
    return text.translate(_FOLD).lower().encode("ascii", "replace")


def _trigram_codes(data: bytes) -> npt.NDArray[np.int64]:
    c = _LUT[np.frombuffer(data, dtype=np.uint8)]
    if c.size < 3:
        return np.zeros(0, dtype=np.int64)
    tri = (c[:-2] * _ALPHABET + c[1:-1]) * _ALPHABET + c[2:]
    valid = (c[:-2] > 0) & (c[1:-1] > 0) & (c[2:] > 0)
    return np.unique(tri[valid]).astype(np.int64)


# -- required literals of a regex ------------------------------------------------------
Requirement = list[list[str]] | None  # OR of ANDs of literals; None = anything may match


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
    useful = [[lit for lit in alt if _has_trigram(lit)] for alt in req]
    return None if any(not alt for alt in useful) else useful


def _has_trigram(lit: str) -> bool:
    return _trigram_codes(fold(lit)).size > 0


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

    def flush() -> None:
        nonlocal req, run
        if run:
            req = _and(req, [["".join(run)]])
            run = []

    for op, av in items:
        if op is sre_c.LITERAL:
            run.append(chr(av))
            continue
        flush()
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


# -- the index -------------------------------------------------------------------------
@dataclass
class GrepIndex:
    """Trigram postings over a list of table texts, plus the texts for confirmation."""

    ids: list[str]
    texts: list[str]
    offsets: npt.NDArray[np.int64]
    postings: IntArray
    _cache: OrderedDict[str, IntArray] = field(default_factory=OrderedDict, repr=False)
    _lengths: npt.NDArray[np.int64] | None = field(default=None, repr=False)
    _id_ranks: npt.NDArray[np.int64] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> GrepIndex:
        n = len(texts)
        folded = [fold(t) for t in texts]
        lengths = np.fromiter((len(b) + 1 for b in folded), dtype=np.int64, count=n)
        big = b"\0".join(folded) + b"\0"
        c = _LUT[np.frombuffer(big, dtype=np.uint8)]
        if n == 0 or c.size < 3:
            keys = np.zeros(0, dtype=np.int64)
        else:
            tri = (c[:-2] * _ALPHABET + c[1:-1]) * _ALPHABET + c[2:]
            valid = (c[:-2] > 0) & (c[1:-1] > 0) & (c[2:] > 0)
            owner = np.repeat(np.arange(n, dtype=np.int64), lengths)[: tri.size]
            keys = np.unique(tri[valid].astype(np.int64) * n + owner[valid])
        codes = keys // max(n, 1)
        postings = (keys % max(n, 1)).astype(np.int32)
        offsets = np.searchsorted(codes, np.arange(_N_CODES + 1)).astype(np.int64)
        return cls(list(ids), list(texts), offsets, postings)

    def __len__(self) -> int:
        return len(self.ids)

    # persistence: a compact npz blob (ids and texts live in the store itself)
    def arrays_blob(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, offsets=self.offsets, postings=self.postings)
        return buf.getvalue()

    @classmethod
    def from_blob(cls, ids: Sequence[str], texts: Sequence[str], blob: bytes) -> GrepIndex:
        with np.load(io.BytesIO(blob)) as arrays:
            return cls(list(ids), list(texts), arrays["offsets"], arrays["postings"])

    def _posting(self, code: int) -> IntArray:
        return self.postings[self.offsets[code] : self.offsets[code + 1]]

    def candidates(self, literal: str) -> IntArray | None:
        """Tables holding every trigram of `literal` (None when it has no trigram)."""
        codes = _trigram_codes(fold(literal))
        if codes.size == 0:
            return None
        lists = sorted((self._posting(int(c)) for c in codes), key=len)
        out = lists[0]
        for other in lists[1:]:
            if out.size == 0:
                break
            out = np.intersect1d(out, other, assume_unique=True)
        return out

    def matching(self, pattern: str) -> IntArray:
        """Indices of tables whose text matches `pattern` (exactly the naive scan's answer)."""
        hit = self._cache.get(pattern)
        if hit is not None:
            self._cache.move_to_end(pattern)
            return hit
        rx = compile_pattern(pattern)
        pool = self._pool(required_literals(pattern))
        texts = self.texts
        found = np.fromiter((i for i in pool if rx.search(texts[i]) is not None), dtype=np.int32)
        self._cache[pattern] = found
        if len(self._cache) > 4096:
            self._cache.popitem(last=False)
        return found

    def _pool(self, req: Requirement) -> Sequence[int]:
        if req is None:
            return range(len(self.texts))
        pools: list[IntArray] = []
        for alternative in req:
            cand: IntArray | None = None
            for lit in alternative:
                c = self.candidates(lit)
                if c is None:
                    continue
                cand = c if cand is None else np.intersect1d(cand, c, assume_unique=True)
            if cand is None:
                return range(len(self.texts))
            pools.append(cand)
        merged = pools[0] if len(pools) == 1 else np.unique(np.concatenate(pools))
        return merged.tolist()  # type: ignore[no-any-return]

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
