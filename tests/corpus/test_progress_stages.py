"""Long first-time work announces itself before it starts: the static model's distillation,
the ONNX export, index builds of a big store; the CLI's bar shows the line on a terminal.

The heavy work is monkeypatched to something tiny: what is tested is the announcing seam
and its order (announcement, then work), not how long anything takes.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from tablequest.cli import _output
from tablequest.corpus import Store, ingest
from tablequest.corpus.dense.encoder_base import (
    announce_stage,
    encoding_progress,
    progress_stages,
)
from tablequest.corpus.dense.encoders import minilm_installed
from tablequest.corpus.lexical import rank

dense = pytest.mark.skipif(not minilm_installed(), reason="needs the [dense] extra")


def test_announcements_reach_the_innermost_sink_only_inside_it() -> None:
    outer: list[str] = []
    inner: list[str] = []
    announce_stage("nobody listens")  # no sink: nothing happens
    with progress_stages(outer.append):
        announce_stage("one")
        with encoding_progress(None, stage=inner.append):
            announce_stage("two")
        with encoding_progress(None):  # no stage sink given: the outer one still hears
            announce_stage("three")
    announce_stage("after")
    assert outer == ["one", "three"] and inner == ["two"]


@dense
def test_static_distillation_is_announced_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safetensors.numpy import save_file

    from tablequest.corpus.dense import static_minilm
    from tablequest.corpus.dense.minilm_files import shipped_model_dir

    events: list[str] = []

    def tiny_distill(model_dir: Path, dest: Path) -> None:  # a 4-dim "static model"
        events.append("work")
        dest.mkdir()
        shutil.copy(model_dir / "tokenizer.json", dest / "tokenizer.json")
        vectors = np.random.default_rng(0).normal(size=(30522, 4)).astype(np.float32)
        save_file({"embeddings": vectors}, str(dest / "model.safetensors"))

    monkeypatch.setattr(static_minilm, "distill_static", tiny_distill)
    assert (shipped_model_dir() / "tokenizer.json").is_file()
    with progress_stages(lambda text: events.append(f"stage: {text}")):
        first = static_minilm.StaticMiniLMEncoder(cache_dir=tmp_path).encode(["river Varna"])
        again = static_minilm.StaticMiniLMEncoder(cache_dir=tmp_path).encode(["river Varna"])
    assert events == [f"stage: {static_minilm.STAGE}", "work"]  # once: then it is cached
    assert "distilling the static encoder (first use" in static_minilm.STAGE
    assert first.shape == (1, 4) and np.allclose(first, again)


@dense
def test_onnx_export_is_announced_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.corpus.dense import onnx_minilm

    events: list[str] = []

    def export(model_dir: Path, dest: Path, *, int8: bool) -> None:
        events.append(f"work int8={int8}")
        raise RuntimeError("stop here")  # build_once leaves nothing behind

    monkeypatch.setattr(onnx_minilm, "export_onnx", export)
    with progress_stages(lambda text: events.append(f"stage: {text}")):
        for int8 in (False, True):
            encoder = onnx_minilm.ONNXMiniLMEncoder(int8=int8, cache_dir=tmp_path)
            with pytest.raises(RuntimeError, match="stop here"):
                encoder.encode(["x"])
    assert events == [
        f"stage: {onnx_minilm.STAGE}",
        "work int8=False",
        f"stage: {onnx_minilm.STAGE_INT8}",
        "work int8=True",
    ]
    assert onnx_minilm.STAGE.startswith("exporting MiniLM to ONNX (first use")
    assert not list((tmp_path / "encoders").iterdir())


def test_index_builds_of_a_big_store_are_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        (tmp_path / f"t{i}.csv").write_text(f"city,people\nTown{i},{i}\n")
    store = Store()
    ingest(store, [tmp_path], index=False)
    events: list[str] = []
    build_grep, build_bm25 = rank.GrepIndex.build, rank.BM25Index.build

    def grep(*args: object) -> object:
        events.append("grep work")
        return build_grep(*args)  # type: ignore[arg-type]

    def bm25(*args: object) -> object:
        events.append("bm25 work")
        return build_bm25(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(rank.GrepIndex, "build", grep)
    monkeypatch.setattr(rank.BM25Index, "build", bm25)
    with progress_stages(events.append):
        monkeypatch.setattr(rank, "STAGE_MIN_TABLES", 4)  # a small store builds quietly
        rank.grep_index(store)
        monkeypatch.setattr(rank, "STAGE_MIN_TABLES", 3)
        rank.bm25_index(store)
    assert events == ["grep work", "building the BM25 index (3 tables)…", "bm25 work"]
    fresh = Store()
    ingest(fresh, [tmp_path], index=False)
    events.clear()
    with progress_stages(events.append):
        rank.grep_index(fresh)
    assert events == ["building the grep index (3 tables)…", "grep work"]


def test_the_cli_bar_prints_the_stage_line_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120)
    monkeypatch.setattr(_output, "err_console", terminal)
    with _output.encoding_bar("encoding", True):
        announce_stage("distilling the static encoder (first use, ~1 min)…")
        shown = screen.getvalue()
    assert "distilling the static encoder (first use, ~1 min)…" in shown  # before the work ends
    screen.truncate(0)
    with _output.encoding_bar("encoding", False):  # --json: nothing on the terminal
        announce_stage("exporting MiniLM to ONNX (first use, ~1 min)…")
    assert "exporting" not in screen.getvalue()
