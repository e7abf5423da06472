"""Run the rows of one reproduction: each row is one `eval run` or `eval retrieval`, resumable.

Each answer row appends its records to ``OUT/<row key>.jsonl`` (the `eval run` record log:
a rerun answers only the questions not yet there, and refuses a file written by another
configuration or model) with its traces beside it and its own `eval run` report. A retrieval
row writes ``OUT/<row key>.retrieval.json`` and is reused when it covers the same questions.

Choices (ours):
- A row's options are the paper's configuration alone: defaults < the row's options. The
  user's tablequest.toml is not read for them (a reproduction must not depend on the current
  folder): the run's `Settings` (the command's one load: sandbox, embeddings, device, cache
  and trace folders) reach the methods without their config files (`row_settings`), so no
  method, ``auto``'s stages included, reads ``[methods.NAME]``. Retrieval rows take only the
  device from them (`RetrieverSettings(**options)` names no embeddings server).
- The corpus of each (dataset, split, format) is built once into ``OUT/corpora`` (or
  `cache_dir`) and shared by the rows, as `eval run --cache-dir` does.
- A row with an ``llm_eval`` cell is judged after it ran (LLM-EVAL, RealHiTBench's protocol,
  `tablequest.eval.metrics.judge`) by `RunContext.judge`, by default the served model; the
  paper's judge was GPT-4o, so the report says which model judged.
- A row that cannot run (data folder missing, no model for a method that needs one, an
  unavailable encoder) is recorded with its error and the other rows go on; the CLI exits
  non-zero when any row failed.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.errors import RunError
from tablequest.eval.corpora import BuiltCorpus, CorpusError, build_corpus
from tablequest.eval.corpus_vectors import ensure_dense
from tablequest.eval.datasets import DATASETS, Dataset, DatasetError, Question, load
from tablequest.eval.pipeline import answer_questions, prepared_answer
from tablequest.eval.report import all_failed, summarize, write_report
from tablequest.eval.reproduce.spec import Reproduction, Row
from tablequest.eval.retrieval import evaluate_retrieval, make_ranker
from tablequest.eval.runner import RecordLog, RunnerError, RunSpec, select_questions
from tablequest.eval.siblings import with_siblings
from tablequest.llm import LLM, LLMConfig, LLMError
from tablequest.methods import get_method

if TYPE_CHECKING:
    from tablequest.settings import Settings

__all__ = ["ReproduceError", "RowOutcome", "RunContext", "metric_value", "run_reproduction"]


class ReproduceError(RunError):
    """A row cannot run here (the message names the row and what is missing)."""


@dataclass
class RunContext:
    """Where and with what the rows run."""

    data_root: Path
    out_dir: Path
    llm: LLM | None = None
    llm_config: LLMConfig | None = None
    judge: LLM | None = None
    model: str = ""
    limit: int | None = None
    concurrency: int = 1
    steps: int | None = None
    cache_dir: Path | None = None
    settings: Settings | None = None
    """The run's settings (the entry point's one load; None: the environment's)."""

    @property
    def corpora(self) -> Path:
        return self.cache_dir or self.out_dir / "corpora"

    def row_settings(self) -> Settings | None:
        """`settings` without their config files: a row's method options are its own."""
        return replace(self.settings, files=()) if self.settings is not None else None


@dataclass
class RowOutcome:
    """What one row gave: its metric values by cell metric, or the error that stopped it."""

    key: str
    n: int = 0
    ran: int = 0
    values: dict[str, float | None] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "n": self.n, "ran": self.ran, "values": self.values,
            "status": self.status, "error": self.error, "files": self.files,
            "seconds": round(self.seconds, 3),
        }  # fmt: skip


_GROUP = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<key>[^=\]]+)=(?P<value>[^\]]*)\]$")


