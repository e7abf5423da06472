"""How the suite is shared out over xdist workers (`make test`: ``-n 3 --dist loadfile``).

Each test file is one unit of work, so a file's module fixtures (a server, a browser, a Ray
cluster, a sandbox session whose state later tests read) start once, on one worker; the files
in `SPREAD` are cut into single tests instead, because one file of them would keep one worker
busy for minutes while the others idle (the escape matrix: 391 sandbox runs; the stub
reproductions: TableRAG's Fig. 4 alone builds 1000×1000 tables).

Order: the files in `FIRST` (measured the slowest: Ray clusters, model exports, big ingests)
are dealt out first, so none of them starts last and keeps one worker busy after the others
are done; then the other files, most tests first (xdist's own order); the spread tests last,
small units that fill the workers' ends. `ordered` sorts the collection so (pytest hook in
conftest.py), and the scheduler keeps the collection's order.

Why a scheduler of our own: ``--dist loadgroup`` groups by renaming each test's node id,
which pytest 9 no longer reads (its ``nodeid`` comes from ``_id``), so with pytest 9.2 and
xdist 3.8 every test ran on its own and the module fixtures started once per worker.
"""

from __future__ import annotations

from typing import Any

SPREAD = frozenset({"tests/sandbox/test_sandbox_escapes.py", "tests/eval/test_reproduce_stub.py"})

# the slowest files of a full run (`--durations=0`, summed per file), slowest first; but only
# one of the two Ray files: each starts a local cluster (num_cpus=2), and with both at once on
# 2 cores test_ray_batch.py alone took 5 minutes (under 2 by itself). test_ray_corpus.py goes
# by its count of tests, minutes later
FIRST = (
    "tests/scale/test_ray_batch.py",
    "tests/corpus/test_shards.py",
    "tests/reliability/test_ingest_signals.py",
    "tests/corpus/test_fast_encoders.py",
    "tests/reliability/test_concurrency.py",
    "tests/reliability/test_media.py",
    "tests/corpus/test_grep_bounded.py",
    "tests/table/test_table_roundtrip.py",
    "tests/cli/test_cli_rag.py",
)


def scope_of(nodeid: str) -> str:
    """The unit of work of the test `nodeid`: its file, or the test itself in `SPREAD`."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPREAD else path


def ordered(nodeids: list[str]) -> list[str]:
    """`nodeids` in the order their units are dealt out (module doc); a file's own tests
    keep their order."""
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        path = nodeid.split("::", 1)[0]
        counts[path] = counts.get(path, 0) + 1

    def key(nodeid: str) -> tuple[int, int, str]:
        path = nodeid.split("::", 1)[0]
        if path in FIRST:
            return (0, FIRST.index(path), path)
        if path in SPREAD:
            return (2, 0, path)
        return (1, -counts[path], path)

    return sorted(nodeids, key=key)


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's scope scheduler with `scope_of` as the scope, in the collection's order."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the collection is already in `ordered` order

    class FileOrSpreadTest(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return FileOrSpreadTest(config, log)
