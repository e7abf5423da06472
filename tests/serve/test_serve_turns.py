"""What keeps searches fast while asks run: CPU turns, waits, frozen indexes, cheap readers."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tablequest.corpus import Store, ingest
from tablequest.llm import Scripted
from tablequest.llm.instrument import Instrumented
from tablequest.service import AskManager, CpuTurns, StoreManager
from tablequest.waits import on_wait, waiting


def test_waiting_without_a_hook_does_nothing() -> None:
    with waiting():
        pass
    turns = CpuTurns(1)
    with turns.waiting():  # this thread holds no turn: nothing to give up
        assert turns._turns.acquire(blocking=False)  # the one turn is still free
        turns._turns.release()
    with turns.turn():  # and it can still be taken (waiting() released nothing extra)
        assert not turns._turns.acquire(blocking=False)


def test_one_turn_at_a_time_and_given_up_while_waiting() -> None:
    turns = CpuTurns(1)
    inside: list[int] = []
    peak = 0
    lock = threading.Lock()
    all_waiting = threading.Barrier(6, timeout=10)  # reachable only if every turn is given up
    failures: list[BaseException] = []

    def work(i: int) -> None:
        nonlocal peak
        try:
            with turns.turn():
                with lock:
                    inside.append(i)
                    peak = max(peak, len(inside))
                time.sleep(0.01)
                with lock:
                    inside.remove(i)
                with turns.waiting():
                    all_waiting.wait()
        except BaseException as exc:  # a broken barrier: some thread kept its turn
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and peak == 1


def test_a_model_call_is_a_wait() -> None:
    waits: list[str] = []

    @contextmanager
    def hook() -> Iterator[None]:
        waits.append("start")
        yield
        waits.append("end")

    llm = Instrumented(Scripted(["hello"]))
    with on_wait(hook):
        assert llm.chat([{"role": "user", "content": "hi"}])[0].text == "hello"
    assert waits == ["start", "end"]


def test_an_ask_waiting_on_its_model_lets_another_ask_run() -> None:
    manager = AskManager(max_asks=4, timeout=30, cpu_turns=1)
    other_done = threading.Event()

    def waits_for_the_other(job: Any, trace: Any) -> Any:
        with waiting():  # as a model call does
            return other_done.wait(10)

    def finishes(job: Any, trace: Any) -> Any:
        other_done.set()
        return "done"

    first = manager.start("q1", "seek", None, waits_for_the_other)
    time.sleep(0.05)
    second = manager.start("q2", "seek", None, finishes)
    deadline = time.monotonic() + 10
    while not (first.done and second.done) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert second.result == "done" and first.result is True  # not the 10 s timeout
    manager.close()


def test_an_ask_running_python_holds_its_turn() -> None:
    manager = AskManager(max_asks=4, timeout=30, cpu_turns=1)
    order: list[str] = []
    started, release = threading.Event(), threading.Event()

    def busy(job: Any, trace: Any) -> Any:
        order.append("busy start")
        started.set()
        release.wait(10)  # not a marked wait: the turn stays held
        order.append("busy end")
        return 1

    def second(job: Any, trace: Any) -> Any:
        order.append("second")
        return 2

    a = manager.start("q1", "seek", None, busy)
    assert started.wait(10)
    b = manager.start("q2", "seek", None, second)
    time.sleep(0.2)
    assert not b.done and order == ["busy start"]  # waiting for the turn
    release.set()
    deadline = time.monotonic() + 10
    while not (a.done and b.done) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == ["busy start", "busy end", "second"] and (a.result, b.result) == (1, 2)
    manager.close()


@pytest.fixture()
def store_file(tmp_path: Path) -> Path:
    for i in range(3):
        (tmp_path / f"t{i}.json").write_text(json.dumps([["City", "Pop"], [f"c{i}", str(i)]]))
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, sorted(tmp_path.glob("*.json"))).tables_stored == 3
    return tmp_path / "s.duckdb"


def test_loaded_indexes_are_frozen_out_of_full_collections(store_file: Path) -> None:
    gc.unfreeze()
    manager = StoreManager(store_file)
    try:
        manager.warm()
        assert gc.get_freeze_count() > 0
    finally:
        manager.close()
        gc.unfreeze()


def test_a_new_reader_opens_no_database(store_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reader is a cursor of the generation's connection; a throwaway in-memory DuckDB per
    reader held the interpreter lock ~30 ms and stalled the server when 50 asks came at once."""
    manager = StoreManager(store_file)
    import duckdb

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a reader opened a database")

    monkeypatch.setattr(duckdb, "connect", refuse)
    try:
        with manager.reader() as a, manager.reader() as b:
            assert len(a) == len(b) == 3 and a.con is not b.con
            assert a.get(a.table_ids()[0]).n_rows == 1
    finally:
        monkeypatch.undo()
        manager.close()
