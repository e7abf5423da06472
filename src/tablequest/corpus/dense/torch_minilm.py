"""all-MiniLM-L6-v2 on a torch device: the lean batch path the MiniLM encoders take on CUDA.

`TorchMiniLM` is device-agnostic: the shipped weights (`shipped_model_dir`) loaded with
transformers' ``AutoModel`` (SDPA attention) in fp16 on CUDA and fp32 on the CPU; the shipped
``tokenizers`` fast tokenizer in batch, inputs cut at `MINILM_TOKENS` tokens (long texts
tokenized by prefix, as `onnx_minilm.token_ids` does); texts sorted by token count and cut
into batches whose padded size (rows × longest row) stays under a token budget
(`budget_batches`); mean pooling over the attention mask and L2 normalization on the device;
one copy back to the host at the end, in input order. That is sentence-transformers' pooling
of all-MiniLM-L6-v2, so on the CPU in fp32 it gives the ``minilm`` vectors (cosine ≥ 0.9999)
and is tested there; on CUDA the same code runs in fp16 (`DeviceEncoder` checks its agreement
before it shares a cache name).

Choices (ours; the issue gives the budget of ~128k tokens and fp16 on CUDA):
- Token budget: 131,072 padded tokens per batch on CUDA, 16,384 on the CPU (attention
  memory grows with rows × tokens², and big CPU batches are no faster).
- On CUDA the tokenizer batches on all cores (``TOKENIZERS_PARALLELISM`` is true while it
  runs, then restored: the model loader sets it false to keep forks quiet); single-threaded
  tokenizing (~15–25k short texts/s) would cap the GPU below the issue's 50k cells/s. On the
  CPU the cores belong to the forward.
- Pooling is summed in fp32 (the fp16 hidden states are cast first), so the only fp16 error
  is the forward's own.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.device import gpu_name
from tablequest.corpus.dense.encoder_base import (
    DENSE_EXTRA_HINT,
    MINILM_TOKENS,
    EncoderUnavailable,
    Matrix,
    quiet_model_loading,
    report_progress,
)
from tablequest.corpus.dense.minilm_files import shipped_model_dir
from tablequest.corpus.dense.onnx_minilm import HIDDEN, token_ids

__all__ = ["CPU_TOKEN_BUDGET", "CUDA_TOKEN_BUDGET", "TorchMiniLM", "budget_batches"]

CUDA_TOKEN_BUDGET = 131_072
CPU_TOKEN_BUDGET = 16_384
PARALLELISM_ENV = "TOKENIZERS_PARALLELISM"


def budget_batches(lengths: Sequence[int], budget: int) -> list[npt.NDArray[np.int64]]:
    """Indices sorted by length (stable) and cut into batches whose rows × longest row stays
    within `budget` (a row longer than the budget is a batch of its own)."""
    if budget < 1:
        raise ValueError(f"the token budget must be >= 1, got {budget}")
    sizes = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(sizes, kind="stable")
    batches: list[npt.NDArray[np.int64]] = []
    start = 0
    for end in range(1, len(order) + 1):
        # sorted ascending: the batch's longest row is its last
        if end > start + 1 and (end - start) * int(sizes[order[end - 1]]) > budget:
            batches.append(order[start : end - 1])
            start = end - 1
    if start < len(order):
        batches.append(order[start:])
    return batches


@contextlib.contextmanager
def _parallel_tokenizing(on: bool) -> Iterator[None]:
    """Let ``tokenizers`` batch on all cores inside the block (it reads the variable on each
    call); the variable is restored after, so it stays set and a later fork stays quiet."""
    if not on:
        yield
        return
    before = os.environ.get(PARALLELISM_ENV)
    os.environ[PARALLELISM_ENV] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PARALLELISM_ENV, None)
        else:
            os.environ[PARALLELISM_ENV] = before


class TorchMiniLM:
    """all-MiniLM-L6-v2 on one torch device (module doc); a `DeviceRunner`.

    Args:
        device: ``cpu`` or ``cuda:N`` (resolved; see `tablequest.corpus.dense.device`).
        token_budget: Padded tokens per batch (default: by device, module doc).
        fp16: Half precision (default: on CUDA only).
        max_seq_length: Tokens kept per text.
    """

    def __init__(
        self,
        device: str = "cpu",
        *,
        token_budget: int | None = None,
        fp16: bool | None = None,
        max_seq_length: int = MINILM_TOKENS,
    ) -> None:
        self.device = device
        cuda = device.startswith("cuda")
        self.token_budget = token_budget or (CUDA_TOKEN_BUDGET if cuda else CPU_TOKEN_BUDGET)
        self.fp16 = cuda if fp16 is None else fp16
        self.max_seq_length = max_seq_length
        self._label: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        """``cpu-fp32``, ``cuda-fp16-nvidia-h200``, …: the device in a cache name."""
        if self._label is None:
            label = f"{self.device.partition(':')[0]}-{'fp16' if self.fp16 else 'fp32'}"
            if self.device.startswith("cuda"):
                gpu = gpu_name(self.device)
                label += "-" + re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
            self._label = label
        return self._label

    @label.setter
    def label(self, value: str) -> None:
        self._label = value

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._model is None:
                try:
                    import torch
                    from tokenizers import Tokenizer
                    from transformers import AutoModel
                except ImportError as exc:
                    raise EncoderUnavailable(
                        f"MiniLM on a torch device needs the [dense] extra: {DENSE_EXTRA_HINT}"
                    ) from exc
                model_dir = shipped_model_dir()
                dtype = torch.float16 if self.fp16 else torch.float32
                with quiet_model_loading():
                    model = AutoModel.from_pretrained(
                        str(model_dir), dtype=dtype, attn_implementation="sdpa"
                    )
                tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
                tokenizer.enable_truncation(self.max_seq_length)
                tokenizer.no_padding()
                self._tokenizer = tokenizer
                self._model = model.to(self.device).eval()
            return self._model, self._tokenizer

    def encode(self, texts: Sequence[str]) -> Matrix:
        """L2-normalized vectors of `texts`, in order (progress via `encoding_progress`)."""
        import torch

        model, tokenizer = self._load()
        if not texts:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        with _parallel_tokenizing(self.device.startswith("cuda")):
            ids = token_ids(tokenizer, texts, self.max_seq_length)
        parts: list[Any] = []
        order: list[npt.NDArray[np.int64]] = []
        done = 0
        with torch.inference_mode():
            for batch in budget_batches([len(x) for x in ids], self.token_budget):
                parts.append(self._forward(model, [ids[i] for i in batch]))
                order.append(batch)
                done += len(batch)
                report_progress(done, len(texts))
            vectors = torch.cat(parts).float().cpu().numpy()
        out = np.empty((len(texts), HIDDEN), dtype=np.float32)
        out[np.concatenate(order)] = vectors
        return out

    def _forward(self, model: Any, rows: list[list[int]]) -> Any:
        """Mean-pooled, L2-normalized vectors of one batch of token id rows (on the device)."""
        import torch

        width = max(len(r) for r in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        cuda = self.device.startswith("cuda")
        ids_t = torch.from_numpy(input_ids).to(self.device, non_blocking=cuda)
        mask_t = torch.from_numpy(mask).to(self.device, non_blocking=cuda)
        hidden = model(
            input_ids=ids_t, attention_mask=mask_t, token_type_ids=torch.zeros_like(ids_t)
        ).last_hidden_state.float()
        weights = mask_t.unsqueeze(-1).float()
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1)
