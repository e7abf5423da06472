"""BM25 over shards with corpus-wide statistics, score for score equal to one store's.

One store ranks with bm25s (`corpus.rank.BM25Index`: Lucene variant, k1 = 1.5, b = 0.75 by
default; the phrase index of ``phrase-hybrid`` 0.7 / 0.3, passed as `ShardBM25(k1=, b=)`).
bm25s computes every IDF from its own index, so one bm25s index per shard would score
with each shard's document frequencies and average length — different numbers, silently.
Here each shard keeps only what does not depend on the rest of the corpus (term → postings
with term frequencies, document lengths); a query first gathers the corpus-wide document
count, total length and document frequency of its terms from every shard
(`ShardBM25.stats`, summed by `GlobalStats.combine`), then every shard scores with them.

Exactness: the arithmetic repeats bm25s 0.3's, operation for operation and type for type —
IDF ``log(1 + (N − df + 0.5)/(df + 0.5))`` in Python floats stored as float32; the term
part ``tf / (k1·(1 − b + b·dl/avgdl) + tf)`` with float32 term frequencies and the float64
average length (NumPy's promotion rules decide the type, as they do in bm25s); the product
stored as float32; a document's score the float32 sum over the query's tokens in query order
(repeated tokens counted again). The average length is total/N, which equals NumPy's mean
of the lengths while the total is below 2^53. Tests compare with bm25s on fixtures.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.5
B = 0.75
# NumPy < 2 casts a float64 scalar to float32 next to a float32 array (value-based casting);
# bm25s adds such a scalar to its float32 term frequencies, so the sum's type follows NumPy.
_SCALAR_TYPE = np.result_type(np.float64(1.0), np.zeros(1, dtype=np.float32))

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class GlobalStats:
    """Corpus-wide document count, average length and the query terms' document counts."""

    n_docs: int
    avg_len: float
    df: dict[str, int]

    @classmethod
    def combine(cls, parts: Sequence[tuple[int, int, dict[str, int]]]) -> GlobalStats:
        """Sum the (documents, total length, df) of every shard."""
        n_docs = sum(p[0] for p in parts)
        total = sum(p[1] for p in parts)
        df: dict[str, int] = {}
        for _, _, part in parts:
            for term, count in part.items():
                df[term] = df.get(term, 0) + count
        return cls(n_docs, float(np.float64(total) / n_docs) if n_docs else 0.0, df)


class ShardBM25:
    """One shard's BM25 postings: term → (documents, float32 term frequencies)."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        vocab: dict[str, int] = {}
        terms: list[int] = []
        owners: list[int] = []
        freqs: list[int] = []
        for d, tokens in enumerate(docs):
            for term, tf in Counter(tokens).items():
                terms.append(vocab.setdefault(term, len(vocab)))
                owners.append(d)
                freqs.append(tf)
        term_arr = np.asarray(terms, dtype=np.int64)
        order = np.argsort(term_arr, kind="stable")  # documents stay ascending per term
        self.vocab = vocab
        self.doc_len = np.asarray([len(t) for t in docs], dtype=np.int64)
        self.postings = np.asarray(owners, dtype=np.int32)[order]
        self.tf = np.asarray(freqs, dtype=np.float32)[order]
        self.offsets = np.searchsorted(term_arr[order], np.arange(len(vocab) + 1))
        self._weights: dict[tuple[str, int, float, int], FloatArray] = {}

    def __len__(self) -> int:
        return int(self.doc_len.size)

    def stats(self, tokens: Sequence[str]) -> tuple[int, int, dict[str, int]]:
        """(documents, total length, df of each distinct query token) of this shard."""
        df = {}
        for term in dict.fromkeys(tokens):
            tid = self.vocab.get(term)
            if tid is not None:
                df[term] = int(self.offsets[tid + 1] - self.offsets[tid])
        return len(self), int(self.doc_len.sum()), df

    def _term(self, term: str, stats: GlobalStats) -> tuple[Any, FloatArray] | None:
        tid = self.vocab.get(term)
        if tid is None:
            return None
        docs = self.postings[self.offsets[tid] : self.offsets[tid + 1]]
        key = (term, stats.n_docs, stats.avg_len, stats.df[term])
        weights = self._weights.get(key)
        if weights is None:
            weights = term_weights(
                self.tf[self.offsets[tid] : self.offsets[tid + 1]],
                self.doc_len[docs],
                stats.n_docs,
                stats.avg_len,
                stats.df[term],
                k1=self.k1,
                b=self.b,
            )
            if len(self._weights) > 4096:
                self._weights.clear()
            self._weights[key] = weights
        return docs, weights

    def scores(self, tokens: Sequence[str], stats: GlobalStats) -> npt.NDArray[np.float64]:
        """The BM25 score of every document of the shard (float32 sums, as float64)."""
        out = np.zeros(len(self), dtype=np.float32)
        for term in tokens:
            found = self._term(term, stats)
            if found is not None:
                docs, weights = found
                out[docs] += weights  # a term's documents are distinct
        return out.astype(np.float64)


def term_weights(
    tf: FloatArray,
    doc_len: npt.NDArray[np.int64],
    n_docs: int,
    avg_len: float,
    df: int,
    *,
    k1: float = K1,
    b: float = B,
) -> FloatArray:
    """bm25s's stored per-document score of one term (see module doc), as float32."""
    idf = np.float32(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)))
    length_part = k1 * ((1 - b) + b * doc_len / np.float64(avg_len))
    denominator = length_part.astype(_SCALAR_TYPE) + tf
    weights: FloatArray = (idf * (tf / denominator)).astype(np.float32)
    return weights
