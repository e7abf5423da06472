"""`eval reproduce` of every TableSeek, TableRAG and TabScope configuration with the stub
server at `--limit 1`: every row runs, the report shows each row and the paper's numbers
beside ours. The configurations are spread over the test workers (the heaviest, TableRAG's
Fig. 4, builds 1000×1000 tables)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablequest.eval.reproduce import all_reproductions

NAMES = [name for name in all_reproductions() if name.startswith(("tableseek-", "tablerag-",
                                                                    "tabscope-"))]  # fmt: skip
pytestmark = pytest.mark.slow  # shared out over the workers (tests/scheduling.py)


@pytest.mark.parametrize("name", NAMES)
def test_configuration_runs_with_the_stub(
    name: str, reproduction_runs: Callable[[str], None]
) -> None:
    reproduction_runs(name)  # the checks are in tests/eval/conftest.py
