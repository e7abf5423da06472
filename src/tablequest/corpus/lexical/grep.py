"""Grep ranking: TableSeek's Eq. 1, answered from postings where they are exact.

Score(T) = (1/|P|) · Σ_{p∈P} 1[p matches T] over the table's serialized text (headers
included), patterns being case-insensitive regexes (TableSeek paper, Tian et al. 2026, Eq. 1).

Speed (ours): a naive scan runs every regex over every table. Results here are exactly the
naive scan's (property-tested against it); each pattern is parsed (`plan`) and answered by
the cheapest exact route:

- ``\bword\b`` — one dictionary lookup in the word-token postings (`tokens.TokenIndex`);
- a bare literal — trigram postings (`trigrams.Trigrams`; exact for three characters), or the
  vocabulary tokens containing it when it is one word held by few tokens;
- anything else — candidates are the tables holding every trigram of the literals every
  match must contain (an OR of ANDs read from the syntax tree, `literals`) and every whole word
  those literals pin down; each candidate is confirmed by searching the folded text for the
  longest literal and running the regex on the lines holding it (whole text when the
  pattern could match across a line);
- a pattern without any required literal (``\\d{4}``) — the regex over every table.

Case folding is `fold_text` (its docstring says why finding a folded literal is exact);
texts whose fold changes their length (ß → ss) are always confirmed with the regex.

Bounded (issue 12): patterns are untrusted, so every regex runs through
`tablequest.table.patterns.bounded` — Python's `re` where its backtracking is provably
linear, RE2 on an exact rewrite, else the `regex` module within a time budget per pattern
(`PATTERN_BUDGET` seconds for one evaluation over the corpus). A pattern over its budget is
*dropped*: it leaves P (scores are fractions of the patterns evaluated) and `GrepIndex.rank`
returns it with the reason in `GrepRanking.dropped`. The drop is remembered with the cached
results, so a pattern repeated in later steps costs nothing. `naive_scores` (the reference)
still uses `re` unbounded.

Tie-break (ours, the paper is silent): higher score first, then the shorter serialized table
(the same patterns hitting a smaller table are denser evidence), then the table id.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tablequest.corpus.lexical.lazyattr import lazy_attribute
from tablequest.corpus.lexical.literals import (
    MARK,
    required_literals,
    seq_requirement,
    single_line,
    sre_c,
)
from tablequest.corpus.lexical.tokens import MIXED, WORD, TokenIndex, token_safe
from tablequest.corpus.lexical.trigrams import IntArray, Trigrams
from tablequest.table import (
    PATTERN_BUDGET,
    BoundedPattern,
    DroppedPattern,
    PatternBudget,
    PatternDropped,
    bounded,
    compile_pattern,
    fold_text,
)

__all__ = [
    "MARK",
    "GrepIndex",
    "GrepRanking",
    "Plan",
    "naive_scores",
    "plan",
    "required_literals",
]


@dataclass(frozen=True)
class Plan:
    """How to evaluate one pattern against the index (see `GrepIndex.matching`)."""

    pattern: str
    word: str | None  # the pattern is `\bword\b` with a token-safe word: a token lookup
    literal: bool  # the pattern is one literal string: a folded substring test decides
    alternatives: Sequence[Sequence[str]] | None  # literals (MARK at `\b` edges); None = any
    single_line: bool

    @lazy_attribute
    def regex(self) -> BoundedPattern:
        """The bounded matcher, made on first use: a word lookup that is exact never needs
        it, and making one (parsing and compiling the regex) cost more than the lookup."""
        return bounded(self.pattern)


_PLAIN_WORD = re.compile(r"\\b(\w+)\\b")
"""``\\b`` + word characters + ``\\b``: the commonest pattern (`question_patterns` makes it)."""


@functools.lru_cache(maxsize=4096)
def plan(pattern: str) -> Plan:
    """Parse the effective pattern (invalid regexes are literals) into a `Plan`.

    ``\\bword\\b`` of a token-safe word is planned without parsing it: the parse would give
    the same plan (one literal bounded by MARK on both sides, one line; tests/corpus check
    it), and parsing and compiling a new pattern cost more than the search it serves. Its
    literals are tuples, which the garbage collector stops tracking (a server keeps 4,096
    plans; their lists were a fifth of what its full collections walked)."""
    plain = _PLAIN_WORD.fullmatch(pattern)
    if plain is not None and token_safe(plain[1]):
        word = plain[1]
        return Plan(pattern, word, False, ((MARK + word + MARK,),), True)  # tuples: see below
    return _parsed_plan(pattern)


def _parsed_plan(pattern: str) -> Plan:
    """`plan` from the parse tree of the pattern's bounded matcher."""
    matcher = bounded(pattern)
    items = matcher.items
    req = seq_requirement(items)
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
    return Plan(pattern, word, literal, req, single_line(items))


