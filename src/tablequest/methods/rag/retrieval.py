"""TableRAG multi-query retrieval (arXiv:2410.04739 §3.3, Alg. 1 ``MultiQueryRetrieve``).

Each query retrieves its top-K entries from a database; the results of all queries are merged
and "ranked by their similarity to the closest query": score(e) = max over queries of
sim(q, e), ties by database order (for the cell DB: the more frequent pair first).

Retrieval kinds (`RetrievalKind`): ``dense`` (an encoder of `tablequest.corpus.dense.encoders`),
``bm25`` (bm25s, no vectors) and ``hybrid`` (dense + BM25, the paper's ablation, Table 5).

Embeddings of a table's databases are stored in the corpus `Store` (table ``embeddings``)
under the key ``tablerag-v2:<kind>:B=<budget>:<table content hash>`` and the encoder name, one
row per database holding the row-major matrix; a second question on the same table loads
them instead of encoding again.

Choices (ours where the paper is silent):
- Dense similarity is the cosine (vectors are L2-normalised). BM25 keeps only positive scores
  (a query sharing no word with an entry does not retrieve it).
- Hybrid follows the official code (LangChain ``EnsembleRetriever``, weights 0.5 / 0.5): per
  query, the dense top-K and the BM25 top-K are fused by weighted reciprocal rank
  (w / (60 + rank)) and the fused top-K kept; the fused score is the similarity used to merge
  queries (0 for an entry outside a query's fused list).
- A stored matrix whose row count does not match the database is ignored and re-encoded; a
  read-only store is read but not written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import duckdb
import numpy as np
import numpy.typing as npt

from tablequest.corpus import Encoder, Matrix, Store, tokenize

RetrievalKind = Literal["dense", "bm25", "hybrid"]
CACHE_VERSION = "tablerag-v2"
RRF_K = 60
Scores = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One merged result: database index, similarity to the closest query, that query."""

    index: int
    score: float
    query: str


class EntryRetriever(Protocol):
    """Scores every database entry against each query (rows: queries)."""

    positive_only: bool

    def score_matrix(self, queries: Sequence[str], k: int) -> Scores: ...


def cache_key(kind: str, budget: int | None, content_hash: str) -> str:
    """The `embeddings.content_hash` key of one database of one table."""
    return f"{CACHE_VERSION}:{kind}:B={budget if budget is not None else '-'}:{content_hash}"


def load_vectors(store: Store, key: str, model: str, n: int) -> Matrix | None:
    """The stored (n, dim) matrix, or None when absent or of another size."""
    cursor = store.con.cursor()  # own cursor: the store's connection may hold a pending result
    try:
        table = cursor.sql(
            "SELECT vector FROM embeddings WHERE content_hash = ? AND model = ? LIMIT 1",
            params=[key, model],
        ).to_arrow_table()
    finally:
        cursor.close()
    if table.num_rows == 0:
        return None
    flat = table.column(0).chunk(0).flatten().to_numpy(zero_copy_only=False)
    if n == 0 or flat.size == 0 or flat.size % n:
        return None
    return np.asarray(flat, dtype=np.float32).reshape(n, flat.size // n)


def save_vectors(store: Store, key: str, model: str, matrix: Matrix) -> None:
    """Replace the stored matrix of `key` (one row, row-major; Arrow bulk insert)."""
    import pyarrow as pa

    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).ravel())
    vector = pa.ListArray.from_arrays(pa.array([0, len(flat)], type=pa.int32()), flat)
    batch = pa.table({"content_hash": [key], "model": [model], "vector": vector})
    cursor = store.con.cursor()
    try:
        cursor.execute("BEGIN TRANSACTION")
        try:
            cursor.execute(
                "DELETE FROM embeddings WHERE content_hash = ? AND model = ?", [key, model]
            )
            cursor.register("tq_rag_vectors", batch)
            cursor.execute(
                "INSERT INTO embeddings SELECT content_hash, model, vector FROM tq_rag_vectors"
            )
            cursor.unregister("tq_rag_vectors")
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
    finally:
        cursor.close()


