"""The fast MiniLM backends: agreement with sentence-transformers, caches, export, progress.

The ONNX export runs once per test session (a session fixture, ~1–2 min on a loaded 2-core
machine); the static model is distilled over a few tokens only (the seam in `distill_static`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.dense.encoder_base import cut_at_whitespace, encoding_progress, with_rate
from tablequest.corpus.dense.encoders import HashEncoder, Matrix, make_encoder, minilm_installed
from tablequest.corpus.dense.index import ensure_embeddings
from tablequest.corpus.dense.minilm_files import build_once
from tablequest.corpus.dense.onnx_minilm import length_batches
from tablequest.methods.rag.retrieval import encode_cached

pytestmark = pytest.mark.skipif(
    not minilm_installed(), reason="needs the [dense] extra (onnxruntime, torch, MiniLM weights)"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
TEXTS = [
    "",
    "wallet",
    '{"column_name": "payment_method", "cell_value": "Cash on delivery"}',
    "Which nation won the most gold medals?",
    "Nation Gold Silver Bronze\n"
    + "\n".join(f"Country{i} {i} {i % 3} {i % 5}" for i in range(400)),
    "Year Title Role Notes\n" + " ".join(["Película", "naïve", "東京", "x" * 150] * 40),
]


@pytest.fixture(scope="session")
def onnx_cache() -> Path:
    """The default cache dir (under the tests' own HOME, shared by the session's workers),
    holding the fp32 ONNX export of the shipped weights: exported once for every test that
    encodes with minilm, here or elsewhere."""
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder
    from tablequest.llm import default_cache_dir

    ONNXMiniLMEncoder().encode(["warm up"])
    return Path(default_cache_dir())


@pytest.fixture(scope="session")
def st_vectors() -> Matrix:
    encoder = make_encoder("minilm-st")
    assert encoder is not None
    return encoder.encode(TEXTS)


def test_onnx_vectors_agree_with_sentence_transformers(
    onnx_cache: Path, st_vectors: Matrix
) -> None:
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder

    encoder = ONNXMiniLMEncoder(cache_dir=onnx_cache, batch_size=2)  # several length batches
    vectors = encoder.encode(TEXTS)
    cosines = (vectors * st_vectors).sum(axis=1)
    assert vectors.shape == (len(TEXTS), 384)
    assert cosines.min() >= 0.99, cosines
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_long_texts_are_tokenized_by_prefix_exactly(onnx_cache: Path) -> None:
    from tokenizers import Tokenizer

    from tablequest.corpus.dense.minilm_files import shipped_model_dir
    from tablequest.corpus.dense.onnx_minilm import token_ids

    tokenizer = Tokenizer.from_file(str(shipped_model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(128)
    tokenizer.no_padding()
    sparse = "a " * 5 + " " * 3000 + "end of table"  # a cut prefix with too few tokens
    texts = [*TEXTS, sparse, "x" * 5000]
    expected = [list(e.ids) for e in tokenizer.encode_batch(texts)]
    assert token_ids(tokenizer, texts, 128) == expected
    assert cut_at_whitespace("ab cd ef", 5) == "ab cd"
    assert cut_at_whitespace("ab cd ef", 4) == "ab"
    assert cut_at_whitespace("abcdef", 3) == "abcdef"


def test_length_batches_cover_every_text_once_shortest_first() -> None:
    lengths = [5, 1, 9, 1, 3, 7, 2]
    batches = length_batches(lengths, 3)
    flat = [int(i) for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert [len(b) for b in batches] == [3, 3, 1]


def test_export_is_cached_and_atomic(onnx_cache: Path, tmp_path: Path) -> None:
    names = [p.name for p in (onnx_cache / "encoders").iterdir()]
    assert sum(n.endswith("-onnx-fp32-v1.onnx") for n in names) == 1, names  # whole, once
    calls: list[Path] = []

    def failing(tmp: Path) -> None:
        calls.append(tmp)
        tmp.write_bytes(b"half a model")
        raise RuntimeError("killed")

    final = tmp_path / "encoders" / "model.onnx"
    with pytest.raises(RuntimeError):
        build_once(final, failing)
    assert not final.exists() and list(final.parent.iterdir()) == []
    assert calls[0].parent == final.parent and calls[0].name.startswith(".model.onnx.")
    assert build_once(final, lambda tmp: tmp.write_bytes(b"model")) == final
    assert build_once(final, failing) == final and len(calls) == 1  # not built again
    assert final.read_bytes() == b"model"
    folder = build_once(tmp_path / "encoders" / "static", lambda tmp: tmp.mkdir())
    assert folder.is_dir()


class Counting(HashEncoder):
    """A hashing encoder under another name that counts what it encodes."""

    def __init__(self, name: str, dim: int) -> None:
        super().__init__(dim)
        self.name = name
        self.encoded = 0

    def encode(self, texts: Sequence[str]) -> Matrix:
        self.encoded += len(texts)
        return super().encode(texts)


def test_minilm_backends_have_distinct_cache_names(onnx_cache: Path) -> None:
    names = {n: getattr(make_encoder(n), "name", None) for n in
             ("minilm", "minilm-int8", "minilm-static", "minilm-st")}  # fmt: skip
    assert len(set(names.values())) == 4, names
    assert names["minilm-st"] == "all-MiniLM-L6-v2@128"
    assert all(v is not None and v.startswith("all-MiniLM-L6-v2@128") for v in names.values())
    short = make_encoder("minilm-32")
    assert short is not None and short.name == "all-MiniLM-L6-v2@32+onnx-v1"  # its own key
    [vector] = short.encode(["How long is the river Varna?"])
    assert vector.shape == (384,) and abs(float(vector @ vector) - 1.0) < 1e-5


def test_the_cache_never_serves_one_backends_vectors_to_another(tmp_path: Path) -> None:
    fast, exact = Counting("all-MiniLM-L6-v2@128+onnx-v1", 16), Counting("all-MiniLM-L6-v2@128", 8)
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [EXAMPLES])
        ids, first = ensure_embeddings(store, fast)
        n = fast.encoded
        assert n > 0
        _, again = ensure_embeddings(store, fast)
        assert fast.encoded == n and np.array_equal(first, again)  # served from the cache
        _, other = ensure_embeddings(store, exact)
        assert exact.encoded == n and other.shape == (len(ids), 8)  # encoded anew
        texts = ["a", "b", "c"]
        _, hit = encode_cached(store, "tablerag-v1:cell:B=10:h", fast, texts)
        _, hit_fast = encode_cached(store, "tablerag-v1:cell:B=10:h", fast, texts)
        vectors, hit_exact = encode_cached(store, "tablerag-v1:cell:B=10:h", exact, texts)
        assert (hit, hit_fast, hit_exact) == (False, True, False) and vectors.shape == (3, 8)


def test_progress_reaches_the_callback_and_the_cli_stays_quiet_with_json(
    onnx_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder

    seen: list[tuple[int, int, str]] = []
    with encoding_progress(with_rate(lambda d, n, m: seen.append((d, n, m)))):
        ONNXMiniLMEncoder(cache_dir=onnx_cache, batch_size=2).encode(TEXTS)
    assert [d for d, _, _ in seen] == [2, 4, 6] and {n for _, n, _ in seen} == {6}
    assert seen[-1][2].endswith("texts/s")
    ONNXMiniLMEncoder(cache_dir=onnx_cache).encode(["outside: no callback, no error"])
    store = tmp_path / "s.duckdb"
    with Store(store) as st:
        ingest(st, [EXAMPLES])
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", str(onnx_cache))
    result = CliRunner().invoke(app, ["search", "river Varna", "-s", str(store), "-m", "dense",
                                      "--encoder", "minilm", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.lstrip().startswith("[")  # JSON only: no bar, no loading chatter
    assert "Loading" not in result.output and "encoding" not in result.output


def test_sentence_transformers_loads_without_bars_or_chatter(
    capfd: pytest.CaptureFixture[str],
) -> None:
    encoder = make_encoder("minilm-st")
    assert encoder is not None
    encoder.encode(["no Loading weights bar on stderr"])
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_static_model_retrieves_like_sentence_transformers(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    from tablequest.corpus.dense.minilm_files import shipped_model_dir
    from tablequest.corpus.dense.static_minilm import (
        StaticMiniLMEncoder,
        distill_static,
        static_model_path,
    )

    cells = [f'{{"column_name": "{c}", "cell_value": "{v}"}}' for c, v in
             [("city", "Mumbai"), ("city", "Delhi"), ("category", "wallet"),
              ("category", "handbag"), ("status", "Cancelled"), ("payment", "Card"),
              ("payment", "Cash on delivery"), ("status", "Delivered to buyer")]]  # fmt: skip
    queries = ["Mumbai", "wallet", "cancelled orders", "paid by card", "cash", "handbags"]
    # distilled here from the shipped weights, over just the tokens these texts use (the
    # whole vocabulary takes minutes; they tokenize the same either way)
    model_dir = shipped_model_dir()
    shipped = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    used = {t for text in cells + queries for t in shipped.encode(text).tokens}
    build_once(static_model_path(tmp_path), lambda tmp: distill_static(model_dir, tmp, only=used))
    static = StaticMiniLMEncoder(cache_dir=tmp_path)
    assert static._load()[0].shape[0] < 100  # the distilled model above, not a whole new one
    exact = make_encoder("minilm-st")
    assert exact is not None
    fast, reference = (np.argmax(e.encode(cells) @ e.encode(queries).T, axis=0)
                       for e in (static, exact))  # fmt: skip
    assert int((fast == reference).sum()) >= len(queries) - 1, (fast, reference)


def test_the_encoding_bar_shows_rate_only_when_encoding_and_not_with_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from rich.console import Console

    from tablequest.cli import _output
    from tablequest.corpus.dense.encoder_base import report_progress

    def shown(enabled: bool, reports: int) -> str:
        sink = io.StringIO()
        monkeypatch.setattr(_output, "err_console", Console(file=sink, force_terminal=True))
        with _output.encoding_bar("encoding tables", enabled):
            for done in range(1, reports + 1):
                report_progress(done * 50, reports * 50)
        return sink.getvalue()

    assert shown(enabled=False, reports=3) == ""  # --json
    assert shown(enabled=True, reports=0) == ""  # every vector cached: no bar at all
    drawn = shown(enabled=True, reports=3)
    assert "encoding tables" in drawn and "150/150" in drawn and "texts/s" in drawn
