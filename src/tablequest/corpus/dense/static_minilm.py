"""A static (one vector per token) model distilled from the shipped all-MiniLM-L6-v2 weights.

Distillation (`distill_static`, once per weights and `STATIC_VERSION`, cached like the ONNX
export): model2vec's ``distill_from_model`` runs the shipped transformer on every token of
its WordPiece vocabulary alone and keeps the mean-pooled output, weighted by Zipf-estimated
SIF weights (model2vec's defaults); no PCA (all 384 dimensions kept). It needs torch once
(minutes on a loaded 2-core machine); nothing is downloaded (the model path is local, so
model2vec never asks the Hub for a model card).

Encoding (`StaticMiniLMEncoder`) is numpy only: the shipped tokenizer's ids (no [CLS]/[SEP],
first 128 tokens, like the transformer's cut), the mean of their vectors, L2-normalized —
thousands of texts per second on one core.

Choice (ours, measured in docs/results.md, "Fast MiniLM encoders"): as good as MiniLM for
TableRAG's cell and schema databases (short "column | value" texts: cell recall +1.0 points on
WTQ, +1.4 on TCR-Bench) at ~100× its speed, but clearly worse for whole tables in corpus
retrieval (hybrid R@1 / R@5 −5.3 / −9.8 points on WTQ). So it is TableRAG's ``auto`` choice
when no embeddings server is configured, and otherwise offered by name (``minilm-static``),
not as the default ``minilm``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tablequest.corpus.dense.encoder_base import (
    CHARS_PER_TOKEN_CUT,
    DENSE_EXTRA_HINT,
    MINILM_TOKENS,
    EncoderUnavailable,
    Matrix,
    cut_at_whitespace,
    normalize,
    quiet_model_loading,
    report_progress,
)
from tablequest.corpus.dense.minilm_files import (
    build_once,
    encoders_cache_dir,
    shipped_model_dir,
    weights_digest,
)

__all__ = ["STATIC_VERSION", "StaticMiniLMEncoder", "distill_static", "static_model_path"]

STATIC_VERSION = 1
CHUNK = 4096  # texts per progress report
STAGE = "distilling the static encoder (first use, ~1 min)…"


def static_model_path(cache_dir: str | Path | None = None) -> Path:
    """Where the distilled model of the shipped weights lives (a directory; may not exist)."""
    digest = weights_digest(shipped_model_dir())
    return encoders_cache_dir(cache_dir) / f"minilm-{digest}-m2v-v{STATIC_VERSION}"


def distill_static(model_dir: Path, dest: Path, *, only: Collection[str] | None = None) -> None:
    """Distill the weights in `model_dir` with model2vec and save the model in `dest`.

    `only` keeps just those vocabulary entries (the special tokens stay): a seam for tests,
    which cannot afford a forward pass over all 30,522 tokens (~1.5 min on 2 cores). Texts made
    of kept tokens tokenize exactly as with the whole vocabulary (WordPiece takes the longest
    match, and no longer one is left to take); the Zipf weights follow the smaller vocabulary.

    Raises:
        EncoderUnavailable: model2vec's distillation (or torch, transformers) is missing.
    """
    try:
        from model2vec.distill import distill_from_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise EncoderUnavailable(
            f"distilling the static MiniLM needs model2vec and skeletoken: {DENSE_EXTRA_HINT}"
        ) from exc
    with quiet_model_loading():
        model = AutoModel.from_pretrained(str(model_dir))
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        static = distill_from_model(
            model,
            tokenizer,
            pca_dims=None,
            device="cpu",
            quantize_to="float32",
            token_remove_pattern=None if only is None else _all_but(only),
        )
        static.save_pretrained(str(dest))


def _all_but(tokens: Collection[str]) -> str:
    """A pattern that matches every vocabulary entry except `tokens` (model2vec drops matches)."""
    return "^(?!(?:" + "|".join(re.escape(t) for t in sorted(tokens)) + ")$)"


class StaticMiniLMEncoder:
    """Mean of distilled token vectors of the shipped MiniLM (module doc); numpy only."""

    def __init__(
        self, *, max_tokens: int = MINILM_TOKENS, cache_dir: str | Path | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.cache_dir = cache_dir
        self.name = f"all-MiniLM-L6-v2@{max_tokens}+m2v-v{STATIC_VERSION}"
        self._vectors: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._vectors is None:
                try:
                    from safetensors.numpy import load_file
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise EncoderUnavailable(
                        f"the static MiniLM needs the [dense] extra: {DENSE_EXTRA_HINT}"
                    ) from exc
                model_dir = shipped_model_dir()
                path = build_once(
                    static_model_path(self.cache_dir),
                    lambda tmp: distill_static(model_dir, tmp),
                    stage=STAGE,
                )
                vectors = load_file(str(path / "model.safetensors"))["embeddings"]
                tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                self._vectors = np.asarray(vectors, dtype=np.float32)
                self._tokenizer = tokenizer
            return self._vectors, self._tokenizer

    def encode(self, texts: Sequence[str]) -> Matrix:
        """L2-normalized mean token vectors of `texts`, in order."""
        vectors, tokenizer = self._load()
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        limit = self.max_tokens * CHARS_PER_TOKEN_CUT
        for start in range(0, len(texts), CHUNK):
            chunk = [cut_at_whitespace(t, limit) for t in texts[start : start + CHUNK]]
            encodings = tokenizer.encode_batch(chunk, add_special_tokens=False)
            ids = [e.ids[: self.max_tokens] for e in encodings]
            lengths = np.array([len(x) for x in ids], dtype=np.int64)
            flat = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=lengths.sum())
            nonempty = np.flatnonzero(lengths)
            if nonempty.size:
                starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
                sums = np.add.reduceat(vectors[flat], starts, axis=0)
                out[start + nonempty] = sums / lengths[nonempty, None]
            report_progress(min(start + CHUNK, len(texts)), len(texts))
        return normalize(out)