def metric_value(summary: dict[str, Any], metric: str) -> float | None:
    """The value of `metric` in a run summary (`eval.report.summarize` or a retrieval payload).

    ``NAME`` is a record metric (or ``acc_sup``/``acc_ref``); ``NAME[KEY=VALUE]`` its mean over
    the records whose breakdown `KEY` is `VALUE`; ``recall@K``, ``group_recall@K``, ``ds@K``
    read a retrieval payload; sub-table scores (``cell_f1``, …) come from a `Row.subtab` run;
    ``steps``, ``usage.FIELD`` (calls, prompt_tokens, …) and
    ``actions.NAME`` are means per question of the run's effort. None when the run has no
    such value.
    """
    group = _GROUP.match(metric)
    if group:
        bucket = summary.get("breakdown", {}).get(group["key"], {}).get(group["value"])
        return None if bucket is None else _number(bucket["metrics"].get(group["name"]))
    if metric == "steps" or metric.startswith(("usage.", "actions.")):
        return _number(summary.get("effort", {}).get("mean", {}).get(metric))
    if "@" in metric:
        name, k = metric.split("@", 1)
        return _number(summary.get(name, {}).get(k))
    value = summary.get("metrics", {}).get(metric)
    if value is None:
        value = summary.get("tabfact", {}).get(metric)
    if value is None:
        value = summary.get("subtab", {}).get("scores", {}).get(metric)
    return _number(value)


