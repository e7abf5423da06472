"""Rerank baseline: rerank the dense top-N with a cross-encoder (papers/tableseek.txt Table 12).

Rerankers (the `Reranker` interface): an OpenAI-compatible server's `/v1/rerank` (Cohere/Jina
style, served by vLLM for e.g. Qwen3-Reranker) or `/v1/score` endpoint. Documents are the
tables' plain serializations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import httpx

from tablequest.corpus.dense.encoders import Encoder, EncoderUnavailable
from tablequest.corpus.dense.index import dense_rank
from tablequest.corpus.storage.store import Hit, Store
from tablequest.waits import waiting


class Reranker(Protocol):
    name: str

    def scores(self, query: str, documents: Sequence[str]) -> list[float]: ...


class APIReranker:
    """`/v1/rerank` or `/v1/score` of an OpenAI-compatible server."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        endpoint: Literal["rerank", "score"] = "rerank",
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        from tablequest.llm.guard import check_model_request

        check_model_request(base_url, model=model)
        self.url = base_url.rstrip("/") + f"/{endpoint}"
        self.endpoint = endpoint
        self.model = model
        self.name = f"{endpoint}:{model}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        if self.endpoint == "rerank":
            body: dict[str, Any] = {
                "model": self.model,
                "query": query,
                "documents": list(documents),
                "top_n": len(documents),
            }
        else:
            body = {"model": self.model, "text_1": query, "text_2": list(documents)}
        try:
            with waiting():  # the host may run other work meanwhile (tablequest.waits)
                reply = self._client.post(self.url, json=body)
            reply.raise_for_status()
            data = reply.json()
            items = data["results"] if self.endpoint == "rerank" else data["data"]
            out = [0.0] * len(documents)
            for item in items:
                score = item.get("relevance_score", item.get("score"))
                out[int(item["index"])] = float(score)
        except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise EncoderUnavailable(
                f"{self.endpoint} request to {self.url} failed: {exc}"
            ) from exc
        return out


def rerank_rank(
    store: Store, query: str, k: int, *, encoder: Encoder, reranker: Reranker, pool: int = 5
) -> list[Hit]:
    """Dense top-`pool`, reordered by the reranker; the best k returned."""
    return rerank_hits(store, query, dense_rank(store, query, max(pool, k), encoder), k, reranker)


def rerank_hits(
    store: Store, query: str, candidates: Sequence[Hit], k: int, reranker: Reranker
) -> list[Hit]:
    """`candidates` reordered by the reranker's scores of their plain texts; the best k."""
    if not candidates:
        return []
    docs = [store.plain(h.table_id) for h in candidates]
    scores = reranker.scores(query, docs)
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [Hit(candidates[i].table_id, scores[i]) for i in order[:k]]
