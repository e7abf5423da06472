"""Rerank baseline: rerank the dense top-N with a cross-encoder (TableSeek paper, Table 12).

Rerankers (the `Reranker` interface): an OpenAI-compatible server's `/v1/rerank` (Cohere/Jina
style, served by vLLM for e.g. Qwen3-Reranker) or `/v1/score` endpoint, through the one
model-server client (`tablequest.llm.modelserver.ModelServer`). Documents are the tables' plain
serializations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from tablequest.corpus.dense.encoders import Encoder, EncoderUnavailable
from tablequest.corpus.dense.index import dense_rank
from tablequest.corpus.storage.corpus import Corpus
from tablequest.corpus.storage.store import Hit, Store


class Reranker(Protocol):
    name: str

    def scores(self, query: str, documents: Sequence[str]) -> list[float]: ...


class APIReranker:
    """`/v1/rerank` or `/v1/score` of an OpenAI-compatible server, asked through
    `tablequest.llm.modelserver.ModelServer`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        endpoint: Literal["rerank", "score"] = "rerank",
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        from tablequest.llm import ModelServer

        self._server = ModelServer(base_url, api_key=api_key, model=model, timeout=timeout)
        self._server.check()
        self.url = f"{self._server.base_url}/{endpoint}"
        self.endpoint: Literal["rerank", "score"] = endpoint
        self.model = model
        self.name = f"{endpoint}:{model}"

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        from tablequest.llm import ModelServerError

        if not documents:
            return []
        try:
            return self._server.rerank(query, documents, model=self.model, endpoint=self.endpoint)
        except ModelServerError as exc:
            raise EncoderUnavailable(
                f"{self.endpoint} request to {self.url} failed: {exc}"
            ) from exc

    def close(self) -> None:
        """Close the connection to the server (idempotent)."""
        self._server.close()


def rerank_rank(
    store: Store, query: str, k: int, *, encoder: Encoder, reranker: Reranker, pool: int = 5
) -> list[Hit]:
    """Dense top-`pool`, reordered by the reranker; the best k returned."""
    return rerank_hits(store, query, dense_rank(store, query, max(pool, k), encoder), k, reranker)


def rerank_hits(
    store: Corpus, query: str, candidates: Sequence[Hit], k: int, reranker: Reranker
) -> list[Hit]:
    """`candidates` reordered by the reranker's scores of their plain texts; the best k."""
    if not candidates:
        return []
    docs = [store.plain(h.table_id) for h in candidates]
    scores = reranker.scores(query, docs)
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [Hit(candidates[i].table_id, scores[i]) for i in order[:k]]
