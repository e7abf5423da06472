"""`tablequest batch` on local Ray: two stub endpoints, a worker killed mid-question, the
driver killed and restarted. One Ray session.

The endpoint, driver-kill and dead-server tests ask over a one-file store; the eval run over
a 3-shard corpus, whose shard actors each run starts (each actor is a process that imports
the library: about 4 s of CPU; sharded asks are this test's subject, not the others')."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray  # in the dev extra: a missing Ray fails these tests, it never skips them
from tests.scale.conftest import local_ray
from typer.testing import CliRunner

from tablequest.cli.app import app
from tablequest.corpus import ingest_corpus, open_corpus
from tablequest.eval.runner import RecordLog
from tablequest.llm.config import LLMConfig
from tablequest.llm.stub import StubServer
from tablequest.scale.batch import BatchQuestion, Endpoint
from tablequest.scale.batchrun import BatchJob, run_batch

pytestmark = pytest.mark.slow
MARKER_ENV = "TQ_TEST_BATCH_MARKER"


def _die_on_poison_question() -> None:
    """Worker setup hook: the first attempt at a question containing POISON kills the worker."""
    import tablequest.scale.batchrun as batchrun

    inner = batchrun.ask

    def ask(question: str, *args: Any, **kwargs: Any) -> Any:
        marker = os.environ.get(MARKER_ENV)
        if marker and "POISON" in question and not os.path.exists(marker):
            Path(marker).write_text("died\n")
            os._exit(1)
        return inner(question, *args, **kwargs)

    batchrun.ask = ask  # type: ignore[assignment]


class Endpoints:
    """Two stub servers answering from the prompt; they count requests in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.running = [0, 0]
        self.worst = [0, 0]
        self.servers = [StubServer(self._reply(i)) for i in range(2)]

    def _reply(self, i: int) -> Any:
        def reply(request: dict[str, Any]) -> str:
            with self.lock:
                self.running[i] += 1
                self.worst[i] = max(self.worst[i], self.running[i])
            time.sleep(self.delay)
            with self.lock:
                self.running[i] -= 1
            text = request["messages"][-1]["content"]
            return json.dumps({"answer": "A" + hashlib.sha1(text.encode()).hexdigest()[:8]})

        return reply

    def __enter__(self) -> Endpoints:
        for s in self.servers:
            s.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.servers:
            s.close()

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("batch")
    root = tmp / "tables"
    root.mkdir()
    for i, (name, rows) in enumerate(
        {
            "medals": "nation,gold\nNorway,16\nGermany,12\n",
            "rivers": "river,length\nNile,6650\nAmazon,6400\n",
            "clubs": "club,goals\nAjax,80\nPSV,75\n",
            "films": "film,director\nAlien,Scott\nHeat,Mann\n",
        }.items()
    ):
        (root / f"{i}-{name}.csv").write_text(rows)
    with open_corpus(tmp / "store.duckdb", read_only=False) as corpus:
        ingest_corpus(corpus, [root], workers=1)
    with local_ray(__name__, _die_on_poison_question, MARKER_ENV, tmp):
        yield tmp


def _questions(n: int) -> list[BatchQuestion]:
    topics = ["gold medals of Norway", "length of the Nile", "goals of Ajax", "director of Heat"]
    return [BatchQuestion(f"q{i}", f"{topics[i % 4]} ({i})") for i in range(n)]


def _job(tmp: Path, cache: bool = True) -> BatchJob:
    return BatchJob(
        method="bm25",
        source=str(tmp / "store.duckdb"),
        llm=LLMConfig(model="stub-model", max_retries=0),
        cache=cache,
        cache_dir=str(tmp / "cache"),
    )


