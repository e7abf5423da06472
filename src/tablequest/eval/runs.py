"""An evaluation run's answer function: any registered method over a benchmark corpus.

The method comes from the registry (`tablequest.methods.registry`) with its options, exactly
as ``ask`` builds it; its LLM calls go through a `GatedLLM`. Each question gets the source
the method answers from (`MethodSpec.input`): the corpus store for corpus methods (TableSeek,
the retrieve-then-QA baselines), the question's gold table for one-table methods (TableRAG,
TabScope, DTR: the oracle table, as their papers evaluate), the gold tables for ``direct``,
the corpus for ``auto`` (input "any": it retrieves)
(the oracle setting, Tables 10–11), nothing for ``no-table``. Each question gets its own
`StepBudget` (``--steps``, default the method's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets.common import Question
from tablequest.eval.metrics import mean
from tablequest.eval.runner import AnswerFn, Gate, GatedLLM, task_of
from tablequest.llm import LLM, LLMConfig, StepBudget, UsageMeter, default_cache_dir
from tablequest.methods import (
    HasRetriever,
    Method,
    MethodContext,
    MethodOptions,
    MethodSpec,
    Priming,
    Result,
    TableSet,
)
from tablequest.settings import Settings
from tablequest.trace import Trace

__all__ = ["Answerer", "build_answer", "question_source", "running_metric"]


@dataclass
class Answerer:
    """A run's answer function, the gate its LLM calls release, and the method to close."""

    fn: AnswerFn
    gate: Gate
    method: Method

    def close(self) -> None:
        self.method.close()


def question_source(spec: MethodSpec, corpus: BuiltCorpus, q: Question) -> Any:
    """What `spec`'s method answers `q` from (see module doc)."""
    if spec.input in ("corpus", "any"):
        return corpus.store
    if spec.input == "none":
        return None
    ids = corpus.table_ids(q.gold_table_ids)
    if spec.input == "table":
        ids = ids[:1]
    return TableSet([(tid, corpus.store.get(tid)) for tid in ids], corpus.store)


def build_answer(
    spec: MethodSpec,
    options: MethodOptions,
    llm: LLM | None,
    corpus: BuiltCorpus,
    *,
    llm_config: LLMConfig | None = None,
    steps: int | None = None,
    cache: bool = True,
    questions: Sequence[Question] = (),
    on_encoder: Callable[[Any], None] | None = None,
    state_dir: Path | None = None,
    settings: Settings | None = None,
) -> Answerer:
    """The answer function of `spec` with `options` over `corpus`.

    A corpus method with a dense retriever gets the corpus encoded once (`on_encoder(encoder)`,
    e.g. `ensure_dense`) and the vectors of `questions` computed in one batch. `state_dir` is
    where a method keeps what it learns over the run (DTR's experience memory: the corpus is
    read-only), one folder per run. `settings` are the entry point's (embeddings, sandbox,
    the cache folder; None: the environment's, as `MethodContext` says).

    Raises:
        ValueError, EncoderUnavailable: the method cannot be built with these options here.
    """
    gate = Gate()
    gated = GatedLLM(llm, gate) if llm is not None else None
    context = MethodContext(
        llm=gated, usage=UsageMeter(), llm_config=llm_config, cache=cache, state_dir=state_dir,
        cache_dir=default_cache_dir(settings.store) if settings is not None else None,
        settings=settings,
    )  # fmt: skip
    method = spec.build(options, context)
    retriever = method.retriever if isinstance(method, HasRetriever) else None
    if spec.input == "corpus" and isinstance(retriever, Priming):
        if on_encoder is not None:
            on_encoder(retriever.encoder)
        retriever.prime([q.question for q in questions])
    cap = steps if steps is not None else options.default_steps()

    def answer(q: Question, trace: Trace) -> Result:
        source = question_source(spec, corpus, q)
        budget = StepBudget(cap, reserve=0)
        return method.answer(q.question, source, task=task_of(q), budget=budget, trace=trace)

    return Answerer(answer, gate, method)


def running_metric(records: Sequence[dict[str, Any]]) -> str:
    """``"em 0.412"``: the mean primary metric of the records so far (for progress bars)."""
    for name in ("f1", "em", "acc", "rouge_l"):
        values = [r["metrics"][name] for r in records if name in r.get("metrics", {})]
        if values:
            return f"{name} {mean(values):.3f}"
    return ""
