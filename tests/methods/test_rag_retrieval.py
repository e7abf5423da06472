"""Multi-query retrieval, encoders and the embedding cache (TableRAG §3.3, Alg. 1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from tablequest.corpus import Store
from tablequest.corpus.dense.encoders import HashEncoder, Matrix, make_encoder
from tablequest.errors import BadValue
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.rag.retrieval import (
    BM25EntryRetriever,
    DenseEntryRetriever,
    HybridEntryRetriever,
    Retrieved,
    build_retriever,
    cache_key,
    encode_cached,
    load_vectors,
    multi_query_retrieve,
    save_vectors,
    top_k,
)
from tablequest.table import Table


class FixedScores:
    """A retriever whose similarity matrix is given per query."""

    def __init__(self, table: dict[str, list[float]], positive_only: bool = False) -> None:
        self.table = table
        self.positive_only = positive_only
        self.asked: list[list[str]] = []

    def score_matrix(self, queries: Sequence[str], k: int) -> np.ndarray:
        self.asked.append(list(queries))
        return np.array([self.table[q] for q in queries], dtype=np.float64)


class CountingEncoder:
    """HashEncoder that counts what it encodes."""

    def __init__(self) -> None:
        self.inner = HashEncoder(64)
        self.name = "counting-hash"
        self.batches: list[int] = []

    def encode(self, texts: Sequence[str]) -> Matrix:
        self.batches.append(len(texts))
        return self.inner.encode(texts)


def test_merge_and_rank_by_the_closest_query() -> None:
    fixed = FixedScores({"q1": [0.9, 0.1, 0.5, 0.2], "q2": [0.3, 0.8, 0.95, 0.0]})
    got = multi_query_retrieve(fixed, ["q1", "q2", "q1", " "], k=2)
    assert fixed.asked == [["q1", "q2"]]  # de-duplicated, blanks dropped
    assert got == [Retrieved(2, 0.95, "q2"), Retrieved(0, 0.9, "q1"), Retrieved(1, 0.8, "q2")]


def test_merge_ties_go_to_the_database_order() -> None:
    fixed = FixedScores({"a": [0.5, 0.7, 0.5], "b": [0.5, 0.1, 0.5]})
    got = multi_query_retrieve(fixed, ["a", "b"], k=3)
    assert [r.index for r in got] == [1, 0, 2]
    assert multi_query_retrieve(fixed, [], k=3) == []
    assert multi_query_retrieve(fixed, ["a"], k=0) == []


def test_positive_only_drops_non_matches() -> None:
    fixed = FixedScores({"a": [0.0, 2.0, 0.0], "b": [0.0, 0.0, 0.0]}, positive_only=True)
    assert [r.index for r in multi_query_retrieve(fixed, ["a", "b"], k=2)] == [1]
    assert multi_query_retrieve(FixedScores({"b": [0.0]}, True), ["b"], k=2) == []
    assert top_k(np.array([]), 3, positive_only=False).size == 0


def test_dense_and_bm25_find_the_wallet() -> None:
    texts = ['{"column_name": "product", "cell_value": "Leather Wallet"}',
             '{"column_name": "product", "cell_value": "Belt"}',
             '{"column_name": "status", "cell_value": "Shipped"}']  # fmt: skip
    dense = DenseEntryRetriever(HashEncoder(), HashEncoder().encode(texts))
    assert multi_query_retrieve(dense, ["wallet"], k=1)[0].index == 0
    bm25 = BM25EntryRetriever(texts)
    got = multi_query_retrieve(bm25, ["wallet", "shipped"], k=3)
    assert sorted(r.index for r in got) == [0, 2]  # the belt shares no word: not retrieved
    assert BM25EntryRetriever([]).score_matrix(["x"], 3).shape == (1, 0)
    hybrid = HybridEntryRetriever(dense, bm25, weight=0.5)
    fused = hybrid.score_matrix(["wallet"], 1)
    assert fused.shape == (1, 3) and int(np.argmax(fused[0])) == 0
    assert np.count_nonzero(fused[0]) == 1  # only the fused top-1 keeps a score
    assert fused[0, 0] == pytest.approx(0.5 / 61 + 0.5 / 61)


def test_vectors_round_trip_through_the_store() -> None:
    store = Store()
    matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
    save_vectors(store, "k", "m", matrix)
    save_vectors(store, "k", "m", matrix + 1)  # replaced, not duplicated
    assert np.array_equal(load_vectors(store, "k", "m", 4), matrix + 1)  # type: ignore[arg-type]
    assert load_vectors(store, "k", "m", 5) is None  # another size: ignored
    assert load_vectors(store, "k", "other", 4) is None
    count = store.con.execute("SELECT count(*) FROM embeddings").fetchone()
    assert count == (1,)
    enc = CountingEncoder()
    vectors, hit = encode_cached(store, "k2", enc, ["a", "b"])
    again, hit2 = encode_cached(store, "k2", enc, ["a", "b"])
    assert (hit, hit2, enc.batches) == (False, True, [2])
    assert np.allclose(vectors, again)
    assert encode_cached(store, "k3", enc, [])[0].shape == (0, 1)


def test_second_question_on_the_same_table_does_not_re_encode() -> None:
    table = Table.from_rows([["product", "price"], *[[f"item {i % 7}", str(i)] for i in range(50)]])
    store, enc = Store(), CountingEncoder()
    first = TableRAG(RagConfig(budget=5), encoder=enc, store=store)
    prepared = first.prepare(table)
    first.retrieve(prepared, ["product"], ["item"])
    assert enc.batches[:2] == [2, 5]  # schema DB (2 columns) and cell DB (B = 5 pairs)
    assert prepared.cache_hits == {"schema": False, "cell": False}
    encoded_db = len(enc.batches)
    second = TableRAG(RagConfig(budget=5), encoder=enc, store=store)  # fresh instance
    again = second.prepare(table)
    second.retrieve(again, ["price"], ["item 3"])
    assert again.cache_hits == {"schema": True, "cell": True}
    assert enc.batches[encoded_db:] == [1, 1]  # only the two queries were encoded
    third = TableRAG(RagConfig(budget=6), encoder=enc, store=store)
    third.retrieve(third.prepare(table), ["price"], ["item"])
    assert third.prepare(table).cache_hits == {"schema": True, "cell": False}  # new budget


def test_cache_keys_and_encoder_factory() -> None:
    assert cache_key("cell", 10000, "abc") == "tablerag-v2:cell:B=10000:abc"
    assert cache_key("schema", None, "abc") == "tablerag-v2:schema:B=-:abc"
    assert make_encoder("bm25") is None
    minilm = make_encoder("minilm")
    assert minilm is not None and minilm.name == "all-MiniLM-L6-v2@128+onnx-v1"
    with pytest.raises(BadValue, match="unknown encoder"):
        make_encoder("word2vec")  # type: ignore[arg-type]
    with pytest.raises(BadValue, match="embeddings URL and model"):
        make_encoder("api")
    retriever, hit = build_retriever("bm25", ["a b"], encoder=None, store=None, key="")
    assert isinstance(retriever, BM25EntryRetriever) and not hit
