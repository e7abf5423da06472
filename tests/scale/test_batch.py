"""Batch runs without Ray: the question file, the endpoint scheduler, the cache file shared
by processes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tablequest.errors import BadValue
from tablequest.llm.cache import CacheFile, cache_path
from tablequest.scale.batch import BatchError, Endpoint, EndpointScheduler, read_questions
from tablequest.scale.cluster import RAY_ENV, connect, ray_address


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
