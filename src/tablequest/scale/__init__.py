"""Ray: shard actors over a sharded corpus, batch runs of questions, sharded ingest and
evaluation on a cluster (extra ``[ray]``; docs/scale.md).

This module is the package's public surface: code outside `tablequest.scale` imports from
here, never from its modules (tests/test_layers.py). Names are imported on first use and read
from their module on every use, so importing it loads neither Ray nor DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablequest.lazy import lazy_exports

if TYPE_CHECKING:
    from tablequest.scale.actors import RayShards, attach
    from tablequest.scale.batch import BatchError, Endpoint, read_questions
    from tablequest.scale.batchrun import BatchJob, BatchOutcome, run_batch
    from tablequest.scale.cluster import RayUnavailable, connect, ray_address
    from tablequest.scale.evalrun import EvalJob, run_eval_ray, shard_corpus
    from tablequest.scale.ingest import ingest_ray

#: public name → the module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "RayShards": "tablequest.scale.actors",
    "attach": "tablequest.scale.actors",
    "BatchError": "tablequest.scale.batch",
    "Endpoint": "tablequest.scale.batch",
    "read_questions": "tablequest.scale.batch",
    "BatchJob": "tablequest.scale.batchrun",
    "BatchOutcome": "tablequest.scale.batchrun",
    "run_batch": "tablequest.scale.batchrun",
    "RayUnavailable": "tablequest.scale.cluster",
    "connect": "tablequest.scale.cluster",
    "ray_address": "tablequest.scale.cluster",
    "EvalJob": "tablequest.scale.evalrun",
    "run_eval_ray": "tablequest.scale.evalrun",
    "shard_corpus": "tablequest.scale.evalrun",
    "ingest_ray": "tablequest.scale.ingest",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "BatchError",
    "BatchJob",
    "BatchOutcome",
    "Endpoint",
    "EvalJob",
    "RayShards",
    "RayUnavailable",
    "attach",
    "connect",
    "ingest_ray",
    "ray_address",
    "read_questions",
    "run_batch",
    "run_eval_ray",
    "shard_corpus",
]