def test_endpoints_bounded_balanced_and_a_killed_worker(session: Path) -> None:
    questions = [*_questions(10), BatchQuestion("poison", "POISON: gold medals of Norway")]
    questions.append(BatchQuestion("bad", "x", method="no-such-method"))
    questions.append(
        BatchQuestion("own", "length of the Nile", source=str(session / "tables" / "1-rivers.csv"),
                      method="direct")
    )  # fmt: skip
    with Endpoints(delay=0.3) as stubs:
        endpoints = [Endpoint(u, 2) for u in stubs.urls]
        with RecordLog(session / "run.jsonl") as log:
            outcome = run_batch(questions, _job(session), endpoints, log, address="local")
        assert stubs.worst[0] <= 2 and stubs.worst[1] <= 2
        assert outcome.peak_in_flight == [2, 2]
        assert (session / "died").exists()  # the poison question's first worker died
        lines = [json.loads(x) for x in (session / "run.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in lines) == sorted(q.id for q in questions)  # once each
        by_id = {r["id"]: r for r in lines}
        assert by_id["bad"]["status"] == "failed" and "no-such-method" in by_id["bad"]["error"]
        assert by_id["own"]["status"] == "answered"
        assert {r["endpoint"] for r in lines} == set(stubs.urls)
        for r in lines:
            if r["id"] != "bad":
                assert r["status"] == "answered" and r["answer"].startswith("A"), r
        # the same questions again, endpoints swapped, in a fresh file: every answer from the
        # shared cache (keyed by the pool of replicas), and equal
        served = sum(len(s.requests) for s in stubs.servers)
        with RecordLog(session / "again.jsonl") as log:
            run_batch(questions, _job(session), [Endpoint(u, 4) for u in stubs.urls[::-1]], log)
        assert sum(len(s.requests) for s in stubs.servers) == served
    again_lines = (session / "again.jsonl").read_text().splitlines()
    again = {json.loads(x)["id"]: json.loads(x) for x in again_lines}
    for qid, record in by_id.items():
        assert again[qid]["answer"] == record["answer"]
        if qid != "bad":
            assert again[qid]["usage"]["cache_hits"] >= 1


def test_driver_killed_and_restarted(session: Path) -> None:
    qfile = session / "questions.jsonl"
    qfile.write_text("".join(json.dumps({"id": q.id, "question": q.question}) + "\n"
                             for q in _questions(16)))  # fmt: skip
    out = session / "killed.jsonl"
    address = ray.get_runtime_context().gcs_address
    with Endpoints(delay=0.4) as stubs:
        cmd = [sys.executable, "-m", "tablequest", "batch", str(qfile), "--out", str(out),
               "--store", str(session / "store.duckdb"), "--method", "bm25", "--model",
               "stub-model", "--llm-url", stubs.urls[0], "--llm-url", stubs.urls[1],
               "--concurrency", "1", "--ray", address, "--no-cache", "--json"]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and len(out.read_text().splitlines()) >= 3:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaps it and closes its pipes
        partial = [json.loads(x)["id"] for x in out.read_text().splitlines() if x.strip()]
        assert 3 <= len(partial) < 16
        done = CliRunner().invoke(app, cmd[3:])
        assert done.exit_code == 0, done.output
        summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["resumed"] == len(set(partial)) and summary["answered"] == 16
    ids = [json.loads(x)["id"] for x in out.read_text().splitlines() if x.strip()]
    assert sorted(ids) == sorted(f"q{i}" for i in range(16))  # nothing lost, nothing twice


def test_eval_run_on_ray_with_shards_equals_the_thread_runner(
    session: Path, evalrun_wtq: Path
) -> None:
    runner = CliRunner()
    address = ray.get_runtime_context().gcs_address
    outs = {}
    with Endpoints(delay=0.05) as stubs:
        base = ["eval", "run", "wtq", "--data", str(evalrun_wtq), "--method", "bm25",
                "--model", "stub-model", "--no-cache", "--cache-dir", str(session / "corpora"),
                "--json"]  # fmt: skip
        for name, extra in {
            "threads": ["--llm-url", stubs.urls[0], "--concurrency", "2"],
            "ray": ["--llm-url", stubs.urls[0], "--llm-url", stubs.urls[1], "--shards", "3",
                    "--ray", address, "--concurrency", "2"],
        }.items():  # fmt: skip
            out = session / f"eval-{name}.jsonl"
            done = runner.invoke(app, [*base, "--out", str(out), *extra])
            assert done.exit_code == 0, done.output
            outs[name] = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
        assert all(len(s.requests) > 0 for s in stubs.servers)
    assert set(outs["ray"]) == set(outs["threads"]) and len(outs["ray"]) == 12
    for qid, want in outs["threads"].items():
        got = outs["ray"][qid]
        for key in ("prediction", "status", "metrics", "tables_consulted", "final_table"):
            assert got[key] == want[key], (qid, key)
    assert {r["endpoint"] for r in outs["ray"].values()} == set(stubs.urls)


def test_failed_questions_are_named_by_reason_and_exit_1(session: Path) -> None:
    qfile = session / "dead.jsonl"
    qfile.write_text("".join(json.dumps({"id": q.id, "question": q.question}) + "\n"
                             for q in _questions(3)))  # fmt: skip
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    address = ray.get_runtime_context().gcs_address
    done = CliRunner().invoke(app, [
        "batch", str(qfile), "--out", str(session / "dead-run.jsonl"), "--store",
        str(session / "store.duckdb"), "--method", "bm25", "--model", "m", "--llm-url", url,
        "--ray", address, "--no-cache", "--json"])  # fmt: skip
    assert done.exit_code == 1, done.output
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["failed"] == 3 and summary["answered"] == 0
    [group] = summary["not_answered"]
    assert sorted(group["ids"]) == ["q0", "q1", "q2"]
    assert url in group["reason"] and "connection refused" in group["reason"]
