"""The answering part of one evaluation run, shared by ``tablequest eval run`` and ``eval
reproduce``: the method's answer function prepared over the corpus, then the questions not yet
in the run's record file answered into it.

A run's records go to ``NAME.jsonl``; its traces to ``NAME.traces`` (`trace.runs`) and what a
method learns over the run (DTR's experience memory) to ``NAME.state`` (`run_state_dir`), both
beside the records. Callers keep what differs between them: the CLI's progress bar (through
`on_record`) and its Ray path (which uses the prepared answer only to get the corpus encoded
once), reproduce's per-row reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets import Question
from tablequest.eval.runner import RecordLog, RunSpec, run_questions
from tablequest.eval.runs import Answerer, build_answer
from tablequest.llm import LLM, LLMConfig
from tablequest.methods import MethodOptions, MethodSpec
from tablequest.settings import Settings
from tablequest.trace.runs import run_trace_dir

__all__ = ["answer_questions", "prepared_answer", "run_state_dir"]


def run_state_dir(out: Path) -> Path:
    """The folder where the methods of the run recorded in `out` keep their state
    (``x.jsonl`` → ``x.state``)."""
    return out.with_name(out.name.removesuffix(".jsonl") + ".state")


@contextmanager
def prepared_answer(
    spec: MethodSpec,
    options: MethodOptions,
    llm: LLM | None,
    corpus: BuiltCorpus,
    out: Path,
    *,
    llm_config: LLMConfig | None = None,
    steps: int | None = None,
    cache: bool = True,
    questions: Sequence[Question] = (),
    on_encoder: Callable[[Any], None] | None = None,
    settings: Settings | None = None,
) -> Iterator[Answerer]:
    """`eval.runs.build_answer` for the run recorded in `out` (its state folder beside it;
    `settings`: the entry point's), closed when the block ends.

    Raises:
        ValueError, EncoderUnavailable: the method cannot be built with these options here.
    """
    answer = build_answer(
        spec, options, llm, corpus, llm_config=llm_config, steps=steps, cache=cache,
        questions=questions, on_encoder=on_encoder, state_dir=run_state_dir(out),
        settings=settings,
    )  # fmt: skip
    try:
        yield answer
    finally:
        answer.close()


def answer_questions(
    questions: Sequence[Question],
    answer: Answerer,
    log: RecordLog,
    *,
    spec: RunSpec,
    corpus: BuiltCorpus,
    out: Path,
    concurrency: int = 1,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """Answer the `questions` not yet in `log` (`eval.runner.run_questions`), tracing each into
    the run's trace folder; return how many were run now."""
    return run_questions(
        questions, answer.fn, log, spec=spec, corpus=corpus, gate=answer.gate,
        concurrency=concurrency, trace_dir=run_trace_dir(out), on_record=on_record,
    )  # fmt: skip
