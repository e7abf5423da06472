"""Ingest into a sharded corpus with Ray tasks: one task per shard reads and writes its files.

The driver walks the paths and groups the files by home shard (`plan_ingest` of the sharded corpus);
each shard's files go to one Ray task that opens that shard (DuckDB allows one writer per
file, so a shard is never written by two tasks at once) and runs the one-store `ingest` on
them: per-file atomicity, grouped commits, the grep index built and persisted at the end.

Failure: a task whose worker dies (killed, out of memory, node lost) leaves its shard as the
last commit left it — whole files only, since a file is written in one transaction of one
shard — and Ray runs it again (`max_retries`); the new attempt skips the files already
stored with the same content hash and finishes. With retries exhausted, the report names
the shard, and running the same ingest again finishes the job.

Choice (ours): parallelism is one task per shard, so use at least as many shards as CPUs
you want busy; reading inside a task is in-process (no nested worker pool). The reading
budget and the store's lock timeout are settled on the driver (the caller's, else the
settings of the driver's environment) and sent to every task as arguments: a task never
takes them from its worker's environment.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tablequest.corpus import (
    FileFailure,
    IngestReport,
    Store,
    StoreError,
    ingest,
    merge_reports,
    open_corpus,
    plan_ingest,
    refresh_manifest,
)
from tablequest.scale.cluster import connect
from tablequest.table import ReadBudget

__all__ = ["ingest_ray", "ingest_shard"]


def ingest_shard(
    shard_path: str,
    files: list[str],
    budget: ReadBudget | None = None,
    lock_timeout: float | None = None,
) -> dict[str, Any]:
    """Ingest `files` into the shard file `shard_path` (the body of one Ray task), within
    `budget`, waiting up to `lock_timeout` seconds for the shard (both sent by `ingest_ray`;
    None, for a direct call: the settings of this process's environment).

    Returns the shard's `IngestReport.to_json()` plus ``timing``: seconds spent reading and
    writing, seconds building the grep index, and the worker's peak memory (MB).
    """
    from tablequest.corpus import grep_index

    start = time.perf_counter()
    with Store(shard_path, lock_timeout=lock_timeout) as store:
        report = ingest(store, files, workers=1, index=False, budget=budget)
        written = time.perf_counter()
        if report.tables_stored:
            grep_index(store)
        data = report.to_json()
    data["timing"] = {
        "shard": shard_path,
        "write_s": round(written - start, 3),
        "index_s": round(time.perf_counter() - written, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    return data


def ingest_ray(
    manifest: str | Path,
    paths: Iterable[str | Path],
    *,
    address: str = "local",
    shards: int | None = None,
    max_retries: int = 3,
    cpus_per_task: float = 1.0,
    timings: list[dict[str, Any]] | None = None,
    budget: ReadBudget | None = None,
    lock_timeout: float | None = None,
) -> IngestReport:
    """Ingest every table under `paths` into the sharded corpus `manifest` on Ray.

    Args:
        manifest: The corpus manifest (created with `shards` shards when missing).
        paths: Files and folders of tables.
        address: The Ray address (`tablequest.scale.cluster.connect`).
        shards: Shard count of a new corpus (None: the manifest's).
        max_retries: Times Ray reruns a shard's task whose worker died.
        cpus_per_task: CPUs each shard's task reserves.
        timings: Gets each shard's ``timing`` (see `ingest_shard`).
        budget: The reading budget of each shard's ingest, sent to its task (None: the
            ``[reading]`` settings of this process's environment, `ReadBudget.from_env()`).
        lock_timeout: Seconds a task waits for its shard, sent likewise (None: the
            ``store.lock_timeout`` setting of this process's environment).

    Raises:
        StoreError: the manifest cannot be created or read.
        RayUnavailable: Ray is missing or unreachable.
    """
    if shards is None and not Path(manifest).expanduser().is_file():
        raise StoreError(f"no sharded corpus at {str(manifest)!r}: pass --shards N to create one")
    # creates the manifest and shards when missing
    with open_corpus(manifest, read_only=False, shards=shards) as corpus:
        if corpus.manifest is None:
            raise StoreError(f"{str(manifest)!r} is not a sharded corpus")
        shard_paths = [str(s.path) for s in corpus.shards]
    budget, lock_timeout = _settled(budget, lock_timeout)
    ray = connect(address)
    report, groups = plan_ingest(paths, len(shard_paths))
    task = ray.remote(ingest_shard).options(
        max_retries=max_retries, retry_exceptions=False, num_cpus=cpus_per_task
    )
    refs = {
        shard: task.remote(shard_paths[shard], [str(f) for f in files], budget, lock_timeout)
        for shard, files in sorted(groups.items())
    }
    rayx = ray.exceptions
    for shard, ref in refs.items():
        try:
            part = ray.get(ref)
            merge_reports(report, part)
            if timings is not None:
                timings.append(part["timing"])
        except (rayx.WorkerCrashedError, rayx.RayTaskError, rayx.TaskCancelledError) as exc:
            reason = f"shard task failed ({type(exc).__name__}); run the same ingest again"
            report.files_seen += len(groups[shard])
            report.files_failed += [FileFailure(str(f), reason) for f in groups[shard]]
    refresh_manifest(Path(manifest))
    return report


def _settled(budget: ReadBudget | None, lock_timeout: float | None) -> tuple[ReadBudget, float]:
    """The budget and lock timeout the tasks get: the given ones, else this (the driver's)
    process's settings — resolved here, so that no worker reads its own environment.

    Raises:
        StoreError: a ``TABLEQUEST_READ_*`` or ``TABLEQUEST_LOCK_TIMEOUT`` value is bad.
    """
    from tablequest.settings import SettingsError, StoreSettings, from_env

    try:
        if lock_timeout is None:
            lock_timeout = from_env(StoreSettings).lock_timeout
        return (budget if budget is not None else ReadBudget.from_env()), lock_timeout
    except (SettingsError, ValueError) as exc:
        raise StoreError(str(exc)) from None
