"""QA baselines of the TableSeek paper (Tian et al., 2026; App. D, G, Tables 10–12).

- ``direct`` (`DirectQA`): the standalone QA prompt (Tables 22–23, no answerability option)
  over given tables — the gold tables in the oracle setting (table_source = gold, top_k = 1).
- ``no-table`` (`NoTableQA`): the question alone, no table (App. G, "No-Table QA": a check
  that answers come from the tables, not from the model's memory).
- ``bm25`` / ``dense`` / ``hybrid`` / ``rerank`` (`RetrieveThenQA`): a retriever of
  `tablequest.corpus.retrieval.retrievers` picks the top-k
  tables, then the same standalone QA prompt.

One LLM call per question. A reply that is not the prompt's JSON is taken as the answer when
it is short plain text or has an ``Answer:`` line; one with no answer in that form (long prose,
a greeting, nothing) is "failed" with the reason "the model's reply had no answer in the
expected format" and its start in the trace (ours, issue 36; same parser as TableSeek's QA,
`seek.qa.read_qa`: the paper does not say what happens to an unparsable reply), and leaves
the LLM cache (issue 39).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from tablequest.corpus import ENCODERS, Corpus, Retriever, RetrieverSettings, make_retriever
from tablequest.llm import LLM, QA, Completion, LLMError, Message, StepBudget
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.options import MethodOptions, option
from tablequest.methods.query import start_query
from tablequest.methods.result import Result, Status
from tablequest.methods.seek import prompts
from tablequest.methods.seek.qa import QAOutcome, qa_context, read_qa, record_no_answer
from tablequest.table import Table
from tablequest.trace import Trace

_QA_PAPER = "TableSeek Table 10"


class QAOptions(MethodOptions):
    """The standalone QA call's knobs."""

    max_tokens: int = option(8192, "max new tokens of the QA call", paper="TableSeek Table 7", ge=1)
    temperature: float = option(0.0, "sampling temperature", paper="TableSeek Table 7", ge=0.0)


class DirectOptions(QAOptions):
    """Direct QA over the given tables."""

    def label(self) -> str:
        return "gold"


class NoTableOptions(QAOptions):
    """The no-table baseline: the QA call alone."""

    def label(self) -> str:
        return "no table"


class RetrievalQAOptions(QAOptions):
    """Retrieve-then-QA: the retriever's top-k tables go to QA."""

    RETRIEVER: ClassVar[str] = "bm25"
    """The `corpus.retrievers` name these options build (one options class per baseline)."""

    top_k: int = option(1, "tables given to QA", paper=_QA_PAPER, ge=1)

    def label(self) -> str:
        return f"top-{self.top_k}"


class DenseQAOptions(RetrievalQAOptions):
    """Dense retrieval, then QA."""

    RETRIEVER: ClassVar[str] = "dense"
    encoder: str = option("minilm", "encoder: minilm | hash | api | auto (corpus.encoders)")
    embed_url: str | None = option(
        None, "encoder api/auto: /v1 URL (default: the LLM's)", request=False
    )
    embed_model: str | None = option(None, "encoder api: embedding model name")

    @field_validator("encoder")
    @classmethod
    def _known_encoder(cls, value: str) -> str:
        if value not in ENCODERS:
            raise ValueError(f"unknown encoder {value!r}; one of {', '.join(ENCODERS)}")
        return value

    def label(self) -> str:
        return f"{self.encoder} top-{self.top_k}"


class HybridQAOptions(DenseQAOptions):
    """BM25 and dense fused, then QA."""

    RETRIEVER: ClassVar[str] = "hybrid"
    fusion: Literal["score", "rrf"] = option("score", "score (weighted) or rrf fusion")
    alpha: float = option(0.7, "weight of the dense score (docs/results.md)", ge=0.0, le=1.0)


