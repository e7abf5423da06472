"""How the suite is shared out over xdist workers (`make test`: ``-n 4 --dist loadfile``).

Each test file is one unit of work, so a file's module fixtures (a server, a browser, a Ray
cluster, a sandbox session whose state later tests read) start once, on one worker; the files
in `SPREAD` are cut into single tests instead, because one file of them would keep one worker
busy for minutes while the others idle (the escape matrix: 391 sandbox runs; the stub
reproductions: TableRAG's Fig. 4 alone builds 1000×1000 tables).

Why a scheduler of our own: ``--dist loadgroup`` groups by renaming each test's node id,
which pytest 9 no longer reads (its ``nodeid`` comes from ``_id``), so with pytest 9.2 and
xdist 3.8 every test ran on its own and the module fixtures started once per worker.
"""

from __future__ import annotations

from typing import Any

SPREAD = frozenset({"tests/sandbox/test_sandbox_escapes.py", "tests/eval/test_reproduce_stub.py"})


def scope_of(nodeid: str) -> str:
    """The unit of work of the test `nodeid`: its file, or the test itself in `SPREAD`."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPREAD else path


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's scope scheduler (largest units first) with `scope_of` as the scope."""
    from xdist.scheduler import LoadScopeScheduling

    class FileOrSpreadTest(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return FileOrSpreadTest(config, log)
