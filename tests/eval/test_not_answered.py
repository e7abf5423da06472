"""Run summaries count the questions not answered by reason and name their ids (issue 24)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import typer
from typer.testing import CliRunner

from tablequest.cli import app as main_app
from tablequest.cli import eval_run
from tablequest.eval.report import (
    all_failed,
    not_answered,
    not_answered_lines,
    summarize,
    to_markdown,
)


def test_groups_by_status_and_reason_most_frequent_first() -> None:
    records = [
        {"id": "q1", "status": "answered"},
        {"id": "q2", "status": "failed", "reason": "cannot reach the model server U"},
        {"id": "q3", "status": "insufficient"},
        {"id": "q4", "status": "failed", "reason": "cannot reach the model server U"},
        {"id": "q5", "status": "failed", "error": "RuntimeError: boom"},
    ]
    groups = not_answered(records)
    assert groups == [
        {"status": "failed", "reason": "cannot reach the model server U", "count": 2,
         "ids": ["q2", "q4"]},
        {"status": "failed", "reason": "RuntimeError: boom", "count": 1, "ids": ["q5"]},
        {"status": "insufficient", "reason": "no reason recorded", "count": 1, "ids": ["q3"]},
    ]  # fmt: skip
    assert not_answered_lines(groups)[0] == (
        "failed ×2: cannot reach the model server U (ids q2, q4)"
    )


def test_long_id_lists_are_cut_in_lines() -> None:
    records = [{"id": f"q{i}", "status": "failed", "reason": "r"} for i in range(13)]
    [line] = not_answered_lines(not_answered(records))
    assert line.endswith("q9 and 3 more)") and "q10" not in line


def test_all_failed_only_when_no_question_reached_the_method() -> None:
    down = {"status": "failed", "reason": "cannot reach the model server U", "stopped_by": "model"}
    crash = {"status": "failed", "error": "RuntimeError: boom"}
    own = {"status": "failed", "reason": "the table is over the context budget"}
    assert all_failed([]) is None
    assert all_failed([{"id": "a", **down}, {"id": "b", "status": "insufficient"}]) is None
    assert all_failed([{"id": "a", **down}, {"id": "b", "status": "answered"}]) is None
    assert all_failed([{"id": "a", **own}, {"id": "b", **own}]) is None  # a result, not an error
    assert all_failed([{"id": "a", **down}, {"id": "b", **own}]) is None
    message = all_failed([{"id": "a", **down}, {"id": "b", **down}])
    assert message == (
        "every question failed before the method ran (2); the most frequent reason: "
        + down["reason"]
    )
    mixed = all_failed([{"id": "a", **down}, {"id": "b", **down}, {"id": "c", **crash}])
    assert mixed is not None and "ran (3)" in mixed and "(2 of them)" in mixed


def test_markdown_report_lists_reasons() -> None:
    rows = [
        {"id": "a", "status": "answered", "metrics": {"em": 1.0}, "run": {"method": "direct"}},
        {"id": "b", "status": "failed", "reason": "deadline", "metrics": {"em": 0.0}},
    ]
    text = to_markdown(summarize(rows))
    assert "## Not answered (by reason)" in text and "- failed ×1: deadline (ids b)" in text


def test_eval_run_summary_names_failed_ids_and_the_cause(evalrun_wtq: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    cli = typer.Typer()
    eval_run.register(cli)
    out = tmp_path / "run.jsonl"
    done = CliRunner().invoke(cli, ["run", "wtq", "--data", str(evalrun_wtq), "--method",
                                    "direct", "--out", str(out), "--llm-url", url, "--model",
                                    "m", "--no-cache", "--limit", "3", "--json"])  # fmt: skip
    assert done.exit_code == 1, done.output  # nothing was evaluated
    summary = json.loads(done.stdout)  # the summary is still printed, and the report written
    assert "every question failed before the method ran (3)" in done.stderr
    assert url in done.stderr
    [group] = summary["not_answered"]
    assert group["status"] == "failed" and group["count"] == 3
    assert url in group["reason"] and "connection refused" in group["reason"]
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(group["ids"]) == sorted(ids)


def test_batch_refuses_a_blank_question_naming_its_line(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "a", "question": "ok?"}\n{"id": "b", "question": "  "}\n')
    done = CliRunner().invoke(main_app, ["batch", str(questions), "--out",
                                         str(tmp_path / "run.jsonl")])  # fmt: skip
    assert done.exit_code == 2
    assert f"{questions}:2" in done.output and "non-empty" in done.output
