"""`run_batch`: a user's question list answered on Ray (see `tablequest.scale.batch`)."""

from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.corpus import Corpus, is_corpus_file, open_corpus
from tablequest.errors import BadValue
from tablequest.eval.runner import RecordLog
from tablequest.llm import (
    LLM,
    CachedLLM,
    Completion,
    LLMConfig,
    Message,
    build_llm,
    default_cache_dir,
)
from tablequest.methods import Task, ask
from tablequest.scale.actors import RayShards, attach, shard_files
from tablequest.scale.batch import ActorCache, BatchQuestion, CacheActor, Endpoint
from tablequest.scale.batch import EndpointScheduler as EndpointScheduler
from tablequest.scale.cluster import connect
from tablequest.settings import Settings

__all__ = [
    "BatchJob",
    "BatchOutcome",
    "answer_question",
    "cache_folder",
    "endpoint_llm",
    "run_batch",
]


@dataclass(frozen=True)
class BatchJob:
    """What every question task needs (pickled to the workers). `settings` are the driver's
    one load (the CLI's; default: the defaults): the reading budget, sandbox, traces,
    embeddings, store and method configs a worker uses, so that it reads no tablequest.toml
    and, of its environment, only process-wide preferences (docs/scale.md)."""

    method: str = "auto"
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    config: str | None = None
    steps: int | None = None
    task: Task = "tableqa"
    source: str | None = None
    llm: LLMConfig = dataclasses.field(default_factory=LLMConfig)
    cache: bool = True
    cache_dir: str | None = None
    trace_dir: str | None = None
    shards_name: str | None = None  # prefix of the run's shared shard actors
    pool: tuple[str, ...] = ()  # every endpoint URL of the run (replicas of one model)
    settings: Settings = dataclasses.field(default_factory=Settings)


def cache_folder(cache_dir: str | None, settings: Settings) -> Path:
    """`cache_dir`, else the settings' cache folder (never the worker's environment)."""
    return Path(cache_dir) if cache_dir else default_cache_dir(settings.store)


@dataclass
class BatchOutcome:
    """What `run_batch` did: questions run now, already recorded, failed for good."""

    ran: int = 0
    resumed: int = 0
    lost: list[str] = dataclasses.field(default_factory=list)
    peak_in_flight: list[int] = dataclasses.field(default_factory=list)


_OPEN: dict[str, Corpus] = {}  # sources this worker process opened (kept for its lifetime)


def shards_name(run: str, manifest: str) -> str:
    """The shared actors' name prefix for one corpus of one run."""
    return "tq-" + hashlib.sha256(f"{run}\0{manifest}".encode()).hexdigest()[:12]


def _open(path: str, job: BatchJob) -> str | Corpus:
    """A store or sharded corpus opened once per worker; other sources as the path."""
    if path in _OPEN:
        return _OPEN[path]
    p = Path(path)
    if not is_corpus_file(p):
        return path
    corpus = open_corpus(p, lock_timeout=job.settings.store.lock_timeout)
    if corpus.manifest is not None and job.shards_name is not None:  # the run's actors
        name = shards_name(job.shards_name, str(p.resolve()))
        attach(corpus, "auto", name=name, owner=False,
               lock_timeout=job.settings.store.lock_timeout)  # fmt: skip
    _OPEN[path] = corpus
    return corpus


class Replica(LLM):
    """One endpoint of a pool of replicas: it names the pool, not its URL, in `describe`,
    so a completion cached from one replica answers the same call on any other."""

    def __init__(self, inner: LLM, pool: Sequence[str]) -> None:
        self.inner = inner
        self.pool = "replicas:" + ",".join(sorted(pool))

    def describe(self) -> dict[str, str]:
        return {**self.inner.describe(), "url": self.pool}

    def context_length(self) -> int | None:
        return self.inner.context_length()

    def chat(self, messages: Sequence[Message], **params: Any) -> list[Completion]:
        return self.inner.chat(messages, **params)

    def discard(self, reply: Completion) -> None:
        self.inner.discard(reply)

    def close(self) -> None:
        self.inner.close()


def endpoint_llm(job: BatchJob, endpoint: Endpoint, cache: Any | None) -> LLM:
    """The model of one endpoint, its cache shared through the cache actor (keyed by the
    pool of endpoints when there are several: they serve one model)."""
    config = dataclasses.replace(
        job.llm, url=endpoint.url, cache=False, max_concurrency=endpoint.max_concurrency
    )
    base = build_llm(config)
    if base is None:
        raise ValueError(f"no model configured for {endpoint.url}: pass --model")
    if len(job.pool) > 1:
        base = Replica(base, job.pool)
    return CachedLLM(base, store=ActorCache(cache)) if cache is not None else base


