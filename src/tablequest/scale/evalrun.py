"""`eval run --ray` and `--shards`: a benchmark's questions as Ray tasks, a sharded corpus.

Questions run as in `tablequest.scale.batch` (one task per question, bound to an LLM
endpoint, per-endpoint bound, cache actor, records appended by the driver to the same
resumable run file `eval.runner.RecordLog`). A worker opens the benchmark's corpus once
(read-only; a sharded one ranks on the run's shared shard actors) and builds the method once
per endpoint (`eval.runs.build_answer`); each record is `eval.runner.question_record`,
exactly what the thread-pool runner writes.

`shard_corpus` copies a built benchmark corpus into N shards next to it (kept: the copy is
keyed by the corpus file's name, which holds the corpus fingerprint), so every method and
retriever of ``eval`` runs on a sharded corpus with ``--shards N``.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.corpus import Corpus, copy_into_shards, open_corpus
from tablequest.errors import BadValue
from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets.common import Question
from tablequest.eval.runner import RecordLog, RunSpec, question_record, trace_file
from tablequest.eval.runs import Answerer, build_answer
from tablequest.llm import LLMConfig
from tablequest.methods import MethodOptions, Result, get_method
from tablequest.scale.actors import RayShards, attach, shard_files
from tablequest.scale.batch import CacheActor, Endpoint, EndpointScheduler
from tablequest.scale.batchrun import (
    BatchJob,
    BatchOutcome,
    cache_folder,
    endpoint_llm,
    shards_name,
)
from tablequest.scale.cluster import connect
from tablequest.settings import Settings
from tablequest.trace import Trace

__all__ = ["EvalJob", "run_eval_ray", "shard_corpus"]


def shard_corpus(corpus: BuiltCorpus, n: int) -> BuiltCorpus:
    """`corpus` with its tables in N shards (built next to the corpus file once).

    Raises:
        BadValue: an in-memory corpus (nothing to shard next to).
    """
    if corpus.path is None:
        raise BadValue("--shards needs a corpus file (not an in-memory corpus)")
    manifest = corpus.path.with_name(f"{corpus.path.stem}.s{n}.json")
    if not manifest.exists():
        local = corpus.store.shards[0]  # a built benchmark corpus is one store
        copy_into_shards(local, manifest, n)
    corpus.store.close()
    return dataclasses.replace(corpus, path=manifest, store=open_corpus(manifest), read_only=True)


@dataclass(frozen=True)
class EvalJob:
    """What every eval question task needs (put in the object store once).

    `corpus` travels without its store (`detached`); workers reopen `store_path` (a store
    file, or a sharded corpus's manifest) read-only. `settings` are the driver's one load, as
    `BatchJob`'s.
    """

    spec: RunSpec
    method: str
    options: MethodOptions
    corpus: BuiltCorpus
    store_path: str
    sharded: bool
    llm: LLMConfig
    steps: int | None = None
    cache: bool = True
    cache_dir: str | None = None
    trace_dir: str | None = None
    shards_name: str | None = None
    pool: tuple[str, ...] = ()
    settings: Settings = dataclasses.field(default_factory=Settings)

    @classmethod
    def detached(cls, corpus: BuiltCorpus, **fields: Any) -> EvalJob:
        """A job over `corpus`, whose store stays in the driver."""
        sharded = corpus.store.manifest is not None
        path = corpus.path
        if path is None:
            raise BadValue("eval on Ray needs a corpus file (not an in-memory corpus)")
        bare = dataclasses.replace(corpus, store=None)  # type: ignore[arg-type]
        return cls(corpus=bare, store_path=str(path), sharded=sharded, **fields)


_WORKER: dict[Any, Any] = {}  # per worker process: the opened corpus, the built answerers


def _corpus(job: EvalJob) -> BuiltCorpus:
    key = ("corpus", job.store_path, job.shards_name)
    if key not in _WORKER:
        store: Corpus = open_corpus(job.store_path, lock_timeout=job.settings.store.lock_timeout)
        if job.sharded and job.shards_name is not None:  # the run's shard actors
            attach(store, "auto", name=job.shards_name, owner=False,
                   lock_timeout=job.settings.store.lock_timeout)  # fmt: skip
        _WORKER[key] = dataclasses.replace(job.corpus, store=store, read_only=True)
    corpus: BuiltCorpus = _WORKER[key]
    return corpus


def _answerer(job: EvalJob, endpoint: Endpoint, cache: Any | None) -> Answerer:
    key = ("answer", job.spec, endpoint.url, job.shards_name)
    if key not in _WORKER:
        batch = BatchJob(llm=job.llm, pool=job.pool)
        llm = endpoint_llm(batch, endpoint, cache)
        _WORKER[key] = build_answer(
            get_method(job.method),
            job.options,
            llm,
            _corpus(job),
            llm_config=dataclasses.replace(job.llm, url=endpoint.url),
            steps=job.steps,
            cache=job.cache,
            settings=job.settings,
        )
    answerer: Answerer = _WORKER[key]
    return answerer


def answer_eval_question(
    job: EvalJob, endpoint: Endpoint, q: Question, cache: Any | None
) -> dict[str, Any]:
    """One benchmark question (the body of a Ray task): its run-file record."""
    corpus = _corpus(job)
    path = trace_file(Path(job.trace_dir), q.id) if job.trace_dir else None
    if path is not None:
        path.unlink(missing_ok=True)
    trace = Trace(path)
    start = time.monotonic()
    error = None
    try:
        answer = _answerer(job, endpoint, cache)
        with answer.gate.held():
            result = answer.fn(q, trace)
    except Exception as exc:  # recorded, never a crash of the run
        error = f"{type(exc).__name__}: {exc}"
        trace.event("error", stage="eval", error=error, traceback=traceback.format_exc(limit=8))
        result = Result(answer=None, status="failed", trace_path=str(path) if path else None)
    record = question_record(job.spec, q, result, corpus, time.monotonic() - start, error)
    record["endpoint"] = endpoint.url
    return record


def run_eval_ray(
    questions: Sequence[Question],
    job: EvalJob,
    endpoints: Sequence[Endpoint],
    log: RecordLog,
    *,
    address: str,
    cpus_per_question: float = 0.5,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> BatchOutcome:
    """Answer every question not yet in `log` on Ray (see module doc).

    The driver's corpus store must be open read-only (workers open it too).
    """
    if not endpoints:
        raise BadValue("no LLM endpoint: pass --llm-url (repeatable)")
    ray = connect(address)
    pending = [q for q in questions if q.id not in log.done]
    outcome = BatchOutcome(resumed=len(questions) - len(pending))
    if not pending:
        return outcome
    owned: RayShards | None = None
    if job.sharded:
        name = shards_name(f"{log.path.resolve()}:{time.time_ns()}", job.store_path)
        with open_corpus(job.store_path, lock_timeout=job.settings.store.lock_timeout) as store:
            owned = RayShards(shard_files(store), name=name,
                              lock_timeout=job.settings.store.lock_timeout)  # fmt: skip
        job = dataclasses.replace(job, shards_name=name)
    job = dataclasses.replace(job, pool=tuple(e.url for e in endpoints))
    folder = str(cache_folder(job.cache_dir, job.settings))
    cache = ray.remote(CacheActor).options(num_cpus=0).remote(folder) if job.cache else None
    task = ray.remote(answer_eval_question).options(num_cpus=cpus_per_question, max_retries=3)
    job_ref = ray.put(job)

    def finished(q: Question, slot: int, record: dict[str, Any]) -> None:
        log.append(record)
        outcome.ran += 1
        if on_record is not None:
            on_record(record)

    scheduler = EndpointScheduler(
        endpoints,
        submit=lambda q, i: task.remote(job_ref, endpoints[i], q, cache),
        wait=lambda refs: ray.wait(refs, num_returns=1)[0],
        result=ray.get,
    )
    try:
        scheduler.run(pending, finished, lambda q, slot, exc: outcome.lost.append(q.id))
    finally:
        if owned is not None:
            owned.close()
        if cache is not None:
            ray.kill(cache)
    outcome.peak_in_flight = list(scheduler.peak)
    return outcome
