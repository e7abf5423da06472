"""`eval reproduce` of every tabscope and dtr configuration with the stub server at `--limit 3`:
every row runs, the report shows each row and the paper's numbers beside ours."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablequest.eval.reproduce import all_reproductions

NAMES = [name for name in all_reproductions() if name.startswith(("tabscope-", "dtr-"))]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_configuration_runs_with_the_stub(
    name: str, reproduction_runs: Callable[[str], None]
) -> None:
    reproduction_runs(name)  # the checks are in tests/eval/conftest.py