def answer_question(
    job: BatchJob, endpoint: Endpoint, q: BatchQuestion, cache: Any | None
) -> dict[str, Any]:
    """Answer one question (the body of a Ray task); errors become a failed record."""
    start = time.monotonic()
    record: dict[str, Any] = {"id": q.id, "question": q.question, "endpoint": endpoint.url}
    source = q.source or job.source
    record["source"] = source
    try:
        if source is None:
            raise ValueError("no source: give the question a 'source' or pass --source")
        llm = endpoint_llm(job, endpoint, cache)
        try:
            result = ask(
                q.question,
                _open(source, job),
                method=q.method or job.method,
                options=job.options,
                config=job.config,
                llm=llm,
                llm_config=dataclasses.replace(job.llm, url=endpoint.url),
                task=job.task,
                steps=job.steps,
                table_ids=q.table_ids,
                trace_dir=job.trace_dir,
                cache=job.cache,
                cache_dir=cache_folder(job.cache_dir, job.settings),
                settings=job.settings,
            )
        finally:
            llm.close()
        record.update(result.to_json())
    except Exception as exc:  # recorded, never a crash of the run
        record.update(
            answer=None,
            status="failed",
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(limit=6),
        )
    record["seconds"] = round(time.monotonic() - start, 3)
    return record


def run_batch(
    questions: Sequence[BatchQuestion],
    job: BatchJob,
    endpoints: Sequence[Endpoint],
    log: RecordLog,
    *,
    address: str = "local",
    cpus_per_question: float = 0.5,
    max_retries: int = 3,
    run: dict[str, str] | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> BatchOutcome:
    """Answer every question not yet in `log` on Ray; append a record as each finishes.

    `run` is the run's identity (`RunSpec.to_json()`), stored in every record so that a
    resumed file stays one run's.

    Raises:
        RayUnavailable, BadValue: Ray cannot be used at `address`; no endpoint.
    """
    if not endpoints:
        raise BadValue("no LLM endpoint: pass --llm-url (repeatable)")
    ray = connect(address)
    done = log.done
    pending = [q for q in questions if q.id not in done]
    outcome = BatchOutcome(resumed=len(questions) - len(pending))
    if not pending:
        return outcome
    run_name = f"{log.path.resolve()}:{time.time_ns()}"
    job = dataclasses.replace(job, shards_name=run_name, pool=tuple(e.url for e in endpoints))
    owned = _start_shards(pending, job, run_name)
    folder = str(cache_folder(job.cache_dir, job.settings))
    cache = ray.remote(CacheActor).options(num_cpus=0).remote(folder) if job.cache else None
    task = ray.remote(answer_question).options(num_cpus=cpus_per_question, max_retries=max_retries)
    job_ref, endpoint_refs = ray.put(job), list(endpoints)

    def finished(q: BatchQuestion, slot: int, record: dict[str, Any]) -> None:
        if run is not None:
            record["run"] = run
        log.append(record)
        outcome.ran += 1
        if on_record is not None:
            on_record(record)

    def lost(q: BatchQuestion, slot: int, exc: BaseException) -> None:
        outcome.lost.append(q.id)  # not recorded: the next run of the same file retries it

    scheduler = EndpointScheduler(
        endpoints,
        submit=lambda q, i: task.remote(job_ref, endpoint_refs[i], q, cache),
        wait=lambda refs: ray.wait(refs, num_returns=1)[0],
        result=ray.get,
    )
    try:
        scheduler.run(pending, finished, lost)
    finally:
        for shards in owned:
            shards.close()
        if cache is not None:
            ray.kill(cache)
    outcome.peak_in_flight = list(scheduler.peak)
    return outcome


def _start_shards(pending: Sequence[BatchQuestion], job: BatchJob, run: str) -> list[RayShards]:
    """Start the shared actors of every sharded corpus the questions use (owned here)."""
    owned = []
    for source in dict.fromkeys(q.source or job.source for q in pending):
        if source is None:
            continue
        path = Path(source)
        if not is_corpus_file(path):
            continue
        with open_corpus(path, lock_timeout=job.settings.store.lock_timeout) as corpus:
            paths = shard_files(corpus) if corpus.manifest is not None else []
        if paths:  # one actor per shard of a sharded corpus
            owned.append(RayShards(paths, name=shards_name(run, str(path.resolve())),
                                   lock_timeout=job.settings.store.lock_timeout))  # fmt: skip
    return owned
