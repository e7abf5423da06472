"""all-MiniLM-L6-v2 on ONNX Runtime: exported once from the shipped weights, no network.

Export (`export_onnx`, once per weights and `ONNX_VERSION`, cached by
`tablequest.corpus.dense.minilm_files.build_once`): the transformers BERT model of the shipped
weights with sentence-transformers' mean pooling inside the graph, traced by
``torch.onnx.export`` (the TorchScript exporter: the dynamo one needs ``onnxscript``), with
eager attention and a padded example batch so that the attention mask is part of the traced
graph; then ONNX Runtime's BERT graph fusions (attention, skip-layer-norm, bias-GELU); the
``int8`` variant then quantizes weights dynamically, per channel with reduced range (plain
int8 drops the cosine to ≈ 0.94 on CPUs without VNNI: the u8×s8 products saturate).

Encoding (`ONNXMiniLMEncoder`): the shipped tokenizer (``tokenizers``) cuts at 128 tokens,
texts are sorted by token count and batched (little padding), batches run on one ORT session
whose intra-op pool has one thread per available core (`available_cores`) and does not spin
while idle (spinning threads starve each other on a shared machine); results are put back in
input order and L2-normalized. Long texts are cut on a whitespace boundary before tokenizing
(WordPiece tokenizes a whitespace-cut prefix into a prefix of the full text's tokens; a cut
text that yields fewer than 128 tokens is tokenized again whole), so a 40 kB table costs what
its first few hundred words cost.

Choices (ours): fp32 is the default: its vectors equal sentence-transformers' to cosine
> 0.9999; int8 is 1.3–1.5× faster on AVX2 but its worst texts fall to cosine ≈ 0.98
(docs/results.md), below the 0.99 we require of a drop-in.
"""

from __future__ import annotations

import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.encoder_base import (
    CHARS_PER_TOKEN_CUT,
    DENSE_EXTRA_HINT,
    MINILM_TOKENS,
    EncoderUnavailable,
    Matrix,
    available_cores,
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

__all__ = ["ONNX_VERSION", "ONNXMiniLMEncoder", "export_onnx", "onnx_model_path", "token_ids"]

ONNX_VERSION = 1
HIDDEN, HEADS = 384, 12
STAGE = "exporting MiniLM to ONNX (first use, ~1 min)…"
STAGE_INT8 = "exporting MiniLM to ONNX and quantizing it to int8 (first use, ~1 min)…"


def onnx_model_path(*, int8: bool, cache_dir: str | Path | None = None) -> Path:
    """Where the exported model of the shipped weights lives (it may not exist yet)."""
    digest = weights_digest(shipped_model_dir())
    kind = "int8" if int8 else "fp32"
    return encoders_cache_dir(cache_dir) / f"minilm-{digest}-onnx-{kind}-v{ONNX_VERSION}.onnx"


def export_onnx(model_dir: Path, dest: Path, *, int8: bool) -> None:
    """Write the ONNX model of the weights in `model_dir` to `dest` (see the module doc).

    Raises:
        EncoderUnavailable: torch, transformers or onnxruntime is missing.
    """
    try:
        import torch
        from onnxruntime.transformers import optimizer
        from transformers import AutoModel
    except ImportError as exc:
        raise EncoderUnavailable(f"exporting MiniLM to ONNX needs {DENSE_EXTRA_HINT}") from exc

    class Pooled(torch.nn.Module):  # type: ignore[misc]  # torch is not analyzed (pyproject)
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            types = torch.zeros_like(input_ids)
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=types).last_hidden_state  # fmt: skip
            mask = attention_mask.unsqueeze(-1).to(out.dtype)
            return (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    with (
        quiet_model_loading(),
        warnings.catch_warnings(),
        tempfile.TemporaryDirectory(dir=dest.parent) as work,
    ):
        bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
        ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])  # one padded row
        raw = Path(work) / "raw.onnx"
        warnings.simplefilter("ignore")  # the legacy exporter's and tracer's notices
        axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"}}  # fmt: skip
        torch.onnx.export(Pooled(bert).eval(), (ids, (ids != 0).long()), str(raw),
                          input_names=["input_ids", "attention_mask"],
                          output_names=["embedding"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)  # fmt: skip
        fused = optimizer.optimize_model(
            str(raw), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN, opt_level=1
        )
        if not int8:
            fused.save_model_to_file(str(dest))
            return
        fused_path = Path(work) / "fused.onnx"
        fused.save_model_to_file(str(fused_path))
        _quantize(fused_path, dest)


def _quantize(source: Path, dest: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(dest), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip


def token_ids(tokenizer: Any, texts: Sequence[str], max_tokens: int) -> list[list[int]]:
    """Token ids of each text (with [CLS]/[SEP], cut at `max_tokens`), tokenizing only the
    prefix of a long text that can reach the cut."""
    limit = max_tokens * CHARS_PER_TOKEN_CUT
    cut = [cut_at_whitespace(t, limit) for t in texts]
    ids = [list(e.ids) for e in tokenizer.encode_batch(cut)]
    short = [i for i, t in enumerate(cut) if len(ids[i]) < max_tokens and t is not texts[i]]
    if short:
        again = tokenizer.encode_batch([texts[i] for i in short])
        for i, enc in zip(short, again, strict=True):
            ids[i] = list(enc.ids)
    return ids


def length_batches(lengths: Sequence[int], batch_size: int) -> list[npt.NDArray[np.int64]]:
    """Indices grouped into batches of similar length (shortest first, stable)."""
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class ONNXMiniLMEncoder:
    """all-MiniLM-L6-v2 (shipped weights) on ONNX Runtime, fp32 or int8 (module doc)."""

    def __init__(
        self,
        *,
        int8: bool = False,
        batch_size: int = 32,
        max_seq_length: int = MINILM_TOKENS,
        threads: int | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        """`threads`: ORT intra-op threads (default: the machine's cores)."""
        self.int8 = int8
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.threads = threads or available_cores()
        self.cache_dir = cache_dir
        kind = "+onnx-int8" if int8 else "+onnx"
        self.name = f"all-MiniLM-L6-v2@{max_seq_length}{kind}-v{ONNX_VERSION}"
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise EncoderUnavailable(
                        f"the minilm encoder needs the [dense] extra: {DENSE_EXTRA_HINT}"
                    ) from exc
                model_dir = shipped_model_dir()
                path = build_once(
                    onnx_model_path(int8=self.int8, cache_dir=self.cache_dir),
                    lambda tmp: export_onnx(model_dir, tmp, int8=self.int8),
                    stage=STAGE_INT8 if self.int8 else STAGE,
                )
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                self._session = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
                tokenizer.enable_truncation(self.max_seq_length)
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def encode(self, texts: Sequence[str]) -> Matrix:
        """L2-normalized vectors of `texts`, in order (progress via `encoding_progress`)."""
        session, tokenizer = self._load()
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        ids = token_ids(tokenizer, texts, self.max_seq_length)
        done = 0
        for batch in length_batches([len(x) for x in ids], self.batch_size):
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            out[batch] = session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]
            done += len(batch)
            report_progress(done, len(texts))
        return normalize(out)
