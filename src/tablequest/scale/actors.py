"""Ranking on Ray: one long-lived actor per shard holds that shard's indexes in memory.

`RayShards` is a `ShardBackend` (`tablequest.corpus.shards`): `attach(store, address)` puts
it behind a `ShardedStore`, after which every retriever (`search`, `ask`, `eval`) fans its
per-shard calls out to the actors and merges exactly as in one process
(`tablequest.corpus.shardrank`). Actors open their shard read-only (any number of processes
may), are spread over the cluster's nodes, and keep the grep index, BM25 postings and vectors
across queries.

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

from tablequest.corpus.shardrank import ShardIndexes
from tablequest.corpus.shards import ShardedStore
from tablequest.scale.cluster import connect, import_ray

__all__ = ["RayShards", "ShardActor", "ShardUnavailable", "attach"]


class ShardUnavailable(RuntimeError):
    """A shard's actor died twice for one call."""


class ShardActor:
    """The body of a shard actor: `ShardIndexes` of one shard file, plus its process facts."""

    def __init__(self, path: str) -> None:
        self.indexes = ShardIndexes.open(path, read_only=True)

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
    """

    def __init__(self, shard_paths: Sequence[str], *, num_cpus: float = 0.0) -> None:
        self.ray = import_ray()
        self.paths = [str(p) for p in shard_paths]
        self.num_cpus = num_cpus
        self.restarts = 0
        self._remote = self.ray.remote(ShardActor)
        self.actors = [self._start(path) for path in self.paths]

    def _start(self, path: str) -> Any:
        options = {"num_cpus": self.num_cpus, "max_restarts": 0, "scheduling_strategy": "SPREAD"}
        return self._remote.options(**options).remote(path)

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
        self.actors[shard] = self._start(self.paths[shard])
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
        """Stop every actor."""
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        self.actors = []


def attach(store: ShardedStore, address: str, *, num_cpus: float = 0.0) -> RayShards:
    """Connect to Ray at `address` and rank `store` on one actor per shard from now on.

    Raises:
        RayUnavailable: Ray is missing or unreachable.
        ValueError: a bad address.
    """
    connect(address)
    backend = RayShards([str(p) for p in store.shard_paths], num_cpus=num_cpus)
    if store.backend is not None:
        store.backend.close()
    store.backend = backend
    return backend