def encode_cached(
    store: Store | None, key: str, encoder: Encoder, texts: Sequence[str]
) -> tuple[Matrix, bool]:
    """(vectors of `texts`, whether they came from the store). Encodes only on a miss."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32), False
    if store is not None:
        found = load_vectors(store, key, encoder.name, len(texts))
        if found is not None:
            return found, True
    matrix = np.asarray(encoder.encode(list(texts)), dtype=np.float32)
    if store is not None:
        # a read-only store keeps the vectors for this run only
        with contextlib.suppress(duckdb.Error):
            save_vectors(store, key, encoder.name, matrix)
    return matrix, False


def top_k(scores: Scores, k: int, *, positive_only: bool) -> npt.NDArray[np.int64]:
    """Indices of the k highest scores, best first, ties by index."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    order = part[np.lexsort((part, -scores[part]))]
    if positive_only:
        order = order[scores[order] > 0]
    return order.astype(np.int64)


class DenseEntryRetriever:
    """Cosine similarity between query vectors and stored entry vectors."""

    positive_only = False

    def __init__(self, encoder: Encoder, vectors: Matrix) -> None:
        self.encoder = encoder
        self.vectors = vectors

    def score_matrix(self, queries: Sequence[str], k: int) -> Scores:
        if not queries or self.vectors.shape[0] == 0:
            return np.zeros((len(queries), self.vectors.shape[0]))
        q = np.asarray(self.encoder.encode(list(queries)), dtype=np.float32)
        return np.asarray(q @ self.vectors.T, dtype=np.float64)


class BM25EntryRetriever:
    """bm25s (Lucene variant, defaults) over the entries' texts, stop words removed."""

    positive_only = True

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self.n = len(texts)
        self.model: Any = None
        if self.n:
            corpus = [tokens or ["\u2205"] for tokens in tokenize(texts)]
            self.model = bm25s.BM25()
            self.model.index(corpus, show_progress=False)

    def score_matrix(self, queries: Sequence[str], k: int) -> Scores:
        out = np.zeros((len(queries), self.n))
        if self.model is None:
            return out
        for i, tokens in enumerate(tokenize(queries)):
            if tokens:
                out[i] = np.asarray(self.model.get_scores(tokens), dtype=np.float64)
        return out


class HybridEntryRetriever:
    """Weighted reciprocal-rank fusion of a dense and a BM25 retriever (per query top-K)."""

    positive_only = True

    def __init__(
        self, dense: DenseEntryRetriever, lexical: BM25EntryRetriever, weight: float = 0.5
    ):
        self.dense = dense
        self.lexical = lexical
        self.weight = weight

    def score_matrix(self, queries: Sequence[str], k: int) -> Scores:
        dense = self.dense.score_matrix(queries, k)
        lexical = self.lexical.score_matrix(queries, k)
        out = np.zeros_like(dense)
        for i in range(len(queries)):
            for weight, scores, positive in (
                (self.weight, dense[i], False),
                (1.0 - self.weight, lexical[i], True),
            ):
                for rank, j in enumerate(top_k(scores, k, positive_only=positive), start=1):
                    out[i, j] += weight / (RRF_K + rank)
            keep = top_k(out[i], k, positive_only=True)
            mask = np.ones(out.shape[1], dtype=bool)
            mask[keep] = False
            out[i, mask] = 0.0
        return out


def multi_query_retrieve(
    retriever: EntryRetriever, queries: Sequence[str], k: int
) -> list[Retrieved]:
    """Top-k per query, merged, ranked by similarity to the closest query (ties: index)."""
    queries = [q for q in dict.fromkeys(q.strip() for q in queries) if q]
    if not queries or k <= 0:
        return []
    scores = retriever.score_matrix(queries, k)
    if scores.size == 0:
        return []
    candidates: set[int] = set()
    for row in scores:
        candidates.update(top_k(row, k, positive_only=retriever.positive_only).tolist())
    if not candidates:
        return []
    picked = np.array(sorted(candidates), dtype=np.int64)
    best_query = np.argmax(scores[:, picked], axis=0)
    best = scores[best_query, picked]
    order = np.lexsort((picked, -best))
    return [Retrieved(int(picked[i]), float(best[i]), queries[int(best_query[i])]) for i in order]


def build_retriever(
    kind: RetrievalKind,
    texts: Sequence[str],
    *,
    encoder: Encoder | None,
    store: Store | None,
    key: str,
    weight: float = 0.5,
) -> tuple[EntryRetriever, bool]:
    """A retriever over `texts` and whether its vectors came from the store cache."""
    if kind == "bm25" or encoder is None:
        return BM25EntryRetriever(texts), False
    vectors, hit = encode_cached(store, key, encoder, texts)
    dense = DenseEntryRetriever(encoder, vectors)
    if kind == "hybrid":
        return HybridEntryRetriever(dense, BM25EntryRetriever(texts), weight), hit
    return dense, hit
