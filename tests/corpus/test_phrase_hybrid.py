"""Phrase BM25 and the ``phrase-hybrid`` retriever (issue 29, Must 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.dense.encoders import HashEncoder
from tablequest.corpus.dense.index import corpus_vectors, cosine_scores
from tablequest.corpus.lexical.cellmatch import cell_index
from tablequest.corpus.lexical.phrase import PHRASE_BM25, phrase_tokens, question_tokens
from tablequest.corpus.lexical.rank import BM25Index, bm25_index
from tablequest.corpus.retrieval import retrievers
from tablequest.corpus.retrieval.retrievers import (
    PHRASE_WEIGHTS,
    PhraseHybridRetriever,
    RetrieverSettings,
    make_retriever,
    phrase_fusion,
)
from tablequest.corpus.storage.shards import ShardedStore, ingest_sharded


def test_tokens_are_words_and_bigrams_per_line_with_the_header_twice() -> None:
    [table] = phrase_tokens(["Club City\nNew York Americans 1936"])
    header = ["club", "city", "club_city"]
    body = ["new", "york", "americans", "1936", "new_york", "york_americans", "americans_1936"]
    assert table == header + header + body
    # no bigram across lines, stop words out before pairing
    assert phrase_tokens(["a b\nthe c"]) == [["b", "b", "c"]]
    [question] = question_tokens(["the New York Americans"])
    assert question == ["new", "york", "americans", "new_york", "york_americans"]


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    root.mkdir()
    (root / "clubs.csv").write_text("club,cup\nNew York Americans,1937\nYork City,1950\n")
    (root / "cities.csv").write_text("city,state\nNew Haven,Connecticut\nYork,Maine\n")
    (root / "rivers.csv").write_text("river,length\nVarna,120\nAmerican,190\n")
    return root


def test_the_phrase_index_ranks_the_phrase_and_is_saved(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [_corpus(tmp_path)]).ok
        index = bm25_index(store, kind=PHRASE_BM25)
        scores = index.scores("when did the new york americans win the cup?")
        ids = store.table_ids()
        clubs = next(t for t in ids if "clubs" in store.get(t).source.path)
        assert ids[int(np.argmax(scores))] == clubs
        assert index.model.k1 == 0.7 and index.model.b == 0.3
        blob = store.load_blob(PHRASE_BM25.name, store.fingerprint())
        assert blob is not None  # persisted beside the plain index, under its own name
        again = BM25Index.from_blob(ids, blob, PHRASE_BM25)
        assert np.allclose(again.scores("new york americans"), index.scores("new york americans"))
        assert index.scores("the of").tolist() == [0.0] * len(ids)  # stop words only


def test_phrase_hybrid_fuses_as_documented(tmp_path: Path) -> None:
    encoder = HashEncoder()
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [_corpus(tmp_path)]).ok
        retriever = PhraseHybridRetriever(encoder)
        retriever.prepare(store)
        question = "which river is 120 long"
        hits = retriever.rank(store, question, 3, rows=True)
        ids, tables = corpus_vectors(store, encoder)
        _, headers = corpus_vectors(store, encoder, view="header")
        lexical = bm25_index(store, kind=PHRASE_BM25).scores(question)
        cells = cell_index(store).scores(question)
        assert cells.max() > 0  # "river" is a whole cell of rivers.csv
        q = encoder.encode([question])[0]
        w_lex, w_table, w_header, w_cells = PHRASE_WEIGHTS
        want = (
            w_lex * lexical / lexical.max()
            + w_table * cosine_scores(tables, q)
            + w_header * cosine_scores(headers, q)
            + w_cells * cells / cells.max()
        )
        assert [h.table_id for h in hits] == [ids[i] for i in np.argsort(-want, kind="stable")]
        assert [h.score for h in hits] == pytest.approx(sorted(want, reverse=True))
        assert "rivers" in store.get(hits[0].table_id).source.path and hits[0].matched_rows
        header_rows = store.con.execute(
            "SELECT count(*) FROM embeddings WHERE model = ?", [f"{encoder.name}#header-v2"]
        ).fetchone()
        assert header_rows == (3,)  # the header vectors are cached under their own key


def test_registered_and_ranks_a_sharded_corpus_exactly(tmp_path: Path) -> None:
    retriever = make_retriever("phrase-hybrid", RetrieverSettings(encoder="hash"))
    assert retriever.name == "phrase-hybrid"
    root = _corpus(tmp_path)
    (root / "more.csv").write_text("river,city\nVarna,York\nNew York,Maine\n")
    for i in range(10):  # a file's shard follows its (random) path: 15 files fill both shards
        (root / f"pad{i}.csv").write_text(f"fruit,price\napple{i},{i}\n")  # but for p = 2^-14
    with (
        Store(tmp_path / "one.duckdb") as single,
        ShardedStore(tmp_path / "c.json", shards=2) as store,
    ):
        ingest(single, [root], workers=1)
        ingest_sharded(store, [root], workers=1)
        assert all(len(shard) for shard in store.shards)  # both shards hold tables
        for question in ("varna", "which river is 120 long", "new york americans cup", ""):
            for k in (1, 2, 10):
                want = retriever.rank(single, question, k, rows=True)
                assert retriever.rank(store, question, k, rows=True) == want, question
        hits = retriever.rank(store, "which river is in varna", 4)
        assert "rivers" in store.get(hits[0].table_id).source.path


def test_fusion_weights_each_feature_and_scales_the_lexical_ones_by_their_max(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sum(PHRASE_WEIGHTS) == pytest.approx(1.0, abs=0.002) and min(PHRASE_WEIGHTS) > 0
    monkeypatch.setattr(retrievers, "PHRASE_WEIGHTS", (0.1, 0.2, 0.3, 0.4))
    lexical = np.array([2.0, 4.0, 0.0])
    tables = np.array([0.5, -0.5, 0.0])
    headers = np.array([0.0, 1.0, 0.2])
    cells = np.zeros(3)  # no cell matched: the feature adds nothing (no division by 0)
    got = phrase_fusion(lexical, tables, headers, cells)
    assert got.tolist() == pytest.approx([0.05 + 0.1, 0.1 - 0.1 + 0.3, 0.06])
    # many questions at once: each row scaled by its own maximum
    rows = phrase_fusion(
        np.stack([lexical, lexical * 3]),
        np.stack([tables, tables]),
        np.stack([headers, headers]),
        np.stack([cells, np.array([0.0, 1.0, 3.0])]),
    )
    assert rows[0].tolist() == pytest.approx(got.tolist())
    assert rows[1].tolist() == pytest.approx([0.15, 0.3 + 0.4 / 3, 0.06 + 0.4])


def test_vectors_encode_each_distinct_text_once_and_ahead_equals_now(tmp_path: Path) -> None:
    from tablequest.corpus.dense.index import ensure_embeddings, start_embeddings

    folder = tmp_path / "same-header"
    folder.mkdir()
    for name, city in (("a", "Oslo"), ("b", "Bern"), ("c", "Rome")):
        (folder / f"{name}.csv").write_text(f"city,population\n{city},{len(name)}\n")
    seen: list[str] = []

    class Counting(HashEncoder):
        def encode(self, texts: Any) -> Any:
            seen.extend(texts)
            return super().encode(texts)

    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [folder]).ok
        pending = start_embeddings(store, Counting(), view="header")  # on the encoding thread
        ids, ahead = pending.finish()
        assert seen == ["city population"]  # three tables, one header line: encoded once
        assert len(ids) == 3 and np.array_equal(ahead, np.stack([ahead[0]] * 3))
        _, now = ensure_embeddings(store, HashEncoder(), view="header")  # read back, stored
        assert np.array_equal(now, ahead)
