"""Trigram postings: which texts may contain a literal string.

Texts are case-folded (`fold_text`) before their trigrams are taken, so a literal matched
case-insensitively by `re` has all its trigrams in every text it occurs in. Alphabet: 0
separates (newline, NUL; no trigram spans it), every other ASCII character has its own code,
every other character shares one of 16 buckets by code point. Postings are sorted int32
arrays in CSR form, built with numpy a chunk of texts at a time.

Persisted compactly (`arrays`): the trigram codes a text holds and their posting counts,
not the CSR offsets, which have one entry per possible code (`N_CODES`, 2.9 M: 23 MB for
any corpus, one table's included; saving them was a tenth of a big CSV's ingest). The
offsets are their cumulative sum, rebuilt on load; a blob of the older layout (`offsets`)
still loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tablequest.table import fold_text

IntArray = npt.NDArray[np.int32]

_BUCKETS = 16
_LUT = np.zeros(128, dtype=np.int64)
for _i, _ch in enumerate(sorted(set(map(chr, range(1, 128))) - {"\n"})):
    _LUT[ord(_ch)] = _i + 1
ALPHABET = int(_LUT.max()) + 1 + _BUCKETS
N_CODES = ALPHABET**3
_CHUNK_CHARS = 1 << 24  # build the postings this many characters at a time


def _char_codes(folded: str) -> npt.NDArray[np.int64]:
    cp = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bucket = (ALPHABET - _BUCKETS) + (cp % _BUCKETS).astype(np.int64)
    return np.where(cp < 128, _LUT[np.minimum(cp, 127)], bucket)


def _trigrams(c: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    tri = (c[:-2] * ALPHABET + c[1:-1]) * ALPHABET + c[2:]
    return tri, (c[:-2] > 0) & (c[1:-1] > 0) & (c[2:] > 0)


def trigram_codes(literal: str) -> npt.NDArray[np.int64]:
    """The distinct trigram codes of a literal (folded here)."""
    c = _char_codes(fold_text(literal))
    if c.size < 3:
        return np.zeros(0, dtype=np.int64)
    tri, valid = _trigrams(c)
    return np.unique(tri[valid])


def _chunk_keys(folded: Sequence[str], first: int, n: int) -> npt.NDArray[np.int64]:
    """Sorted unique trigram·n + text keys of texts first, first+1, …"""
    lengths = np.fromiter((len(t) + 1 for t in folded), dtype=np.int64, count=len(folded))
    c = _char_codes("\0".join(folded) + "\0")
    if c.size < 3:
        return np.zeros(0, dtype=np.int64)
    tri, valid = _trigrams(c)
    owner = np.repeat(np.arange(first, first + len(folded), dtype=np.int64), lengths)[: tri.size]
    return np.unique(tri[valid] * n + owner[valid])


@dataclass
class Trigrams:
    """Trigram code → sorted indices of the texts holding it."""

    offsets: npt.NDArray[np.int64]
    postings: IntArray

    @classmethod
    def build(cls, folded: Sequence[str]) -> Trigrams:
        """Postings of already folded texts."""
        n = len(folded)
        chunks: list[npt.NDArray[np.int64]] = []
        start = 0
        while start < n:
            stop, size = start, 0
            while stop < n and (size == 0 or size < _CHUNK_CHARS):
                size += len(folded[stop]) + 1
                stop += 1
            chunks.append(_chunk_keys(folded[start:stop], start, n))
            start = stop
        # each chunk is sorted; together they must be too (keys are unique across chunks)
        keys = np.sort(np.concatenate(chunks)) if chunks else np.zeros(0, dtype=np.int64)
        codes = keys // max(n, 1)
        postings = (keys % max(n, 1)).astype(np.int32)
        return cls(_offsets(np.bincount(codes, minlength=N_CODES)), postings)

    def candidates(self, literal: str) -> IntArray | None:
        """Texts holding every trigram of `literal` (None when it has no trigram)."""
        codes = trigram_codes(literal)
        if codes.size == 0:
            return None
        lists = sorted(
            (self.postings[self.offsets[c] : self.offsets[c + 1]] for c in codes), key=len
        )
        out = lists[0]
        for other in lists[1:]:
            if out.size == 0:
                break
            out = np.intersect1d(out, other, assume_unique=True)
        return out

    def exact(self, literal: str) -> bool:
        """True when holding the literal's one trigram means holding the literal: a folded
        literal of three ASCII characters (no separator), in texts folded one to one."""
        folded = fold_text(literal)
        return len(folded) == 3 and folded.isascii() and "\n" not in folded and "\0" not in folded

    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        """The postings, and the codes present with their counts (module docstring)."""
        counts = np.diff(self.offsets)
        codes = np.flatnonzero(counts)
        return {"tri_codes": codes, "tri_counts": counts[codes], "postings": self.postings}

    @classmethod
    def from_arrays(cls, arrays: dict[str, npt.NDArray[np.generic]]) -> Trigrams:
        postings = np.asarray(arrays["postings"], dtype=np.int32)
        if "offsets" in arrays:  # the older layout
            if arrays["offsets"].shape != (N_CODES + 1,):
                raise ValueError("trigram arrays of another layout")
            return cls(np.asarray(arrays["offsets"]), postings)
        codes = np.asarray(arrays["tri_codes"], dtype=np.int64)
        counts = np.asarray(arrays["tri_counts"], dtype=np.int64)
        if codes.shape != counts.shape or (
            codes.size and not 0 <= codes.min() <= codes.max() < N_CODES
        ):
            raise ValueError("trigram arrays of another layout")
        if int(counts.sum()) != postings.size:
            raise ValueError("trigram arrays of another layout")
        per_code = np.zeros(N_CODES, dtype=np.int64)
        per_code[codes] = counts
        return cls(_offsets(per_code), postings)


def _offsets(per_code: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """CSR offsets (N_CODES + 1) from each code's posting count."""
    offsets = np.zeros(N_CODES + 1, dtype=np.int64)
    np.cumsum(per_code, out=offsets[1:])
    return offsets
