"""Readers side by side, writers wait (issue 12, defect 4), with real concurrent commands.

`search`, `ask` and `eval` open the store read-only, so any number run at once (also while
an `ask` waits on its model). A command that needs the store while another process holds it
the other way waits up to $TABLEQUEST_LOCK_TIMEOUT, then names the holder's PID.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm.stub import Fault, StubServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
QUESTION = "Which nation won the most gold medals?"


@pytest.fixture(scope="module")
def store(proc: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module: no test here changes its tables."""
    path = tmp_path_factory.mktemp("store") / "demo.duckdb"
    done = proc.run("ingest", str(EXAMPLES), "--store", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return path


def _holder(path: Path, *, read_only: bool, release: Path) -> subprocess.Popen[str]:
    """A process that opens the store and keeps it until the file `release` exists."""
    code = textwrap.dedent(
        f"""
        import pathlib, sys, time
        from tablequest.corpus import Store
        with Store({str(path)!r}, read_only={read_only}):
            print("open", flush=True)
            while not pathlib.Path({str(release)!r}).exists():
                time.sleep(0.05)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "open"
    return p


def test_searches_run_side_by_side(proc: Any, store: Path) -> None:
    runs = [proc.start("search", "--store", str(store), QUESTION, "--json") for _ in range(3)]
    runs.append(proc.start("search", "--store", str(store), QUESTION, "--method", "bm25", "--json"))
    results = [p.communicate(timeout=proc.guard) for p in runs]
    assert [p.returncode for p in runs] == [0, 0, 0, 0], [err for _, err in results]
    grep = [json.loads(out) for out, _ in results[:3]]
    assert grep[0] and grep[0] == grep[1] == grep[2]
    assert json.loads(results[3][0])


def test_search_and_ask_while_an_ask_waits_on_its_model(
    proc: Any, store: Path, tmp_path: Path
) -> None:
    # The asks must still hold the store when the ingest runs: their model answers only when
    # the test closes the server (a fixed 60 s delay ran out on a loaded machine before the
    # ingest started, the asks finished, and the ingest got the store).
    hold = 10 * proc.guard
    with StubServer([Fault.delay(hold, then='{"patterns": ["gold"]}')] * 4) as server:
        llm = ["--llm-url", server.url, "--model", "stub", "--no-cache", "--steps", "1"]
        args = ["ask", str(store), QUESTION, *llm, "--trace-dir", str(tmp_path), "--json"]
        patient = {"TABLEQUEST_LLM_TIMEOUT": str(hold), "TABLEQUEST_DEADLINE": str(hold)}
        asking = proc.start(*args, env=patient)
        try:
            proc.wait_for(lambda: server.chat_requests, "the first ask to call its model")
            second = proc.start(*args, env=patient)
            proc.wait_for(lambda: len(server.chat_requests) >= 2, "the second ask to call")
            search = proc.run("search", "--store", str(store), QUESTION, "--json")
            assert search.returncode == 0, search.stderr
            assert json.loads(search.stdout)
            held = proc.run(
                "ingest", str(EXAMPLES), "--store", str(store), "--json",
                env={"TABLEQUEST_LOCK_TIMEOUT": "1"},
            )  # fmt: skip
        finally:
            server.close()  # ends the delays: both asks finish
            for p in (asking, second):
                p.communicate(timeout=proc.guard)
    assert held.returncode == 1, held.stderr
    error = json.loads(held.stdout)["error"]
    assert error["code"] == "store_locked"
    assert f"PID {asking.pid}" in error["message"] or f"PID {second.pid}" in error["message"]
    assert "Traceback" not in held.stderr


def test_a_writer_waits_for_readers_then_proceeds(proc: Any, store: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    reader = _holder(store, read_only=True, release=release)
    log = tmp_path / "writer.err"
    with log.open("w") as err:
        writer = subprocess.Popen(
            [sys.executable, "-m", "tablequest", "ingest", str(EXAMPLES), "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**os.environ, "TABLEQUEST_LOCK_TIMEOUT": str(proc.guard)},
        )
    try:
        proc.wait_for(lambda: "waiting up to" in log.read_text(), "the writer to wait")
        assert f"in use by PID {reader.pid}" in log.read_text()
        release.touch()
        out, _ = writer.communicate(timeout=proc.guard)
    finally:
        release.touch()
        reader.communicate(timeout=proc.guard)
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, log.read_text()
    assert "unchanged" in out


def test_a_reader_names_the_writer_that_holds_the_store(
    proc: Any, store: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    writer = _holder(store, read_only=False, release=release)
    try:
        search = proc.run(
            "search",
            "--store",
            str(store),
            QUESTION,
            "--json",
            env={"TABLEQUEST_LOCK_TIMEOUT": "0.5"},
        )
    finally:
        release.touch()
        writer.communicate(timeout=proc.guard)
    assert search.returncode == 1
    error = json.loads(search.stdout)["error"]
    assert error["code"] == "store_locked" and f"PID {writer.pid}" in error["message"]
    assert "TABLEQUEST_LOCK_TIMEOUT" in error["message"]
    after = proc.run("search", "--store", str(store), QUESTION, "--json")
    assert after.returncode == 0 and json.loads(after.stdout)
