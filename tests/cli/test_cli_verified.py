"""`ask` shows whether the answer is verified against its evidence and how each evidence cell
was found; `ask --require-verified` exits 5 on an answer that is not verified (the method is
replaced by fixed results: what is checked here is the CLI's surface, not verification)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.methods.result import Result
from tablequest.table import CellRef, Table

runner = CliRunner()
TABLE = Table.from_rows([["Region", "Q3", "H2"], ["East", "1", "2"], ["North", "3", "4"],
                         ["South", "99", "205"], ["West", "205", "390"]])  # fmt: skip


def result(verified: Any, *, status: Any = "answered") -> Result:
    answered = status == "answered"
    return Result(
        answer="205" if answered else None,
        status=status,
        final_table="t1",
        tables={"t1": TABLE},
        sources={"t1": "sales.csv"},
        evidence=[CellRef("t1", 3, 1, "205", "computed"), CellRef("t1", 2, 2, "205", "ambiguous")]
        if answered
        else [],
        verified=verified,
        verification="205 equals its cell (row 3, Q3)" if verified else None,
        details={} if answered else {"reason": "the deadline passed"},
    )


@pytest.fixture
def table_file(tmp_path: Path) -> Path:
    path = tmp_path / "sales.csv"
    path.write_text("Region,Q3,H2\nWest,205,390\n")
    return path


def run(monkeypatch: pytest.MonkeyPatch, table_file: Path, fixed: Result, *flags: str) -> Any:
    monkeypatch.setattr("tablequest.cli.ask.ask", lambda *a, **k: fixed)
    args = ["ask", "What was West's Q3 revenue?", "-s", str(table_file), *flags]
    return runner.invoke(app, args, env={"COLUMNS": "200"})


def test_the_answer_says_verified_and_how_each_cell_was_found(
    monkeypatch: pytest.MonkeyPatch, table_file: Path
) -> None:
    out = run(monkeypatch, table_file, result("verified"))
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    verified = lines.index("  verified: verified — 205 equals its cell (row 3, Q3)")
    assert "205" in lines[verified - 2]  # right under the answer's panel
    assert "  evidence: row 3, Q3 = 205 (computed)" in lines
    assert "  evidence: row 2, H2 = 205 (ambiguous)" in lines


@pytest.mark.parametrize(
    ("verified", "plain", "required"),
    [("verified", 0, 0), ("unverified", 0, 5), ("contradicted", 0, 5), (None, 0, 5)],
)
def test_require_verified_exits_5_unless_verified(
    monkeypatch: pytest.MonkeyPatch, table_file: Path, verified: Any, plain: int, required: int
) -> None:
    fixed = result(verified)
    assert run(monkeypatch, table_file, fixed).exit_code == plain
    out = run(monkeypatch, table_file, fixed, "--require-verified", "--json")
    assert out.exit_code == required, out.output
    payload = json.loads(out.stdout)
    assert payload["verified"] == verified and payload["answer"] == "205"
    assert [e["how"] for e in payload["evidence"]] == ["computed", "ambiguous"]
    assert set(payload["evidence"][0]) == {"table_id", "row", "col", "value", "how"}


@pytest.mark.parametrize(("status", "code"), [("failed", 1), ("insufficient", 3)])
def test_require_verified_keeps_the_status_of_a_question_not_answered(
    monkeypatch: pytest.MonkeyPatch, table_file: Path, status: str, code: int
) -> None:
    out = run(monkeypatch, table_file, result(None, status=status), "--require-verified")
    assert out.exit_code == code, out.output
    assert "verified:" not in out.stdout


def test_help_names_exit_5() -> None:
    text = " ".join(runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "--require-verified" in text and "5 answered but not verified" in text


def test_a_long_evidence_list_is_cut_and_counted(
    monkeypatch: pytest.MonkeyPatch, table_file: Path
) -> None:
    fixed = result("verified")
    fixed.evidence = [CellRef("t1", r % 4, 1, str(r), "computed") for r in range(14)]
    lines = run(monkeypatch, table_file, fixed).stdout.splitlines()
    assert sum(line.startswith("  evidence: ") for line in lines) == 10
    assert "  … 4 more evidence cells (--json lists them all)" in lines
