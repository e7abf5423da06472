"""LLM-free retrieval evaluation: R@k (and GR@k / DS@k with sibling groups) over a corpus.

Methods: the retrievers of `tablequest.corpus.retrieval.retrievers` (``grep``: Eq. 1 over the
LLM-free `question_patterns(question)`, i.e. TableSeek's ranking without the LLM's patterns;
``bm25``; ``dense``; ``hybrid``; ``rerank``), so a name means the same ranking as in ``search``.
A question is a hit at k when a gold table is among the first k ranked tables; GR@k counts a hit
on any table of its sibling group and DS@k = mean R@k / mean GR@k (TCR-Bench;
`eval.metrics.retrieval`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tablequest.corpus import Corpus, RetrieverSettings, make_retriever
from tablequest.errors import BadValue
from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets.common import Question
from tablequest.eval.metrics.retrieval import (
    discriminative_score,
    group_recall_at_k,
    mean,
    recall_at_k,
)

__all__ = ["DEFAULT_METHOD", "KS", "Ranker", "RetrievalResult", "evaluate_retrieval", "make_ranker"]

DEFAULT_METHOD = "phrase-hybrid"
"""``eval retrieval``'s method unless one is named: the best LLM-free retriever measured on
WTQ training questions that, with the default encoder (`corpus.retrieval.retrievers.
DEFAULT_ENCODER`), evaluates 1,000 WTQ questions cold in the issue-38 budget
(docs/results.md; it was ``bm25``, the cheapest)."""

KS: tuple[int, ...] = (1, 2, 3, 5, 10)
Ranker = Callable[[Corpus, str, int], list[str]]


def make_ranker(method: str, settings: RetrieverSettings | None = None) -> Ranker:
    """A function (store, question, k) → ranked table ids, from the retriever registry.

    The function carries the retriever's `prime` (batch question vectors), its `encoder` and
    `views` (for `eval.corpus_vectors.ensure_dense`, which encodes the corpus once) and its
    `build_indexes` (indexes a cold build makes with the corpus, `eval.corpora.BuildWork`)
    when it has them.

    Raises:
        BadValue: an unknown method or bad setting.
        EncoderUnavailable: the encoder cannot run here.
    """
    retriever = make_retriever(method, settings)

    def ranker(store: Corpus, question: str, k: int) -> list[str]:
        return [h.table_id for h in retriever.rank(store, question, k)]

    for attr in ("prime", "encoder", "views", "build_indexes", "base_indexes"):
        value = getattr(retriever, attr, None)
        if value is not None:
            setattr(ranker, attr, value)
    return ranker


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
    corpus: BuiltCorpus,
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
        BadValue: no question, or a question whose gold table is not in the corpus.
    """
    if not questions:
        raise BadValue("no questions to evaluate")
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
            raise BadValue(f"question {q.id!r}: {exc.args[0]}") from None
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
