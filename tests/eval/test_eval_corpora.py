"""Corpus builders: formats, mixed hash, transposed, key → id mapping, caching, dense sharing."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tablequest.corpus.dense.encoders import HashEncoder
from tablequest.corpus.storage.store import table_id_for
from tablequest.eval import corpora, shared_vectors
from tablequest.eval.corpora import (
    BuildWork,
    CorpusError,
    build_corpus,
    corpus_fingerprint,
    default_corpus_dir,
    mixed_format,
    parse_format,
)
from tablequest.eval.corpus_vectors import ensure_dense
from tablequest.eval.datasets import Dataset, TableRef, load
from tablequest.table import Table


def test_parse_format() -> None:
    assert parse_format("csv") == (False, "csv")
    assert parse_format(" Mixed ") == (False, "mixed")
    assert parse_format("transposed") == (True, "html")
    assert parse_format("transposed-csv") == (True, "csv")
    assert parse_format("transposed_mixed") == (True, "mixed")
    for bad in ("json", "transposed-json", ""):
        with pytest.raises(CorpusError, match="unknown corpus format"):
            parse_format(bad)


def test_mixed_format_is_the_documented_seeded_hash() -> None:
    key = "csv/204-csv/590.csv"
    digest = hashlib.sha256(f"7:{key}".encode()).digest()
    expected = ("csv", "markdown", "html")[int.from_bytes(digest[:8], "big") % 3]
    assert mixed_format(key, 7) == expected
    keys = [f"t{i}" for i in range(300)]
    counts = Counter(mixed_format(k) for k in keys)
    assert set(counts) == {"csv", "markdown", "html"} and min(counts.values()) > 70
    assert [mixed_format(k, 1) for k in keys] != [mixed_format(k, 0) for k in keys]


@pytest.mark.parametrize(
    ("fmt", "head"), [("csv", '"Year"'), ("markdown", "| Year |"), ("html", "<table>")]
)
def test_each_format_changes_only_the_text(evalrun_wtq: Path, fmt: str, head: str) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, fmt, in_memory=True)
    key = "csv/200-csv/0.csv"
    tid = corpus.table_id(key)
    assert tid == table_id_for(key, 0) and corpus.key_of(tid) == key
    assert len(corpus.store) == 6 and corpus.formats[key] == fmt
    text = corpus.store.text(tid)
    assert text.startswith(head.strip('"')) or text.startswith(head)
    assert corpus.store.get(tid).cells == ds.table(key).cells
    assert corpus.store.source(tid).path == key  # the key, not the file path
    assert "Rochester Rhinos" in corpus.store.plain(tid)
    with pytest.raises(KeyError, match="not in the wtq"):
        corpus.table_id("nope.csv")
    assert corpus.key_of("t-unknown") is None


def test_mixed_uses_the_benchmark_render_format(evalrun_tcr: Path, evalrun_wtq: Path) -> None:
    tcr = build_corpus(load("tcrbench", evalrun_tcr), "mixed", in_memory=True)
    assert tcr.formats["tables/TCR_8k/db/orders_T0.csv"] == "html"
    assert tcr.formats["tables/TCR_8k/db/orders_T1.csv"] == "markdown"
    assert tcr.store.text(tcr.table_id("tables/TCR_8k/db/orders_T0.csv")).startswith("<table>")
    wtq = build_corpus(load("wtq", evalrun_wtq), "mixed", seed=3, in_memory=True)
    assert wtq.formats == {k: mixed_format(k, 3) for k in wtq.keys}


def test_transposed_corpus(evalrun_wtq: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "transposed", in_memory=True)
    assert corpus.format == "transposed-html"
    table = corpus.store.get(corpus.table_id("csv/200-csv/1.csv"))
    assert table.n_header_rows == 0 and table.n_header_cols == 1
    assert table.cells[0] == ("City", "Zurich", "Oslo", "Utrecht")
    assert "<th>City</th>" in corpus.store.text(corpus.table_id("csv/200-csv/1.csv"))


def test_cache_reuse_rebuild_and_atomic_write(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    cache = tmp_path / "cache"
    first = build_corpus(ds, "markdown", cache_dir=cache)
    assert first.path is not None and first.read_only
    first.close()
    name = first.path.name
    assert name.startswith("wtq-markdown-") and name.endswith(".duckdb")
    stamp = first.path.stat().st_mtime_ns
    again = build_corpus(ds, "markdown", cache_dir=cache)
    again.close()
    assert again.path == first.path and first.path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in cache.iterdir()) == [name]
    # a changed table file gives a new fingerprint and a new corpus file
    table_file = evalrun_wtq / "csv" / "200-csv" / "1.csv"
    table_file.write_text(table_file.read_text() + '"Bern","Switzerland","134,794"\n')
    os.utime(table_file, ns=(stamp + 10**9, stamp + 10**9))
    changed = build_corpus(load("wtq", evalrun_wtq), "markdown", cache_dir=cache)
    assert changed.path != first.path
    assert "Bern" in changed.store.plain(changed.table_id("csv/200-csv/1.csv"))
    changed.close()


def test_killed_build_leaves_nothing(
    evalrun_wtq: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = load("wtq", evalrun_wtq)

    def boom(*args: object) -> None:
        raise RuntimeError("killed mid-build")

    monkeypatch.setattr(corpora, "_fill", boom)
    with pytest.raises(RuntimeError, match="killed"):
        build_corpus(ds, "csv", cache_dir=tmp_path / "c")
    assert list((tmp_path / "c").iterdir()) == []


def test_default_cache_dir_and_progress(evalrun_wtq: Path, isolated_env: Path) -> None:
    assert default_corpus_dir() == isolated_env / "cache" / "corpora"
    seen: list[tuple[int, int]] = []
    corpus = build_corpus(
        load("wtq", evalrun_wtq), "csv", progress=lambda d, t: seen.append((d, t))
    )
    assert corpus.path is not None and corpus.path.parent == default_corpus_dir()
    assert seen[-1] == (6, 6)
    corpus.close()


def test_bad_inputs(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    empty = Dataset("x", tmp_path, [], {})
    with pytest.raises(CorpusError, match="no tables"):
        build_corpus(empty, "csv", in_memory=True)
    broken = Dataset("b", tmp_path, [], {"k": TableRef("k", tmp_path / "k.csv", "csv")})
    with pytest.raises(CorpusError, match="cannot read table 'k'"):
        build_corpus(broken, "csv", in_memory=True)
    with pytest.raises(CorpusError, match="table file"):
        corpus_fingerprint(broken, "csv")
    # a cache file that is a DuckDB file but not a corpus
    cache = tmp_path / "cache"
    fp = corpus_fingerprint(ds, "csv")[:16]
    cache.mkdir()
    duckdb.connect(str(cache / f"wtq-csv-{fp}.duckdb")).close()
    with pytest.raises(CorpusError, match="not a tablequest corpus"):
        build_corpus(ds, "csv", cache_dir=cache)


def test_fingerprint_covers_inline_tables_and_seed(tmp_path: Path) -> None:
    def dataset(value: str) -> Dataset:
        table = Table.from_rows([["a"], [value]])
        return Dataset("i", tmp_path, [], {"k": TableRef("k", tmp_path, "inline", table=table)})

    assert corpus_fingerprint(dataset("1"), "csv") == corpus_fingerprint(dataset("1"), "csv")
    assert corpus_fingerprint(dataset("1"), "csv") != corpus_fingerprint(dataset("2"), "csv")
    assert corpus_fingerprint(dataset("1"), "mixed") != corpus_fingerprint(
        dataset("1"), "mixed", seed=1
    )


def test_dense_vectors_are_shared_across_formats(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    cache = tmp_path / "cache"
    enc = HashEncoder(32)
    csv_corpus = build_corpus(ds, "csv", cache_dir=cache)
    assert ensure_dense(csv_corpus, enc, cache_dir=cache) == 6
    assert csv_corpus.read_only  # reopened read-only afterwards
    assert ensure_dense(csv_corpus, enc, cache_dir=cache) == 0
    csv_corpus.close()
    html = build_corpus(ds, "html", cache_dir=cache)
    assert ensure_dense(html, enc, cache_dir=cache) == 0  # same content: copied, not encoded
    rows = html.store.con.execute("SELECT count(*) FROM embeddings").fetchone()
    assert rows is not None and rows[0] == 6
    html.close()
    memory = build_corpus(ds, "csv", in_memory=True)
    assert ensure_dense(memory, enc) == 6
    # writable corpora stay writable
    writable = build_corpus(ds, "markdown", cache_dir=cache, read_only=False)
    assert ensure_dense(writable, HashEncoder(16), cache_dir=cache) == 6
    assert not writable.read_only
    writable.close()


def test_dense_without_a_usable_shared_cache(
    evalrun_wtq: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = load("wtq", evalrun_wtq)
    cache = tmp_path / "cache"
    corpus = build_corpus(ds, "csv", cache_dir=cache)
    monkeypatch.setattr(shared_vectors, "SHARED", "missing-dir/embeddings.duckdb")
    assert ensure_dense(corpus, HashEncoder(8), cache_dir=cache) == 6
    corpus.close()


class _Counting(HashEncoder):
    """A hashing encoder that records the texts it was given."""

    def __init__(self) -> None:
        super().__init__(16)
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.texts += list(texts)
        return super().encode(texts)


def test_a_cold_build_encodes_each_distinct_text_once_while_indexing(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    from tablequest.corpus import corpus_vectors as vectors_of
    from tablequest.corpus import embedding_model

    ds = load("wtq", evalrun_wtq)
    cache = tmp_path / "cache"
    enc = _Counting()
    built: list[str] = []
    work = BuildWork(enc, ("table", "header"), lambda store: built.append(store.name))
    corpus = build_corpus(ds, "csv", cache_dir=cache, work=work)
    assert built and len(enc.texts) == len(set(enc.texts))  # equal header lines: encoded once
    assert ensure_dense(corpus, enc, cache_dir=cache, views=("table", "header")) == 0
    tables = corpus.store.shards[0]
    for view in ("table", "header"):
        ids, got = vectors_of(tables, enc, view=view)
        assert len(ids) == 6 and got.shape == (6, 16)
    # the shared cache got them: another format of the same content encodes nothing
    again = _Counting()
    html = build_corpus(ds, "html", cache_dir=cache)
    assert ensure_dense(html, again, cache_dir=cache, views=("table", "header")) == 0
    assert again.texts == []
    model = embedding_model(enc.name, "header")
    count = html.store.con.execute(
        "SELECT count(*) FROM embeddings WHERE model = ?", [model]
    ).fetchone()
    assert count == (6,)
    html.close()
    corpus.close()


def test_a_stopped_build_drops_the_encodings_not_started(tmp_path: Path) -> None:
    import threading

    from tablequest.table import Table

    started, release = threading.Event(), threading.Event()

    class Blocking(HashEncoder):
        def encode(self, texts: Sequence[str]) -> Any:
            if texts:
                started.set()
                release.wait(5)
            return super().encode(texts)

    work = BuildWork(Blocking(8), ("table",))
    work.begin()
    table = Table(cells=(("a",), ("1",)))
    work.stored([("h1", "a 1", table)])  # runs, blocked
    work.stored([("h2", "b 2", table)])  # queued behind it
    assert started.wait(5)
    work.cancel()
    release.set()
    assert work._futures[1].cancelled() and not work._futures[0].cancelled()