# -- the index -------------------------------------------------------------------------
@dataclass
class GrepIndex:
    """Trigram and word-token postings over table texts, plus the texts for confirmation."""

    ids: list[str]
    texts: list[str]
    grams: Trigrams
    tokens: TokenIndex
    _cache: OrderedDict[str, IntArray | DroppedPattern] = field(
        default_factory=OrderedDict, repr=False
    )
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

    def matching(self, pattern: str, *, budget: float = PATTERN_BUDGET) -> IntArray:
        """Indices of tables whose text matches `pattern` (exactly the naive scan's answer).

        Raises PatternDropped when the pattern runs past `budget` seconds (module docstring);
        the drop is cached like a result.
        """
        hit = self._cache.get(pattern)
        if hit is not None:
            with contextlib.suppress(KeyError):  # another thread may have dropped it just now
                self._cache.move_to_end(pattern)
            if isinstance(hit, DroppedPattern):
                raise PatternDropped(hit.pattern, hit.reason)
            return hit
        found: IntArray | DroppedPattern
        try:
            found = self._match(plan(pattern), PatternBudget(budget))
        except PatternDropped as exc:
            found = exc.record
        self._cache[pattern] = found
        if len(self._cache) > 4096:
            self._cache.popitem(last=False)
        if isinstance(found, DroppedPattern):
            raise PatternDropped(found.pattern, found.reason)
        return found

    def _match(self, p: Plan, budget: PatternBudget) -> IntArray:
        if p.word is not None:
            tables, exact = self.tokens.lookup(p.word)
            if exact:
                return tables  # no regex needed (`Plan.regex` is made on first use)
            return self._confirm(tables, p.regex, fold_text(p.word), p.single_line, budget)
        rx, texts = p.regex, self.texts
        if p.literal and p.alternatives is not None:
            fast = self._literal_from_index(p.alternatives[0][0], rx, budget)
            if fast is not None:
                return fast
        if p.alternatives is None:
            return np.fromiter(
                (i for i, t in enumerate(texts) if rx.search(t, budget)), dtype=np.int32
            )
        found = [
            self._confirm(self._pool(alt), rx, _anchor(alt), p.single_line, budget, p.literal)
            for alt in p.alternatives
        ]
        return found[0] if len(found) == 1 else np.unique(np.concatenate(found))

    def _literal_from_index(
        self, literal: str, rx: BoundedPattern, budget: PatternBudget
    ) -> IntArray | None:
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
            return self._confirm(tables, rx, fold_text(literal), True, budget)
        odd = self.unaligned
        if odd.size == 0:
            return tables
        sure = np.setdiff1d(tables, odd, assume_unique=True)
        odd_hits = np.intersect1d(tables, odd, assume_unique=True)
        check = self._confirm(odd_hits, rx, fold_text(literal), True, budget)
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
        rx: BoundedPattern,
        anchor: str,
        single_line: bool,
        budget: PatternBudget,
        literal: bool = False,
    ) -> IntArray:
        """The tables of `pool` (None: all) the regex matches, searched near `anchor` only.

        `literal`: the pattern is the anchor itself, so where text and fold align one
        character to one, finding the anchor decides (module docstring of `fold_text`).
        A single-line pattern is run on the lines holding the anchor; they are never empty,
        and a line's edges look to it like the newlines around it, so searching the line
        alone (RE2, `regex`) or with pos/endpos (`re`) gives the same answer."""
        indices: Sequence[int] = range(len(self.texts)) if pool is None else pool.tolist()
        texts, folded, python = self.texts, self.folded, rx.python
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
                if rx.search(t, budget):
                    keep.append(i)
                continue
            while pos >= 0:
                end = f.find("\n", pos)
                end = len(f) if end < 0 else end
                start = f.rfind("\n", 0, pos) + 1
                if python is not None:
                    if python.search(t, start, end) is not None:
                        keep.append(i)
                        break
                elif rx.search(t[start:end], budget):
                    keep.append(i)
                    break
                pos = f.find(anchor, end + 1)  # the next line
        return np.asarray(keep, dtype=np.int32)

    def evaluate(
        self, patterns: Sequence[str], *, budget: float = PATTERN_BUDGET
    ) -> tuple[npt.NDArray[np.float64], list[DroppedPattern]]:
        """Eq. 1 for every table over the (distinct) patterns kept, and the ones dropped."""
        unique = list(dict.fromkeys(p for p in patterns if p))
        counts = np.zeros(len(self.texts), dtype=np.float64)
        dropped: list[DroppedPattern] = []
        for p in unique:
            try:
                counts[self.matching(p, budget=budget)] += 1.0
            except PatternDropped as exc:
                dropped.append(exc.record)
        kept = len(unique) - len(dropped)
        return (counts / kept if kept else counts), dropped

    def scores(self, patterns: Sequence[str]) -> npt.NDArray[np.float64]:
        """Eq. 1 for every table: fraction of (distinct, not dropped) patterns found in it."""
        return self.evaluate(patterns)[0]

    def rank(
        self, patterns: Sequence[str], k: int, *, budget: float = PATTERN_BUDGET
    ) -> GrepRanking:
        """The k best tables by Eq. 1, and the patterns dropped on the way (module doc)."""
        scores, dropped = self.evaluate(patterns, budget=budget)
        return GrepRanking(self._best(scores, k), tuple(dropped))

    def top(self, patterns: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The k best (index, score) pairs with score > 0 (`rank` also says what was dropped)."""
        return self.rank(patterns, k).hits

    def _best(self, scores: npt.NDArray[np.float64], k: int) -> list[tuple[int, float]]:
        """The k best (index, score) pairs with score > 0, tie-broken as documented."""
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


@dataclass(frozen=True)
class GrepRanking:
    """`GrepIndex.rank`'s answer: (index, score) hits, best first, and dropped patterns."""

    hits: list[tuple[int, float]]
    dropped: tuple[DroppedPattern, ...] = ()


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
