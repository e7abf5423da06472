"""Batch runs without Ray: the question file, the endpoint scheduler, the cache file shared
by processes, and the settings a question task takes from its driver (the job pickled as Ray
sends it, the task's function called here)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus.dense.device import requested_device
from tablequest.errors import BadValue
from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import load
from tablequest.eval.runner import RunSpec
from tablequest.llm import LLMConfig, StubServer
from tablequest.llm.cache import CacheFile, cache_path
from tablequest.methods import get_method
from tablequest.sandbox import SandboxBusy
from tablequest.scale import evalrun
from tablequest.scale.batch import (
    BatchError,
    BatchQuestion,
    Endpoint,
    EndpointScheduler,
    read_questions,
)
from tablequest.scale.batchrun import BatchJob, answer_question
from tablequest.scale.cluster import RAY_ENV, connect, ray_address
from tablequest.scale.evalrun import EvalJob
from tablequest.settings import Settings


def test_read_questions(tmp_path: Path) -> None:
    good = tmp_path / "q.jsonl"
    good.write_text(
        '{"id": 1, "question": "Who won?"}\n\n'
        '{"id": "b", "question": "How many?", "source": "x.json", "table_id": ["t1", "t2"], '
        '"method": "seek"}\n'
    )
    qs = read_questions(good)
    assert [q.id for q in qs] == ["1", "b"]
    assert qs[1].table_ids == ("t1", "t2") and qs[1].method == "seek" and qs[0].source is None
    cases = {
        '{"id": "a"}': "'question' must be",
        '{"question": "x"}': "'id' must be",
        '{"id": "a", "question": "x", "colour": 1}': "unknown key",
        '{"id": "a", "question": "x", "table_id": [1]}': "'table_id' must be",
        "[1]": "expected a JSON object",
        "{oops": "not JSON",
        '{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}': "appears twice",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text + "\n")
        with pytest.raises(BatchError, match=message):
            read_questions(bad)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(BatchError, match="no question"):
        read_questions(tmp_path / "empty.jsonl")


def test_scheduler_bounds_each_endpoint_and_balances() -> None:
    endpoints = [Endpoint("http://a", 2), Endpoint("http://b", 3)]
    lock = threading.Lock()
    running = [0, 0]
    worst = [0, 0]
    finished: list[tuple[int, int]] = []

    def submit(item: int, slot: int) -> threading.Thread:
        def work() -> None:
            with lock:
                running[slot] += 1
                worst[slot] = max(worst[slot], running[slot])
            time.sleep(0.01 * (item % 3 + 1))
            with lock:
                running[slot] -= 1

        thread = threading.Thread(target=work)
        thread.item = item  # type: ignore[attr-defined]
        thread.start()
        return thread

    def wait(handles: list[threading.Thread]) -> list[threading.Thread]:
        while True:
            done = [h for h in handles if not h.is_alive()]
            if done:
                return done
            time.sleep(0.002)

    def result(handle: threading.Thread) -> int:
        if handle.item == 7:  # type: ignore[attr-defined]
            raise RuntimeError("lost")
        return int(handle.item)  # type: ignore[attr-defined]

    errors: list[int] = []
    scheduler = EndpointScheduler(endpoints, submit, wait, result)
    scheduler.run(
        list(range(40)),
        lambda item, slot, out: finished.append((item, slot)),
        lambda item, slot, exc: errors.append(item),
    )
    assert sorted(i for i, _ in finished) == [i for i in range(40) if i != 7] and errors == [7]
    assert worst[0] <= 2 and worst[1] <= 3 and scheduler.peak == worst
    assert {s for _, s in finished} == {0, 1}
    with pytest.raises(BatchError, match="must be >= 1"):
        Endpoint("http://c", 0)


CHILD = """
import sys
from pathlib import Path
from tablequest.llm.cache import CacheFile
store = CacheFile(Path(sys.argv[1]))
me = sys.argv[2]
for i in range(150):
    store.put(f"{me}-{i}", {"url": "u", "model": "m"}, [{"text": f"{me} {i}"}])
    assert store.get(f"{me}-{i}") == [{"text": f"{me} {i}"}], i
    store.get(f"w0-{i}")