class RerankQAOptions(DenseQAOptions):
    """Dense top-`rerank_pool` reranked by a server, then QA."""

    RETRIEVER: ClassVar[str] = "rerank"
    rerank_url: str | None = option(
        None, "server with /v1/rerank (default: the LLM's)", request=False
    )
    rerank_model: str | None = option(None, "reranker model name (required)")
    rerank_pool: int = option(5, "dense candidates reranked", paper="TableSeek Table 12", ge=1)

    def label(self) -> str:
        return f"{self.encoder}+{self.rerank_model or '?'} pool-{self.rerank_pool} top-{self.top_k}"


def _status(outcome: QAOutcome) -> Status:
    if outcome.satisfactory:
        return "answered"
    return "failed" if outcome.status == "failed" else "insufficient"


class DirectQA:
    """Answer from the given tables with the standalone QA prompt.

    Args:
        options: `DirectOptions` (a `QAOptions`).
        context: The model and the meter every question's calls roll up into.
    """

    name = "direct"

    def __init__(
        self, options: QAOptions | None = None, context: MethodContext | None = None
    ) -> None:
        self.options = options or DirectOptions()
        self.context = context or MethodContext()

    def close(self) -> None:
        """Nothing to release."""

    def answer(
        self,
        question: str,
        source: TableSet,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """QA over the tables of `source` (the oracle setting passes the gold tables)."""
        return self.answer_tables(question, source.tables, task=task, budget=budget, trace=trace)

    def answer_tables(
        self,
        question: str,
        tables: Sequence[tuple[str, Table]],
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        """QA over `tables` given as (table id, Table) pairs (none: the no-table prompt)."""
        query = start_query(self.context, budget=budget, trace=trace, default_steps=1)
        named = {f"Table_{i}": (tid, t) for i, (tid, t) in enumerate(tables)}
        if named:
            context = qa_context(named, patterns=None)
            messages = prompts.qa_messages(question, task, context, standalone=True)
        else:
            messages = prompts.no_table_messages(question, task)
        reply = self._call(query.llm, messages, query.trace)
        outcome = read_qa(query.llm, reply, named, task=task)  # unusable: leaves the cache
        record_no_answer(query.trace, outcome)
        query.trace.event("qa", tables=list(named), status=outcome.status, answer=outcome.answer)
        result = Result(
            answer=outcome.answer,
            status=_status(outcome),
            tables_consulted=[tid for tid, _ in tables],
            final_table=outcome.final_table,
            evidence=outcome.evidence,
            details={"action_counts": {QA: 1}},
        )
        if result.status != "answered":
            result.details["reason"] = outcome.reason or f"QA said {outcome.status}"
        return query.finish(result, self.name)

    def _call(self, llm: LLM | None, messages: list[Message], trace: Trace) -> Completion | None:
        if llm is None:
            raise ValueError(f"method {self.name} needs an LLM")
        try:
            return llm.chat(
                messages, temperature=self.options.temperature, max_tokens=self.options.max_tokens
            )[0]
        except LLMError as exc:
            trace.event("fallback", stage="qa", reason=f"{type(exc).__name__}: {exc}")
            return None


class NoTableQA(DirectQA):
    """The question alone, no table (a parametric-knowledge check)."""

    name = "no-table"

    def answer(
        self,
        question: str,
        source: Any = None,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        return self.answer_tables(question, [], task=task, budget=budget, trace=trace)


class RetrieveThenQA:
    """A retriever picks the top-k tables; `DirectQA` answers from them.

    Args:
        options: The baseline's options (`RetrievalQAOptions` or a subclass).
        context: The model, its server (embeddings, rerank) and the meter.
        name: The retriever's registered name (default: the options', `RETRIEVER`).
        retriever: A ready retriever (tests); default: `name`'s, built from the options.
    """

    def __init__(
        self,
        options: RetrievalQAOptions | None = None,
        context: MethodContext | None = None,
        *,
        name: str | None = None,
        retriever: Retriever | None = None,
    ) -> None:
        self.options = options or RetrievalQAOptions()
        self.name = name or self.options.RETRIEVER
        self.context = context or MethodContext()
        settings = _settings(self.options, self.context)
        self.retriever = retriever or make_retriever(self.name, settings)
        self.qa = DirectQA(self.options, self.context)

    def close(self) -> None:
        """Nothing to release."""

    def prepare(self, store: Corpus, questions: Sequence[str]) -> None:
        """Encode the corpus and the questions ahead (dense retrievers; batched)."""
        for hook, arg in (("prepare", store), ("prime", questions)):
            fn = getattr(self.retriever, hook, None)
            if callable(fn):
                fn(arg)

    def answer(
        self,
        question: str,
        source: Corpus,
        *,
        task: Task = "tableqa",
        budget: StepBudget | None = None,
        trace: Trace | None = None,
    ) -> Result:
        trace = trace or Trace.in_memory()
        hits = self.retriever.rank(source, question, self.options.top_k)
        trace.event(
            "rank",
            method=self.name,
            hits=[{"table_id": h.table_id, "score": round(h.score, 4)} for h in hits],
        )
        if not hits:
            trace.event("fallback", stage="qa", reason="retriever returned no table")
            result = Result(answer=None, status="insufficient", method=self.name)
            result.details["reason"] = "the retriever returned no table"
            result.trace_path = str(trace.path) if trace.path else None
            return result
        tables = TableSet([(h.table_id, source.get(h.table_id)) for h in hits], source)
        result = self.qa.answer(question, tables, task=task, budget=budget, trace=trace)
        result.method = self.name
        result.details["ranked"] = [h.table_id for h in hits]
        return result


def _settings(options: RetrievalQAOptions, context: MethodContext) -> RetrieverSettings:
    config = context.llm_config
    url = config.url if config else None
    key = config.api_key if config else None
    values: dict[str, Any] = {"api_key": key}
    if isinstance(options, DenseQAOptions):
        embed = context.encoder_settings(options.embed_url, options.embed_model)
        values.update(encoder=options.encoder, embeddings=embed)
    if isinstance(options, HybridQAOptions):
        values.update(fusion=options.fusion, alpha=options.alpha)
    if isinstance(options, RerankQAOptions):
        values.update(
            rerank_url=options.rerank_url or url,
            rerank_model=options.rerank_model,
            rerank_pool=options.rerank_pool,
        )
    return RetrieverSettings(**values)


BASELINES: dict[str, tuple[type[RetrievalQAOptions], str, str]] = {
    "bm25": (RetrievalQAOptions, "BM25", "BM25 top-k tables, then standalone QA"),
    "dense": (DenseQAOptions, "Dense", "dense top-k tables, then standalone QA"),
    "hybrid": (HybridQAOptions, "Hybrid", "BM25 + dense fused top-k tables, then standalone QA"),
    "rerank": (RerankQAOptions, "Rerank", "dense top-N reranked by a server, then standalone QA"),
}


def register() -> None:
    """Register direct, no-table and the retrieve-then-QA baselines."""
    from tablequest.methods.registry import register_method

    paper = (  # the baselines are TableSeek's (its Tables 2, 10, 12)
        "TableSeek: Structure-Preserving Agentic Evidence Seeking over "
        "Heterogeneous Table Corpora (Tian et al., 2026; the paper text gives no arXiv id)"
    )
    register_method(
        "direct",
        DirectQA,
        DirectOptions,
        input="tables",
        description="Direct QA over given tables (the oracle setting with gold tables)",
        title="Direct QA (gold)",
        paper=paper,
    )
    register_method(
        "no-table",
        NoTableQA,
        NoTableOptions,
        input="none",
        description="No-table QA: the question alone (a parametric-knowledge check)",
        title="No-table QA",
        paper=paper,
    )
    for name, (options, title, description) in BASELINES.items():
        register_method(
            name, RetrieveThenQA, options, input="corpus", description=description,
            title=title, paper=paper,
        )  # fmt: skip
