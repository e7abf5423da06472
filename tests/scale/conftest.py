"""One local Ray session per test module: 2 CPUs, no dashboard, the module's own worker setup
hook (the tests kill a worker on a marked file or question), the module pickled by value so
workers can import its hook."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import ray  # in the dev extra: a missing Ray fails these tests, it never skips them


@contextmanager
def local_ray(module: str, hook: Callable[[], None], marker_env: str, tmp: Path) -> Iterator[Path]:
    """Start Ray for the test module `module` with worker setup `hook`; the hook finds its
    marker file (it kills a worker once) under `tmp` through ``$marker_env``."""
    os.environ[marker_env] = str(tmp / "died")
    ray.cloudpickle.register_pickle_by_value(sys.modules[module])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"worker_process_setup_hook": hook},
        # Ray kills a worker idle for 1 s beyond `num_cpus` workers, and the tests' tasks take
        # 0.5 CPU (4 at once), so each burst of questions started fresh processes, each
        # importing Ray and the library again (20 workers of 1-3 s each in test_ray_batch.py);
        # idle ones are kept for the module's life instead
        _system_config={"idle_worker_killing_time_threshold_ms": 600_000},
    )
    try:
        yield tmp
    finally:
        ray.shutdown()
        os.environ.pop(marker_env, None)
