"""The reading budget in an ingest (issue 25): a hostile file is skipped by name and limit,
the rest of the corpus is stored; the ingest's own totals (cells, seconds) skip files too;
`tablequest ingest --budget` and the environment set it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.table.budget import ENV, ReadBudget


def _hostile_jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps({f"k{i}": i}) + "\n" for i in range(5_000)))
    return path


def _csv(path: Path, rows: int) -> Path:
    path.write_text("a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(rows)))
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    _hostile_jsonl(root / "a-hostile.jsonl")
    _csv(root / "b-normal.csv", 3)
    return root


def test_hostile_file_is_skipped_and_the_rest_stored(corpus: Path) -> None:
    store = Store()
    report = ingest(store, [corpus], index=False)
    assert report.tables_stored == 1
    [failure] = report.files_failed
    assert failure.path.endswith("a-hostile.jsonl")
    assert "free_cells=1,000,000" in failure.reason and ENV["free_cells"] in failure.reason
    [(_, table)] = list(store.iter_tables())
    assert table.n_rows == 3 and table.cells[0] == ("a", "b")


def test_ingest_cell_total_skips_a_file_and_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    _csv(root / "1.csv", 40)  # 80 cells
    _csv(root / "2.csv", 40)  # would make 160
    _csv(root / "3.csv", 5)  # 90: still fits
    report = ingest(Store(), [root], index=False, budget=ReadBudget(ingest_cells=100))
    assert report.tables_stored == 2
    [failure] = report.files_failed
    assert failure.path.endswith("2.csv")
    assert "160 cells in this ingest" in failure.reason and ENV["ingest_cells"] in failure.reason


def test_ingest_time_skips_the_files_not_yet_read(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(3):
        _csv(root / f"{i}.csv", 2)
    report = ingest(Store(), [root], index=False, budget=ReadBudget(ingest_seconds=1e-9))
    assert report.tables_stored == 1 and not report.stopped
    assert [Path(f.path).name for f in report.files_failed] == ["1.csv", "2.csv"]
    assert all(ENV["ingest_seconds"] in f.reason for f in report.files_failed)


def test_budget_from_environment_reaches_the_ingest(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV["max_cells"], "7")  # the normal file has 8 cells with its header
    report = ingest(Store(), [corpus], index=False)
    assert report.tables_stored == 0 and len(report.files_failed) == 2
    assert all("max_cells=7" in f.reason for f in report.files_failed)


def test_cli_budget_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _csv(folder / "n.csv", 3)
    runner = CliRunner()
    args = ["ingest", str(folder), "--store", str(tmp_path / "s.duckdb"), "--json"]
    refused = runner.invoke(app, [*args, "--budget", "max_cells=7"])
    assert refused.exit_code == 1
    [failure] = json.loads(refused.stdout)["files_failed"]
    assert "max_cells=7" in failure["reason"] and ENV["max_cells"] in failure["reason"]
    monkeypatch.setenv(ENV["max_cells"], "7")  # the flag wins over the variable
    out = runner.invoke(app, [*args, "--budget", "max_cells=none"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["tables_stored"] == 1
    bad = runner.invoke(app, [*args, "--budget", "max_cells=lots"])
    assert bad.exit_code == 2 and "--budget max_cells='lots'" in bad.stdout
    unknown = runner.invoke(app, [*args, "--budget", "cells=5"])
    assert (
        unknown.exit_code == 2
        and "NAME one of free_cells, cells_per_byte, max_cells" in unknown.stdout
    )


def test_cli_budget_reaches_worker_processes_without_the_environment(tmp_path: Path) -> None:
    """Enough files for the process pool: each worker gets the flag's budget as an argument,
    and the command leaves os.environ as it found it (issue 38)."""
    from tablequest.corpus.storage.reading import PARALLEL_THRESHOLD

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(PARALLEL_THRESHOLD + 2):
        _csv(folder / f"{i}.csv", 3 + i % 2)
    before = dict(os.environ)
    args = ["ingest", str(folder), "--store", str(tmp_path / "s.duckdb"), "--json"]
    result = CliRunner().invoke(app, [*args, "--budget", "max_cells=7"])
    assert dict(os.environ) == before
    assert result.exit_code == 1, result.output
    failed = json.loads(result.stdout)["files_failed"]
    assert len(failed) == PARALLEL_THRESHOLD + 2
    assert all("max_cells=7" in f["reason"] for f in failed)
