"""The methods an evaluation run can use, built over a corpus with a gated LLM.

- ``seek``: TableSeek (Algorithm 1) with a `SeekConfig` named like the paper
  (``10step-5s1-small``) plus ablation flags (Tables 6 and 35).
- ``direct``: Direct QA on the question's gold tables (the oracle setting, Tables 10–11).
- ``dense`` / ``bm25`` / ``hybrid`` / ``rerank``: retrieve-then-QA baselines (Table 12): the
  retriever's top-k tables go to the standalone QA prompt; ``rerank`` reorders the dense
  top-`rerank_pool` with a `/v1/rerank` server.

Config names (ours, shown in reports): TableSeek's config name with ``w/o refine`` …
suffixes; ``gold`` for Direct QA; ``{encoder} top-{k}`` for retrievers;
``{encoder}+{reranker} pool-{n} top-{k}`` for rerank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tablequest.corpus.store import Hit, Store
from tablequest.eval.corpora import Corpus, ensure_dense
from tablequest.eval.datasets.common import Question
from tablequest.eval.metrics import mean
from tablequest.eval.retrieval import QueryEncoder, make_encoder
from tablequest.eval.runner import AnswerFn, Gate, GatedLLM, task_of
from tablequest.llm.base import LLM
from tablequest.llm.usage import UsageMeter
from tablequest.methods.base import Result
from tablequest.methods.seek.config import SeekConfig
from tablequest.trace import Trace

__all__ = ["RUN_METHODS", "Answerer", "MethodOptions", "build_answer", "running_metric"]

RUN_METHODS: tuple[str, ...] = ("seek", "direct", "dense", "rerank", "bm25", "hybrid")


@dataclass(frozen=True)
class MethodOptions:
    """Every option of every run method (each method reads its own)."""

    steps: int = 5
    strategy: str = "5s1"
    evidence: str = "small"
    refine: bool = True
    fallback: bool = True
    select: bool = True
    regenerate: bool = True
    match_only: bool = False
    match_only_qa: bool = False
    top_k: int = 1
    encoder: str = "minilm"
    rerank_url: str | None = None
    rerank_model: str | None = None
    rerank_pool: int = 5
    api_key: str | None = None

    def seek_config(self) -> SeekConfig:
        """The TableSeek configuration (ValueError for a bad name or value)."""
        return SeekConfig.named(
            f"{self.steps}step-{self.strategy}-{self.evidence}",
            refine=self.refine,
            fallback=self.fallback,
            select=self.select,
            regenerate=self.regenerate,
            match_only=self.match_only,
            match_only_qa=self.match_only_qa,
        )

    def config_name(self, method: str) -> str:
        """The run's config label; ValueError for an unknown method or bad options."""
        if method not in RUN_METHODS:
            raise ValueError(f"unknown --method {method!r}; one of {', '.join(RUN_METHODS)}")
        if method == "seek":
            cfg = self.seek_config()
            flags = [
                ("refine", cfg.refine),
                ("fallback", cfg.fallback),
                ("select", cfg.select),
                ("regenerate", cfg.regenerate),
            ]
            name = cfg.name + "".join(f" w/o {n}" for n, on in flags if not on)
            if cfg.match_only_qa:
                return name + " match-only QA"
            return name + (" match-only" if cfg.match_only else "")
        if method == "direct":
            return "gold"
        if self.top_k < 1:
            raise ValueError(f"--top-k must be >= 1, got {self.top_k}")
        if method == "bm25":
            return f"top-{self.top_k}"
        if method == "rerank":
            return (
                f"{self.encoder}+{self.rerank_model or '?'} pool-{self.rerank_pool} "
                f"top-{self.top_k}"
            )
        return f"{self.encoder} top-{self.top_k}"


@dataclass
class Answerer:
    """A run's answer function and the gate its LLM calls release."""

    fn: AnswerFn
    gate: Gate


Retriever = Callable[[Store, str, int], list[Hit]]


def _retriever(
    method: str,
    options: MethodOptions,
    corpus: Corpus,
    on_dense: Callable[[Any], None] | None,
    questions: Sequence[str],
) -> Retriever:
    from tablequest.corpus.dense import dense_rank
    from tablequest.corpus.rank import bm25_rank, hybrid_rank
    from tablequest.corpus.rerank import APIReranker, rerank_rank

    if method == "bm25":
        return lambda st, q, k: bm25_rank(st, q, k, rows=False)
    if method == "rerank" and not (options.rerank_url and options.rerank_model):
        raise ValueError("--method rerank needs --rerank-url URL --rerank-model NAME")
    encoder = QueryEncoder(make_encoder(options.encoder))
    (on_dense or (lambda enc: ensure_dense(corpus, enc)))(encoder)
    encoder.prime(questions)  # one batch instead of one slow call per question
    if method == "dense":
        return lambda st, q, k: dense_rank(st, q, k, encoder)
    if method == "hybrid":
        return lambda st, q, k: hybrid_rank(st, q, k, encoder=encoder)
    reranker = APIReranker(
        str(options.rerank_url), str(options.rerank_model), api_key=options.api_key
    )
    pool = options.rerank_pool
    return lambda st, q, k: rerank_rank(st, q, k, encoder=encoder, reranker=reranker, pool=pool)


def build_answer(
    method: str,
    options: MethodOptions,
    llm: LLM,
    corpus: Corpus,
    *,
    on_dense: Callable[[Any], None] | None = None,
    questions: Sequence[Question] = (),
) -> Answerer:
    """The answer function of `method` over `corpus` (LLM calls through a `GatedLLM`).

    `on_dense(encoder)` is called once before a dense-based method starts (default:
    `ensure_dense(corpus, encoder)`); the vectors of `questions` are then computed in one
    batch.

    Raises:
        ValueError: unknown method, bad options, or rerank without a server.
    """
    from tablequest.methods.direct import DirectQA, RetrieveThenQA
    from tablequest.methods.seek import TableSeek

    options.config_name(method)  # validates
    gate = Gate()
    gated = GatedLLM(llm, gate)
    usage = UsageMeter()
    store = corpus.store
    if method == "seek":
        seek = TableSeek(gated, options.seek_config(), usage=usage)

        def run_seek(q: Question, trace: Trace) -> Result:
            return seek.answer(q.question, store, task=task_of(q), trace=trace, query_id=q.id)

        return Answerer(run_seek, gate)
    if method == "direct":
        direct = DirectQA(gated, usage=usage)

        def run_direct(q: Question, trace: Trace) -> Result:
            return direct.answer(
                q.question,
                store,
                task=task_of(q),
                trace=trace,
                query_id=q.id,
                table_ids=corpus.table_ids(q.gold_table_ids),
            )

        return Answerer(run_direct, gate)
    pipeline = RetrieveThenQA(
        gated,
        _retriever(method, options, corpus, on_dense, [q.question for q in questions]),
        name=method,
        top_k=options.top_k,
        usage=usage,
    )

    def run_pipeline(q: Question, trace: Trace) -> Result:
        return pipeline.answer(q.question, store, task=task_of(q), trace=trace, query_id=q.id)

    return Answerer(run_pipeline, gate)


def running_metric(records: Sequence[dict[str, Any]]) -> str:
    """``"em 0.412"``: the mean primary metric of the records so far (for progress bars)."""
    for name in ("f1", "em", "acc", "rouge_l"):
        values = [r["metrics"][name] for r in records if name in r.get("metrics", {})]
        if values:
            return f"{name} {mean(values):.3f}"
    return ""
