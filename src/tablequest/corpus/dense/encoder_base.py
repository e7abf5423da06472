"""What every encoder shares: the interface, the vector type, errors and the progress hook.

Split from `tablequest.corpus.dense.encoders` (the registry) so that the backends in their own
modules (`corpus.onnx_minilm`, `corpus.static_minilm`) import these without importing the
registry that builds them.

Progress: a caller that wants to show encoding progress wraps the work in
``with encoding_progress(callback):``; encoders call `report_progress(done, total)` after each
batch, which reaches the innermost callback of the current context (a `ContextVar`, so
concurrent callers in other threads or tasks do not see each other's bars). Nothing is printed
by the library itself.

Stages: long first-time work that has no count to report (distilling the static model,
exporting MiniLM to ONNX, building the index of a big store) calls `announce_stage(text)`
*before* it starts, with a line such as "distilling the static encoder (first use, ~1 min)…";
it reaches the innermost `progress_stages(callback)` (or ``encoding_progress(..., stage=)``)
of the current context, so a CLI can show the line at once instead of staying silent.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from tablequest.errors import UsageError

__all__ = [
    "CHARS_PER_TOKEN_CUT",
    "DENSE_EXTRA_HINT",
    "MINILM_TOKENS",
    "Encoder",
    "EncoderUnavailable",
    "Matrix",
    "ProgressFn",
    "StageFn",
    "announce_stage",
    "available_cores",
    "cut_at_whitespace",
    "encoding_progress",
    "normalize",
    "progress_stages",
    "quiet_model_loading",
    "report_progress",
    "with_rate",
]

MINILM_TOKENS = 128
DENSE_EXTRA_HINT = "pip install 'tablequest[dense]'"
CHARS_PER_TOKEN_CUT = 16  # long texts are cut at this many characters per token kept

Matrix = npt.NDArray[np.float32]
ProgressFn = Callable[[int, int], None]
StageFn = Callable[[str], None]

_PROGRESS: ContextVar[ProgressFn | None] = ContextVar("tablequest_encoding_progress", default=None)
_STAGE: ContextVar[StageFn | None] = ContextVar("tablequest_progress_stage", default=None)


class EncoderUnavailable(UsageError):
    """The encoder cannot run here; the message says what to install or configure."""


class Encoder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> Matrix: ...


def normalize(m: npt.NDArray[Any]) -> Matrix:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms).astype(np.float32)
    return out


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def cut_at_whitespace(text: str, limit: int) -> str:
    """`text` cut at the last whitespace before `limit` characters (the same object when
    it is not longer than `limit` or has no whitespace there).

    WordPiece tokenizes such a prefix into a prefix of the whole text's tokens, so encoders
    that keep only the first N tokens tokenize the prefix alone and fall back to the whole
    text only when the prefix yields fewer than N tokens.
    """
    if len(text) <= limit:
        return text
    for i in range(limit, 0, -1):
        if text[i].isspace():
            return text[:i]
    return text


@contextlib.contextmanager
def encoding_progress(
    callback: ProgressFn | None, *, stage: StageFn | None = None
) -> Iterator[None]:
    """Send `(texts done, texts total)` of every encode call inside the block to `callback`,
    and, when `stage` is given, each stage announced inside it (see `progress_stages`)."""
    token = _PROGRESS.set(callback)
    try:
        with progress_stages(stage) if stage is not None else contextlib.nullcontext():
            yield
    finally:
        _PROGRESS.reset(token)


@contextlib.contextmanager
def progress_stages(callback: StageFn | None) -> Iterator[None]:
    """Send the line of every long stage that starts inside the block to `callback`."""
    token = _STAGE.set(callback)
    try:
        yield
    finally:
        _STAGE.reset(token)


def announce_stage(text: str) -> None:
    """Tell the current `progress_stages` callback, if any, that a long stage starts now."""
    callback = _STAGE.get()
    if callback is not None:
        callback(text)


def report_progress(done: int, total: int) -> None:
    """Tell the current `encoding_progress` callback, if any, how far an encode call is."""
    callback = _PROGRESS.get()
    if callback is not None:
        callback(done, total)


def with_rate(update: Callable[[int, int, str], None]) -> ProgressFn:
    """A progress callback that also passes ``"N texts/s"`` (since its first call) to
    `update(done, total, metric)`; a new encode call (done going down) restarts the clock."""
    state = {"start": time.perf_counter(), "last": 0}

    def callback(done: int, total: int) -> None:
        now = time.perf_counter()
        if done < state["last"]:
            state["start"] = now
        state["last"] = done
        elapsed = now - state["start"]
        update(done, total, f"{done / elapsed:,.0f} texts/s" if elapsed > 0 else "")

    return callback


@contextlib.contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Load models offline and without the libraries' own progress bars or chatter on stderr.

    transformers prints a "Loading weights" bar, model2vec an "Encoding tokens" bar and the
    ONNX quantizer a pre-processing hint; our progress goes through `encoding_progress`.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    with contextlib.suppress(ImportError):
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    root = logging.getLogger()
    mute, level = logging.NullHandler(), root.level  # no lazy basicConfig onto our StringIO
    root.addHandler(mute)
    root.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        root.removeHandler(mute)
        root.setLevel(level)
