"""`eval reproduce` of every tabscope and dtr configuration with the stub server at `--limit 3`:
every row runs, the report shows each row and the paper's numbers beside ours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tablequest.eval.reproduce import all_reproductions

NAMES = [name for name in all_reproductions() if name.startswith(("tabscope-", "dtr-"))]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_configuration_runs_with_the_stub(
    name: str, reproduce: Callable[[str], tuple[int, str, dict[str, Any]]]
) -> None:
    rep = all_reproductions()[name]
    code, output, report = reproduce(name)
    assert code == 0, output[-3000:]
    assert [row["key"] for row in report["rows"]] == [row.key for row in rep.rows]
    kinds = {row.key: row.kind for row in rep.rows}
    for row in report["rows"]:
        outcome = row["outcome"]
        assert outcome["error"] is None and 1 <= outcome["n"] <= 3, row["key"]
        if kinds[row["key"]] == "answer":  # every question ended with a status
            assert sum(outcome["status"].values()) == outcome["n"]
    for row in rep.rows:
        assert f"| {row.label} |" in output
    assert len(report["not_implemented"]) == len(rep.missing)
    for missing in rep.missing:
        assert f"**{missing.label}**: {missing.why}" in output
    measured = [c["ours"] for row in report["rows"] for c in row["cells"]]
    assert any(value is not None for value in measured), "no cell was filled"
