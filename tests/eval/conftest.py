"""`eval reproduce` against the stub server: one benchmark folder of fixtures, one model."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.llm.stub import StubServer

FIXTURES = Path(__file__).parent / "fixtures"


def stub_reply(body: dict[str, Any]) -> str:
    """A deterministic model for every method: grep patterns and a table choice for TableSeek,
    a score for the LLM-EVAL judge, else an answer in every answer format the methods read."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if "grep patterns" in prompt and "Candidate tables" not in prompt:
        words = re.findall(r"[A-Za-z]{4,}", prompt.split("Question:")[-1])[:3]
        return json.dumps({"patterns": words or ["total"]})
    if "Candidate tables" in prompt:
        return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
    if "[Score]" in prompt:
        return "The answer is partly right.\n[Score]: 70/100"
    if "Choose exactly one question type" in prompt:  # TabScope's classifier
        return json.dumps({"question_type": "lookup"})
    if "You are verifying an evidence sub-table" in prompt:
        return json.dumps({"verdict": "ok", "issues": []})
    if "select the smallest sub-table" in prompt:  # a silver reference: row 0, first column
        header = next(line for line in prompt.splitlines() if line.startswith("| row_id"))
        first = header.split("|")[2].strip()
        return json.dumps({"reasoning_type": "lookup", "evidence_policy": "answer_only",
                           "rows": [0], "columns": [first], "reason": "stub"})  # fmt: skip
    return 'Final Answer: 1\n<answer>1</answer>\n{"status": "answered", "answer": "1"}'


@pytest.fixture
def copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy the fixture benchmark folder NAME into the test's tmp folder; return the copy."""

    def _copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        return target

    return _copy


@pytest.fixture(scope="module")
def reproduce_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder per test file: the fixtures as benchmark folders, shared output, corpora."""
    base = tmp_path_factory.mktemp("reproduce")
    shutil.copytree(FIXTURES, base / "data")
    return base


@pytest.fixture
def reproduce(
    reproduce_root: Path, realhitbench_tables: Callable[[Path], Path]
) -> Iterator[Callable[[str], tuple[int, str, dict[str, Any]]]]:
    """Run `tablequest eval reproduce NAME --limit 1` on the fixtures with the stub model;
    returns (exit code, output, the report's JSON). Runs of a test file share one output
    folder, as a user's configurations may."""
    from tablequest.cli.app import app

    data, out = reproduce_root / "data", reproduce_root / "out"
    if not (data / "realhitbench" / "data" / "tables").exists():
        realhitbench_tables(data / "realhitbench")
    with StubServer(stub_reply, model="stub-model") as stub:

        def run(name: str) -> tuple[int, str, dict[str, Any]]:
            args = ["eval", "reproduce", name, "--data", str(data), "--out", str(out),
                    "--llm-url", stub.url, "--model", "stub-model", "--limit", "1",
                    "--cache-dir", str(reproduce_root / "corpora"), "--no-cache"]  # fmt: skip
            result = CliRunner().invoke(app, args)
            report = out / f"{name}.report.json"
            payload = json.loads(report.read_text("utf-8")) if report.exists() else {}
            return result.exit_code, result.output, payload

        yield run


@pytest.fixture
def reproduction_runs(
    reproduce: Callable[[str], tuple[int, str, dict[str, Any]]],
) -> Callable[[str], None]:
    """Check that configuration NAME runs with the stub: every row ran its questions (each
    with a status), the report shows every row, the rows not implemented with why, and at
    least one measured cell. The stub tests are spread over the test workers."""
    from tablequest.eval.reproduce import all_reproductions

    def check(name: str) -> None:
        rep = all_reproductions()[name]
        code, output, report = reproduce(name)
        assert code == 0, output[-3000:]
        assert [row["key"] for row in report["rows"]] == [row.key for row in rep.rows]
        kinds = {row.key: row.kind for row in rep.rows}
        for row in report["rows"]:
            outcome = row["outcome"]
            assert outcome["error"] is None and outcome["n"] == 1, row["key"]
            if kinds[row["key"]] == "answer":  # every question ended with a status
                assert sum(outcome["status"].values()) == outcome["n"]
        for row in rep.rows:
            assert f"| {row.label} |" in output
        assert len(report["not_implemented"]) == len(rep.missing)
        for missing in rep.missing:
            assert f"**{missing.label}**: {missing.why}" in output
        measured = [c["ours"] for row in report["rows"] for c in row["cells"]]
        assert any(value is not None for value in measured), "no cell was filled"

    return check