def _number(value: Any) -> float | None:
    """A finite number, else None (a mean over no question is NaN: shown as missing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def run_reproduction(
    rep: Reproduction,
    ctx: RunContext,
    *,
    rows: Sequence[Row] | None = None,
    on_row: Callable[[Row, RowOutcome], None] | None = None,
) -> list[RowOutcome]:
    """Run `rows` of `rep` (all by default) in order; return one outcome per row."""
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for row in rows if rows is not None else rep.rows:
        started = time.monotonic()
        try:
            outcome = _run_row(row, ctx)
        except (
            ReproduceError, DatasetError, RunnerError, CorpusError, LLMError, ValueError,
        ) as exc:  # fmt: skip
            outcome = RowOutcome(row.key, error=str(exc) or type(exc).__name__)
        except OSError as exc:
            outcome = RowOutcome(row.key, error=f"cannot write the run of {row.key}: {exc}")
        outcome.seconds = time.monotonic() - started
        outcomes.append(outcome)
        if on_row is not None:
            on_row(row, outcome)
    return outcomes


def _run_row(row: Row, ctx: RunContext) -> RowOutcome:
    dataset = _dataset(row, ctx.data_root)
    questions = select_questions(dataset, limit=ctx.limit)
    if row.siblings:
        dataset = with_siblings(dataset, n=row.siblings, seed=0, questions=questions)
        questions = dataset.questions
    if row.kind == "retrieval":
        return _retrieval_row(row, ctx, dataset, questions)
    return _answer_row(row, ctx, dataset, questions)


def _dataset(row: Row, data_root: Path) -> Dataset:
    if row.dataset not in DATASETS:
        raise ReproduceError(f"{row.key}: dataset {row.dataset!r} has no loader here")
    folder = data_root / row.data_folder
    if not folder.is_dir():
        raise ReproduceError(f"{row.key}: no {row.dataset} data at {folder} (--data)")
    return load(row.dataset, folder, **dict(row.load_options))


def _corpus(row: Row, ctx: RunContext, dataset: Dataset) -> BuiltCorpus:
    return build_corpus(dataset, row.fmt, seed=0, cache_dir=ctx.corpora)


def _answer_row(
    row: Row, ctx: RunContext, dataset: Dataset, questions: list[Question]
) -> RowOutcome:
    spec = get_method(row.method)
    options = spec.make_options(dict(row.options))
    if spec.needs_llm and ctx.llm is None:
        raise ReproduceError(f"{row.key}: {row.method} needs a model: pass --llm-url and --model")
    corpus = _corpus(row, ctx, dataset)
    run_spec = RunSpec(dataset.name, spec.name, options.label(), corpus.format, ctx.model)
    path = ctx.out_dir / f"{row.key}.jsonl"
    answering = prepared_answer(  # built once the store is open, closed before it
        spec, options, ctx.llm, corpus, path, llm_config=ctx.llm_config, steps=ctx.steps,
        questions=questions, on_encoder=lambda enc: _dense(corpus, enc, ctx),
        settings=ctx.row_settings(),
    )  # fmt: skip
    with corpus.store, answering as answer, RecordLog(path, run_spec) as log:
        ran = answer_questions(
            questions, answer, log, spec=run_spec, corpus=corpus, out=path,
            concurrency=ctx.concurrency,
        )  # fmt: skip
    records = [log.records[q.id] for q in questions if q.id in log.records]
    md_path, _ = write_report(path, records)
    if any(cell.metric.startswith("llm_eval") for cell in row.cells):
        records = _judged(records, dataset, ctx, path)
    summary = summarize(records)
    files = [str(path), str(md_path)]
    if row.subtab:
        refs = ctx.out_dir / f"{row.key}.subtab-refs.jsonl"
        summary["subtab"] = _subtab_scores(records, dataset, questions, refs, ctx)
        files.append(str(refs))
    values = {cell.metric: metric_value(summary, cell.metric) for cell in row.cells}
    return RowOutcome(
        row.key, n=len(records), ran=ran, values=values, status=dict(summary["status"]),
        files=files, error=all_failed(records),
    )  # fmt: skip


def _subtab_scores(
    records: list[dict[str, Any]],
    dataset: Dataset,
    questions: list[Question],
    refs: Path,
    ctx: RunContext,
) -> dict[str, Any]:
    """Sub-table quality of the run against silver references (`eval.subtab`), built once
    by the served model (``eval build-subtab``; LLM-free approximations without a model)
    into `refs` and reused by later runs."""
    from tablequest.eval.subtab import build_references, read_references, score_runs

    build_references(dataset, questions, refs, llm=ctx.judge or ctx.llm)
    return score_runs(records, read_references(refs))


def _judged(
    records: list[dict[str, Any]], dataset: Dataset, ctx: RunContext, path: Path
) -> list[dict[str, Any]]:
    """The records with ``metrics["llm_eval"]`` (0–1 here, the paper's 0–100 in the report)
    from the LLM-EVAL judge (`eval.metrics.judge`), judgments kept in ``<row>.judge.jsonl``."""
    from tablequest.eval.metrics.judge import JudgeLog, judge_items, judge_records

    judge = ctx.judge or ctx.llm
    if judge is None:
        raise ReproduceError("LLM-EVAL needs a judge model: pass --llm-url and --model")
    items = judge_items(records, dataset=dataset)
    with JudgeLog(path.with_name(path.name.removesuffix(".jsonl") + ".judge.jsonl")) as log:
        outcome = judge_records(records, judge, items=items, log=log)
    out = []
    for record in outcome.records:
        metrics = dict(record.get("metrics", {}))
        if "llm_eval" in metrics:
            metrics["llm_eval"] = float(metrics["llm_eval"]) / 100.0
        out.append({**record, "metrics": metrics})
    return out


def _dense(corpus: BuiltCorpus, encoder: Any, ctx: RunContext) -> None:
    ensure_dense(corpus, encoder, cache_dir=ctx.corpora)


def _retrieval_row(
    row: Row, ctx: RunContext, dataset: Dataset, questions: list[Question]
) -> RowOutcome:
    from tablequest.corpus import EncoderSettings, RetrieverSettings

    path = ctx.out_dir / f"{row.key}.retrieval.json"
    ids = [q.id for q in questions]
    payload = _saved_retrieval(path, ids)
    ran = 0
    if payload is None:
        options: dict[str, Any] = dict(row.options)
        if ctx.settings is not None:  # the device only: a row names no embeddings server
            loaded = EncoderSettings.from_settings(ctx.settings)
            options.setdefault(
                "embeddings",
                EncoderSettings(device=loaded.device, preferred_device=loaded.preferred_device),
            )
        ranker = make_ranker(row.method, RetrieverSettings(**options))
        corpus = _corpus(row, ctx, dataset)
        with corpus.store:
            encoder = getattr(ranker, "encoder", None)
            if encoder is not None:
                ensure_dense(corpus, encoder, cache_dir=ctx.corpora)
            payload = evaluate_retrieval(corpus, questions, ranker).to_json()
        payload["questions"] = ids
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)  # whole or absent: a killed run leaves no half file
        ran = len(ids)
    values = {cell.metric: metric_value(payload, cell.metric) for cell in row.cells}
    return RowOutcome(row.key, n=len(ids), ran=ran, values=values, files=[str(path)])


def _saved_retrieval(path: Path, ids: list[str]) -> dict[str, Any] | None:
    """A retrieval result saved by an earlier run over the same questions, else None."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(payload, dict) or payload.get("questions") != ids:
        return None
    return payload