print("disabled" if store.disabled else "ok")
"""


def test_cache_file_is_safe_across_processes(tmp_path: Path) -> None:
    path = cache_path(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), f"w{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    failed = [f"w{i}: rc {p.returncode}\n{out}{err}" for i, (p, (out, err)) in
              enumerate(zip(procs, outputs, strict=True)) if out.strip() != "ok"]  # fmt: skip
    assert not failed, "\n".join(failed)  # the whole stderr: the reason a child failed
    store = CacheFile(path)
    for i in range(6):
        for j in (0, 77, 149):
            assert store.get(f"w{i}-{j}") == [{"text": f"w{i} {j}"}]
    store.close()


def test_ray_address_and_connect_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RAY_ENV, raising=False)
    assert ray_address(None) is None
    monkeypatch.setenv(RAY_ENV, " auto ")
    assert ray_address(None) == "auto" and ray_address("local") == "local"
    with pytest.raises(BadValue, match="local, auto or ray://"):
        connect("http://example:1")


def sent(job: Any) -> Any:
    """`job` as a worker gets it (Ray pickles the job it puts in the object store)."""
    return pickle.loads(pickle.dumps(job))


def test_a_question_task_reads_the_drivers_settings_not_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "rivers.csv"
    table.write_text("river,length\nNile,6650\nAmazon,6400\n")
    question = BatchQuestion("q1", "How long is the Nile?", method="direct")
    monkeypatch.setenv("TABLEQUEST_READ_MAX_COLUMNS", "1")  # the worker's own environment

    def job(settings: Settings) -> BatchJob:
        llm = LLMConfig(model="stub-model", max_retries=0)
        trace_dir = str(tmp_path / "t")
        made = BatchJob(source=str(table), llm=llm, cache=False, trace_dir=trace_dir,
                        settings=settings)  # fmt: skip
        return sent(made)

    capped = Settings.load({"reading.max_columns": 1}, env={}, cwd=tmp_path)  # on the driver
    with StubServer(default_reply=json.dumps({"answer": "6650"})) as stub:
        free = answer_question(job(Settings()), Endpoint(stub.url), question, None)
        refused = answer_question(job(capped), Endpoint(stub.url), question, None)
    assert (free["status"], free["answer"]) == ("answered", "6650"), free
    assert refused["status"] == "failed" and "max_columns" in refused["error"], refused


def test_a_question_task_prunes_traces_by_the_drivers_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "rivers.csv"
    table.write_text("river,length\nNile,6650\n")
    folder = tmp_path / "t"
    folder.mkdir()
    old = [folder / f"20240101-00000{i}-abc{i}.jsonl" for i in range(3)]  # oldest first
    for i, path in enumerate(old):
        path.write_text("{}\n")
        os.utime(path, (time.time() - 3600 * (3 - i),) * 2)
    monkeypatch.setenv("TABLEQUEST_TRACE_KEEP", "0")  # the worker's own: no limit
    settings = Settings.load(env={"TABLEQUEST_TRACE_KEEP": "2"}, cwd=tmp_path)  # the driver's
    llm = LLMConfig(model="stub-model", max_retries=0)
    job = sent(BatchJob(source=str(table), llm=llm, cache=False, trace_dir=str(folder),
                        settings=settings))  # fmt: skip
    question = BatchQuestion("q1", "How long is the Nile?", method="direct")
    with StubServer(default_reply=json.dumps({"answer": "6650"})) as stub:
        record = answer_question(job, Endpoint(stub.url), question, None)
    assert record["status"] == "answered", record
    assert [p.exists() for p in old] == [False, True, True]  # 2 kept, plus the new trace
    assert Path(record["trace"]).exists()


def test_an_eval_task_builds_its_method_with_the_drivers_settings(
    evalrun_wtq: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = build_corpus(load("wtq", evalrun_wtq), "csv", cache_dir=tmp_path / "corpora")
    flags = {"sandbox.isolation": "degraded", "store.cache_dir": str(tmp_path / "cache")}
    driver_env = {"TABLEQUEST_SANDBOX_MEMORY_BUDGET": "1000", "TABLEQUEST_DEVICE": "cpu"}
    settings = Settings.load(flags, env=driver_env, cwd=tmp_path)  # on the driver
    spec = get_method("direct")
    job = sent(EvalJob.detached(
        corpus, spec=RunSpec("wtq", "direct", "", "csv", "m"), method="direct",
        options=spec.make_options({}), llm=LLMConfig(model="m", max_retries=0),
        settings=settings,
    ))  # fmt: skip
    corpus.close()
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("TABLEQUEST_SANDBOX", "strict")
    monkeypatch.setenv("TABLEQUEST_SANDBOX_MEMORY_BUDGET", "65536")
    monkeypatch.setenv("TABLEQUEST_DEVICE", "cuda:3")
    opened: dict[Any, Any] = {}  # what the worker process keeps (its corpus, its answerers)
    monkeypatch.setattr(evalrun, "_WORKER", opened)
    try:
        context = evalrun._answerer(job, Endpoint("http://127.0.0.1:9/v1"), None).method.context
        assert context.settings == settings and context.cache_dir == tmp_path / "cache"
        assert context.settings.sandbox.isolation == "degraded"
        with pytest.raises(SandboxBusy, match="budget is 1000 MB"):  # the driver's budget
            context.new_sandbox()
        embeddings = context.encoder_settings()
        assert requested_device(embeddings.device, embeddings.preferred_device) == "cpu"
    finally:
        for kept in opened.values():
            kept.close()
