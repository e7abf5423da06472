"""Word-token postings for grep ranking: which tables hold a given word.

A token is a maximal run of regex word characters (``\\w``, Unicode) of a table's serialized
text, keyed by its case fold (`fold_text`). A pattern ``\\bword\\b`` (the commonest pattern
TableSeek's LLM writes, and the form of our LLM-free patterns) matches a table exactly when
the table holds a token whose fold equals the word's fold — one dictionary lookup instead of
a regex over the corpus.

Why it is exact: Python's case-insensitive matching equates two characters when their simple
lower cases agree (plus a few extra pairs, `re._casefix`); after mapping ſ, K, ı and İ to
their ASCII partners, two characters are equated by `re` exactly when their one-character
case folds are equal (checked over every code point when this was written). Tokens whose
fold changes length (ß → ss, ﬁ → fi) are marked `inexact`: a hit on them must be confirmed
with the regex. A bare word (no `\\b`) matches inside one token, so it can be answered from
the vocabulary too (`containing`), when few tokens contain it. Words holding a character of
the one class that mixes word and non-word characters (Greek iota and U+0345) do not use
the token path at all (`token_safe`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tablequest.corpus.lexical.trigrams import Trigrams
from tablequest.table import fold_text

IntArray = npt.NDArray[np.int32]

WORD = re.compile(r"\w+")
# U+0345 is not a word character but `re` equates it with iota, which is one.
MIXED = frozenset("\u0345\u03b9\u0399\u1fbe")
_SEP = "\x1f"  # joins keys in the persisted blob; never inside a word token


def token_safe(word: str) -> bool:
    """True when `word` is one run of word characters the token path handles exactly."""
    return WORD.fullmatch(word) is not None and not (MIXED & set(word))


@dataclass
class TokenIndex:
    """Folded word → sorted indices of the tables holding it (CSR arrays)."""

    keys: list[str]
    offsets: npt.NDArray[np.int64]
    postings: IntArray
    inexact: frozenset[str]
    _ids: dict[str, int] = field(default_factory=dict, repr=False)
    _key_grams: Trigrams | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self._ids:
            self._ids = {k: i for i, k in enumerate(self.keys)}

    @classmethod
    def build(cls, texts: Sequence[str]) -> TokenIndex:
        ids: dict[str, int] = {}
        memo: dict[str, int] = {}
        inexact: set[str] = set()
        token_chunks: list[IntArray] = []
        owner_chunks: list[IntArray] = []
        for owner, text in enumerate(texts):
            found: set[int] = set()
            for token in set(WORD.findall(text)):
                tid = memo.get(token)
                if tid is None:
                    key = fold_text(token)
                    if len(key) != len(token):
                        inexact.add(key)
                    tid = memo[token] = ids.setdefault(key, len(ids))
                found.add(tid)
            token_chunks.append(np.fromiter(found, dtype=np.int32, count=len(found)))
            owner_chunks.append(np.full(len(found), owner, dtype=np.int32))
        tokens = np.concatenate(token_chunks) if token_chunks else np.zeros(0, np.int32)
        owners = np.concatenate(owner_chunks) if owner_chunks else np.zeros(0, np.int32)
        order = np.argsort(tokens, kind="stable")  # stable: owners stay sorted per token
        offsets = np.searchsorted(tokens[order], np.arange(len(ids) + 1)).astype(np.int64)
        return cls(list(ids), offsets, owners[order], frozenset(inexact), ids)

    def lookup(self, word: str) -> tuple[IntArray, bool]:
        """Tables holding the token `word` (case-insensitive) and whether that is exact.

        Not exact means the result is a superset the caller must confirm with the regex.
        """
        key = fold_text(word)
        tid = self._ids.get(key)
        exact = len(key) == len(word) and key not in self.inexact
        if tid is None:
            return np.zeros(0, dtype=np.int32), exact
        return self.postings[self.offsets[tid] : self.offsets[tid + 1]], exact

    def containing(self, word: str, *, max_keys: int = 256) -> tuple[IntArray, bool] | None:
        """Tables holding a token that contains `word` (case-insensitive) and whether that is
        exact (see `lookup`); None when more than `max_keys` tokens contain it (merging their
        postings would cost more than scanning the texts)."""
        key = fold_text(word)
        if self._key_grams is None:
            self._key_grams = Trigrams.build(self.keys)
        cand = self._key_grams.candidates(key)
        if cand is None:
            return None
        keys = self.keys
        hits = [k for k in cand.tolist() if key in keys[k]]
        if len(hits) > max_keys:
            return None
        exact = len(key) == len(word) and not any(keys[k] in self.inexact for k in hits)
        offsets, postings = self.offsets, self.postings
        parts = [postings[offsets[k] : offsets[k + 1]] for k in hits]
        found = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int32)
        return found.astype(np.int32), exact

    # persistence: arrays for np.savez
    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        def encoded(words: Sequence[str]) -> npt.NDArray[np.uint8]:
            return np.frombuffer(_SEP.join(words).encode("utf-8"), dtype=np.uint8)

        return {
            "tok_keys": encoded(self.keys),
            "tok_inexact": encoded(sorted(self.inexact)),
            "tok_offsets": self.offsets,
            "tok_postings": self.postings,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, npt.NDArray[np.generic]]) -> TokenIndex:
        def decoded(name: str) -> list[str]:
            text = bytes(arrays[name]).decode("utf-8")
            return text.split(_SEP) if text else []

        return cls(
            decoded("tok_keys"),
            np.asarray(arrays["tok_offsets"], dtype=np.int64),
            np.asarray(arrays["tok_postings"], dtype=np.int32),
            frozenset(decoded("tok_inexact")),
        )
