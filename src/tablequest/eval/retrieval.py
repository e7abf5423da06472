"""LLM-free retrieval evaluation: R@k (and GR@k / DS@k with sibling groups) over a corpus.

Methods (TableSeek baselines, §Evaluation): ``bm25`` (`corpus.rank.bm25_rank`), ``dense``
(`corpus.dense.dense_rank`, MiniLM by default), ``grep`` (Eq. 1 over the LLM-free
`question_patterns(question)`, i.e. TableSeek's ranking without the LLM's patterns) and
``hybrid`` (`corpus.rank.hybrid_rank`, BM25 and dense fused). A question is a hit at k when a
gold table is among the first k ranked tables; GR@k counts a hit on any table of its sibling
group and DS@k = mean R@k / mean GR@k (TCR-Bench; `eval.metrics.retrieval`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tablequest.corpus.store import Store
from tablequest.eval.corpora import Corpus
from tablequest.eval.datasets.common import Question
from tablequest.eval.metrics.retrieval import (
    discriminative_score,
    group_recall_at_k,
    mean,
    recall_at_k,
)

__all__ = [
    "KS",
    "MINILM_TOKENS",
    "RETRIEVAL_METHODS",
    "QueryEncoder",
    "Ranker",
    "RetrievalResult",
    "evaluate_retrieval",
    "make_encoder",
    "make_ranker",
]

RetrievalMethod = Literal["bm25", "dense", "grep", "hybrid"]
RETRIEVAL_METHODS: tuple[str, ...] = ("bm25", "dense", "grep", "hybrid")
KS: tuple[int, ...] = (1, 2, 3, 5, 10)
MINILM_TOKENS = 128  # MiniLM's training length; as good as 256 on WTQ training, half the cost
Ranker = Callable[[Store, str, int], list[str]]


def make_encoder(name: str) -> Any:
    """Dense encoder by name: ``minilm`` (all-MiniLM-L6-v2, inputs cut at `MINILM_TOKENS`
    tokens) or ``hash`` (no model)."""
    from tablequest.corpus.dense import HashEncoder, MiniLMEncoder

    if name == "minilm":
        return MiniLMEncoder(max_seq_length=MINILM_TOKENS)
    if name == "hash":
        return HashEncoder()
    raise ValueError(f"unknown encoder {name!r}; use minilm or hash")


class QueryEncoder:
    """An encoder whose question vectors can be computed ahead, in batches (`prime`).

    Encoding one short question at a time costs ~20× more per question than a batch on a
    CPU (measured 0.59 s vs 0.034 s for MiniLM on a loaded 2-core machine), so the evaluator
    primes all questions first. Other texts (tables) go straight to the wrapped encoder.
    """

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.name: str = encoder.name
        self._memo: dict[str, Any] = {}

    def prime(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.encoder.encode(missing), strict=True))

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if texts and all(t in self._memo for t in texts):
            return np.stack([self._memo[t] for t in texts])
        return self.encoder.encode(texts)


def make_ranker(
    method: str, *, encoder: Any = None, fusion: str = "score", alpha: float | None = None
) -> Ranker:
    """A function (store, question, k) → ranked table ids for a retrieval method.

    `fusion` and `alpha` only apply to ``hybrid`` (see `corpus.rank.hybrid_rank`).
    """
    from tablequest.corpus.dense import dense_rank
    from tablequest.corpus.rank import (
        HYBRID_ALPHA,
        bm25_rank,
        grep_index,
        hybrid_rank,
        question_patterns,
    )

    if method == "bm25":
        return lambda st, q, k: [h.table_id for h in bm25_rank(st, q, k, rows=False)]
    if method == "grep":

        def grep(st: Store, q: str, k: int) -> list[str]:
            index = grep_index(st)
            return [index.ids[i] for i, _ in index.top(question_patterns(q), k)]

        return grep
    if method not in RETRIEVAL_METHODS:
        raise ValueError(
            f"unknown retrieval method {method!r}; one of {', '.join(RETRIEVAL_METHODS)}"
        )
    if encoder is None:
        raise ValueError(f"--method {method} needs a dense encoder")
    if not isinstance(encoder, QueryEncoder):
        encoder = QueryEncoder(encoder)
    if method == "dense":
        dense = encoder

        def ranker(st: Store, q: str, k: int) -> list[str]:
            return [h.table_id for h in dense_rank(st, q, k, dense)]

        ranker.prime = encoder.prime  # type: ignore[attr-defined]
        return ranker
    weight = HYBRID_ALPHA if alpha is None else alpha

    def hybrid(st: Store, q: str, k: int) -> list[str]:
        hits = hybrid_rank(st, q, k, encoder=encoder, fusion=fusion, alpha=weight)
        return [h.table_id for h in hits]

    hybrid.prime = encoder.prime  # type: ignore[attr-defined]
    return hybrid


@dataclass
class RetrievalResult:
    """Aggregate recall of one method over questions, plus per-question gold ranks."""

    n: int
    recall: dict[int, float]
    group_recall: dict[int, float] | None = None
    ds: dict[int, float] | None = None
    seconds: float = 0.0
    gold_ranks: dict[str, int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"n", "recall": {"1": …}, ["group_recall", "ds"], "seconds"}``."""
        out: dict[str, Any] = {"n": self.n, "recall": _keyed(self.recall)}
        if self.group_recall is not None and self.ds is not None:
            out["group_recall"] = _keyed(self.group_recall)
            out["ds"] = _keyed(self.ds)
        out["seconds"] = round(self.seconds, 2)
        return out


