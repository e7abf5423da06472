"""`tablequest.waits.Turns`: the one waiting primitive of the server's CPU turns and eval's Gate."""

from __future__ import annotations

import threading
import time

from tablequest.eval.runner import Gate
from tablequest.service import CpuTurns
from tablequest.waits import Turns, on_wait, waiting


def test_gate_and_cpu_turns_are_turns() -> None:
    assert CpuTurns is Turns and issubclass(Gate, Turns)
    gate = Gate()
    with gate.held():
        assert not gate._turns.acquire(blocking=False)  # one turn, held
        with gate.released():
            assert gate._turns.acquire(blocking=False)  # given up while waiting
            gate._turns.release()
    assert gate._turns.acquire(blocking=False)
    gate._turns.release()


def test_n_turns_bound_the_holders_and_waits_free_them() -> None:
    turns = Turns(2)
    peak, inside = 0, 0
    lock = threading.Lock()
    all_waiting = threading.Barrier(5, timeout=10)  # passable only if every turn is given up
    failures: list[BaseException] = []

    def work() -> None:
        nonlocal peak, inside
        try:
            with turns.turn(), on_wait(turns.waiting):
                with lock:
                    inside += 1
                    peak = max(peak, inside)
                time.sleep(0.01)
                with lock:
                    inside -= 1
                with waiting():
                    all_waiting.wait()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not failures and peak == 2


def test_waiting_in_a_thread_without_a_turn_gives_nothing_up() -> None:
    turns = Turns(1)
    with turns.turn():
        seen: list[bool] = []

        def helper() -> None:
            with turns.waiting():  # holds no turn: must not release the owner's
                seen.append(turns._turns.acquire(blocking=False))

        t = threading.Thread(target=helper)
        t.start()
        t.join(5)
    assert seen == [False]
