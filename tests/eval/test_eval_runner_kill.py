"""A run killed with SIGKILL mid-way and restarted ends with every question exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Fault, StubServer

CLI = """import sys, typer
from tablequest.cli import eval_run
app = typer.Typer()
eval_run.register(app)
app(sys.argv[1:])
"""


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n") if path.exists() else []


@pytest.mark.slow
def test_sigkill_then_restart_loses_and_duplicates_nothing(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    out = tmp_path / "kill.jsonl"
    script = tmp_path / "cli.py"
    script.write_text(CLI, encoding="utf-8")

    def reply(body: dict[str, Any]) -> Fault:
        return Fault.delay(0.4, then=json.dumps({"answer": "x", "evidence": []}))

    with StubServer(reply) as stub:
        cmd = [
            sys.executable,
            str(script),
            "run",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "direct",
            "--out",
            str(out),
            "--llm-url",
            stub.url,
            "--model",
            "stub-model",
            "--no-cache",
            "--concurrency",
            "2",
            "--json",
            "--cache-dir",
            str(tmp_path / "corpora"),
        ]
        with (tmp_path / "first.log").open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 60
            while len([x for x in _lines(out) if x.strip()]) < 4:
                assert proc.poll() is None, (tmp_path / "first.log").read_text()
                assert time.monotonic() < deadline, "the run wrote no records in time"
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
        done_before = [json.loads(x)["id"] for x in _lines(out) if x.strip()]
        assert 4 <= len(done_before) < 12  # killed mid-way
        with out.open("ab") as fh:  # and as if the kill had also torn a record in half
            fh.write(b'{"id": "nu-')
        second = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
        assert second.returncode == 0, second.stdout + second.stderr
        summary = json.loads(second.stdout)
        n_requests = len(stub.chat_requests)
    records = [json.loads(x) for x in _lines(out) if x.strip()]  # every line is whole JSON
    ids = [r["id"] for r in records]
    assert sorted(ids) == sorted(f"nu-{i}" for i in range(12))  # each exactly once
    assert ids[: len(done_before)] == done_before  # nothing rewritten
    assert summary["ran"] == 12 - len(done_before) and summary["n"] == 12
    assert 12 <= n_requests <= 12 + 2  # at most the in-flight questions were asked twice