def _keyed(values: dict[int, float]) -> dict[str, float]:
    return {str(k): round(v, 4) for k, v in values.items()}


def evaluate_retrieval(
    corpus: Corpus,
    questions: Sequence[Question],
    ranker: Ranker,
    *,
    ks: Sequence[int] = KS,
    progress: Callable[[int, int, str], None] | None = None,
) -> RetrievalResult:
    """Rank the corpus for every question and measure R@k (GR@k and DS@k with groups).

    `progress` is called after each question with (done, total, running metric text), the
    running metric being R@1 (or the smallest k) over the questions done so far.

    Raises:
        ValueError: no question, or a question whose gold table is not in the corpus.
    """
    if not questions:
        raise ValueError("no questions to evaluate")
    depth = max(ks)
    start = time.monotonic()
    hits: dict[int, list[float]] = {k: [] for k in ks}
    group_hits: dict[int, list[float]] = {k: [] for k in ks}
    has_groups = any(q.group for q in questions)
    ranks: dict[str, int | None] = {}
    prime = getattr(ranker, "prime", None)
    if callable(prime):
        prime([q.question for q in questions])
    for done, q in enumerate(questions, start=1):
        try:
            gold = corpus.table_ids(q.gold_table_ids)
            group = corpus.table_ids(q.group) if q.group else gold
        except KeyError as exc:
            raise ValueError(f"question {q.id!r}: {exc.args[0]}") from None
        ranked = ranker(corpus.store, q.question, depth)
        ranks[q.id] = next((i for i, t in enumerate(ranked, start=1) if t in gold), None)
        for k in ks:
            hits[k].append(recall_at_k(ranked, gold, k))
            group_hits[k].append(group_recall_at_k(ranked, [*group, *gold], k))
        if progress is not None:
            first = min(ks)
            progress(done, len(questions), f"R@{first} {mean(hits[first]):.3f}")
    result = RetrievalResult(
        n=len(questions),
        recall={k: mean(v) for k, v in hits.items()},
        seconds=time.monotonic() - start,
        gold_ranks=ranks,
    )
    if has_groups:
        result.group_recall = {k: mean(v) for k, v in group_hits.items()}
        result.ds = {k: discriminative_score(hits[k], group_hits[k]) for k in ks}
    return result
