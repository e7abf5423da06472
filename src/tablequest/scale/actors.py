"""Ranking on Ray: one long-lived actor per shard holds that shard's indexes in memory.

`RayShards` is a `ShardBackend` (`tablequest.corpus.storage.corpus`): `attach(corpus, address)`
puts it behind a sharded corpus (`Corpus.backend`), after which every retriever (`search`,
`ask`, `eval`) fans its per-shard calls out to the actors and merges exactly as in one
process (`tablequest.corpus.retrieval.shardrank`). Actors open their shard read-only (any
number of processes may), are spread over the cluster's nodes, and keep the grep index, BM25
postings and vectors across queries.

Failure (ours): a call whose actor died (process killed, node lost) starts a new actor for
that shard and retries the call once; a second failure raises `ShardUnavailable`. The new
actor reloads the shard's persisted grep index from its file, so a restart costs a load, not
a rebuild.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Sequence
from typing import Any

from tablequest.corpus import Corpus, ShardIndexes
from tablequest.errors import RunError
from tablequest.scale.cluster import connect, import_ray

__all__ = ["RayShards", "ShardActor", "ShardUnavailable", "attach", "shard_files"]


class ShardUnavailable(RunError, RuntimeError):
    """A shard's actor died twice for one call."""


class ShardActor:
    """The body of a shard actor: `ShardIndexes` of one shard file, plus its process facts."""

    def __init__(self, path: str, lock_timeout: float | None = None) -> None:
        self.indexes = ShardIndexes.open(path, read_only=True, lock_timeout=lock_timeout)

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.indexes, method)(*args)

    def pid(self) -> int:
        return os.getpid()

    def peak_rss_mb(self) -> float:
        """Peak resident memory of the actor's process (MB)."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class RayShards:
    """The Ray backend of a sharded corpus: one `ShardActor` per shard.

    Args:
        shard_paths: The shard files, in shard order.
        num_cpus: CPUs each actor reserves while it lives (default 0: actors wait more
            than they compute; raise it to keep ranking off busy nodes).
        name: Name the actors ``NAME-i`` so that every process of the Ray job shares them
            (a second `RayShards` with the same name attaches to the running actors).
        owner: `close` stops the actors (False: it only forgets them, for a worker that
            shares the driver's named actors).
        lock_timeout: Seconds an actor waits for a shard file another process holds: the
            driver's `store.lock_timeout`, sent to the actors (None: each actor's own
            settings, which on another node are that node's).
    """

    def __init__(
        self,
        shard_paths: Sequence[str],
        *,
        num_cpus: float = 0.0,
        name: str | None = None,
        owner: bool = True,
        lock_timeout: float | None = None,
    ) -> None:
        self.ray = import_ray()
        self.paths = [str(p) for p in shard_paths]
        self.lock_timeout = lock_timeout
        self.num_cpus = num_cpus
        self.name = name
        self.owner = owner
        self.restarts = 0
        self._remote = self.ray.remote(ShardActor)
        self.actors = [self._start(i) for i in range(len(self.paths))]

    def _start(self, shard: int) -> Any:
        options: dict[str, Any] = {
            "num_cpus": self.num_cpus,
            "max_restarts": 0,
            "scheduling_strategy": "SPREAD",
        }
        if self.name is not None:  # shared: other processes of the job find the same actors
            options.update(name=f"{self.name}-{shard}", get_if_exists=True)
        return self._remote.options(**options).remote(self.paths[shard], self.lock_timeout)

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        """`method(*args[i])` on every shard's actor; a dead actor is restarted, the call
        retried once."""
        refs = [a.call.remote(method, *arg) for a, arg in zip(self.actors, args, strict=True)]
        out = []
        for i, ref in enumerate(refs):
            try:
                out.append(self.ray.get(ref))
            except self.ray.exceptions.RayActorError:
                out.append(self._retry(i, method, args[i]))
        return out

    def _retry(self, shard: int, method: str, arg: tuple[Any, ...]) -> Any:
        self.ray.kill(self.actors[shard], no_restart=True)
        self.actors[shard] = self._start(shard)
        self.restarts += 1
        try:
            return self.ray.get(self.actors[shard].call.remote(method, *arg))
        except self.ray.exceptions.RayActorError as exc:
            raise ShardUnavailable(
                f"the actor of shard {self.paths[shard]!r} died twice running {method}: {exc}"
            ) from exc

    def pids(self) -> list[int]:
        return [int(p) for p in self.ray.get([a.pid.remote() for a in self.actors])]

    def peak_rss_mb(self) -> list[float]:
        return [float(m) for m in self.ray.get([a.peak_rss_mb.remote() for a in self.actors])]

    def close(self) -> None:
        """Stop every actor when this is their owner; forget them either way."""
        if self.owner:
            for actor in self.actors:
                self.ray.kill(actor, no_restart=True)
        self.actors = []


def shard_files(corpus: Corpus) -> list[str]:
    """The files of a corpus's shards, in shard order (what `RayShards` opens)."""
    return [str(s.path) for s in corpus.shards]


def attach(
    store: Corpus,
    address: str,
    *,
    num_cpus: float = 0.0,
    name: str | None = None,
    owner: bool = True,
    lock_timeout: float | None = None,
) -> RayShards:
    """Connect to Ray at `address` and rank `store` on one actor per shard from now on
    (`lock_timeout`: as `RayShards`).

    Raises:
        RayUnavailable: Ray is missing or unreachable.
        BadValue: a bad address.
    """
    connect(address)
    paths = shard_files(store)
    backend = RayShards(paths, num_cpus=num_cpus, name=name, owner=owner, lock_timeout=lock_timeout)
    if store.backend is not None:
        store.backend.close()
    store.backend = backend
    return backend
