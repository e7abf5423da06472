"""The memory budget across concurrent sandbox children (issue 25, item 5).

The first tests exercise `MemoryBudget` alone; the others start real children (bubblewrap),
skipping where no sandbox runs here.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablequest.sandbox import (
    InvalidArgument,
    MemoryBudget,
    Sandbox,
    SandboxBusy,
    SandboxError,
    SandboxUnavailable,
    Session,
    _budget,
)
from tablequest.settings import SandboxSettings, Settings

ENV = "TABLEQUEST_SANDBOX_MEMORY_BUDGET"
SETTING = "sandbox.memory_budget_mb"


def wait_until(condition: object, what: str, limit: float = 60.0) -> None:
    """Poll `condition()` (generous bound: only a hung test ever reaches it)."""
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


# -- the budget alone ---------------------------------------------------------------------


def test_reserve_and_release_once() -> None:
    budget = MemoryBudget(1000)
    first = budget.reserve(600, timeout=0)
    assert (budget.in_use_mb, budget.holders) == (600, 1)
    first.release()
    first.release()  # a second release (kill after reaping) gives nothing back twice
    assert (budget.in_use_mb, budget.holders) == (0, 0)
    assert first.released


def test_excess_is_refused_after_the_wait_with_a_clear_message() -> None:
    budget = MemoryBudget(1000, source="test budget")
    held = budget.reserve(600, timeout=0)
    held_by_one = r"1 running sandbox child\(ren\) hold 600 of 1000 MB"
    with pytest.raises(SandboxBusy, match=held_by_one) as e:
        budget.reserve(600, timeout=0.05)
    assert "test budget" in str(e.value) and ENV in str(e.value) and "600 MB" in str(e.value)
    assert isinstance(e.value, SandboxUnavailable)  # callers that handle that handle this
    assert budget.waiting == 0 and budget.in_use_mb == 600
    held.release()
    budget.reserve(600, timeout=0).release()


def test_a_child_larger_than_the_budget_is_refused_at_once() -> None:
    budget = MemoryBudget(1000)
    start = time.monotonic()
    with pytest.raises(SandboxBusy, match=rf"needs 2304 MB but .* is 1000 MB.*{ENV}"):
        budget.reserve(2304, timeout=600)
    assert time.monotonic() - start < 60  # no wait for room that can never come


def test_a_waiting_reservation_goes_when_room_is_released() -> None:
    budget = MemoryBudget(1000)
    held = budget.reserve(700, timeout=0)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(budget.reserve(700, timeout=600)))
    waiter.start()
    wait_until(lambda: budget.waiting == 1, "the second reservation to wait")
    assert got == []
    held.release()
    waiter.join(timeout=60)
    assert len(got) == 1 and budget.in_use_mb == 700 and budget.waiting == 0


def test_budget_arguments_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidArgument, match="must be a positive number of MB, got 0"):
        MemoryBudget(0)
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(InvalidArgument, match=f"{ENV} must be a positive number of MB, got 'lots'"):
        _budget.default_total_mb()
    monkeypatch.setenv(ENV, "3000")
    assert _budget.default_total_mb() == (3000, f"{ENV}=3000")
    monkeypatch.delenv(ENV)
    monkeypatch.setattr(_budget, "physical_memory_mb", lambda: 32_000)
    assert _budget.default_total_mb()[0] == 16_000  # half the machine
    monkeypatch.setattr(_budget, "physical_memory_mb", lambda: 2_000)
    assert _budget.default_total_mb()[0] == 2304  # never below one default child
    with pytest.raises(InvalidArgument, match="memory_budget must be a MemoryBudget"):
        Sandbox(memory_budget=4096, prewarm=False)  # type: ignore[arg-type]
    with pytest.raises(SandboxBusy, match="needs 2304 MB but the sandbox memory budget is 1000"):
        Sandbox(memory_budget=MemoryBudget(1000), prewarm=False)


def test_a_bad_environment_value_is_a_clear_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_budget, "_shared", {})  # no pool made before
    monkeypatch.setenv(ENV, "-5")
    with pytest.raises(SandboxError, match=f"{ENV} must be a positive number of MB, got '-5'"):
        Sandbox(prewarm=False)


def test_the_budget_is_the_loaded_settings_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_budget, "_shared", {})
    monkeypatch.setattr(_budget, "physical_memory_mb", lambda: 32_000)
    capped = pickle.loads(pickle.dumps(Settings.load({}, env={ENV: "1000"})))  # as sent
    monkeypatch.setenv(ENV, "65536")  # this process's own environment says otherwise
    with pytest.raises(SandboxBusy, match=rf"budget is 1000 MB \({ENV}=1000\)"):
        Sandbox.from_settings(capped)  # refused before any child starts
    monkeypatch.setenv(ENV, "1000")
    default = Settings.load({}, env={})  # the driver set nothing: half the machine
    assert _budget.shared_budget(default.sandbox, "default").total_mb == 16_000
    flagged = Settings.load({SETTING: 3000}, env={})
    shared = _budget.shared_budget(flagged.sandbox, flagged.source(SETTING))
    assert (shared.total_mb, shared.source) == (3000, f"{SETTING}=3000 (flag)")
    assert _budget.shared_budget(flagged.sandbox) is shared  # one pool per size and process
    with pytest.raises(SandboxError, match=f"{SETTING} must be a positive number of MB, got 0"):
        Sandbox.from_settings(Settings(sandbox=SandboxSettings(memory_budget_mb=0)))  # closed


# -- real children ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def child_mb() -> int:
    """What one default child reserves here (skip where no sandbox runs)."""
    try:
        with Sandbox(prewarm=False) as sb:
            return sb.child_mb
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")


@pytest.fixture()
def budget(child_mb: int) -> Iterator[MemoryBudget]:
    """Room for one child, not two; empty again when the test ends."""
    budget = MemoryBudget(2 * child_mb - 1, source="test budget")
    yield budget
    gc.collect()
    assert budget.in_use_mb == 0 and budget.holders == 0


def test_second_session_waits_is_refused_then_goes_once_the_first_closes(
    budget: MemoryBudget,
) -> None:
    with Sandbox(memory_budget=budget, prewarm=False, budget_timeout=0.2) as sb:
        first = sb.session()
        assert first.run("1 + 1").value == "2"
        with pytest.raises(SandboxBusy, match=r"memory budget is in use: 1 running .*test budget"):
            sb.session()
        first.close()
        assert budget.in_use_mb == 0
        with sb.session() as again:
            assert again.run("2 + 2").value == "4"


def test_a_waiting_session_starts_when_the_first_closes(budget: MemoryBudget) -> None:
    with Sandbox(memory_budget=budget, prewarm=False, budget_timeout=600) as sb:
        first = sb.session()
        opened: list[Session] = []
        waiter = threading.Thread(target=lambda: opened.append(sb.session()))
        waiter.start()
        wait_until(lambda: budget.waiting == 1, "the second session to wait")
        first.close()
        waiter.join(timeout=120)
        assert len(opened) == 1
        with opened[0] as second:
            assert second.run("3 + 3").value == "6"


def test_no_spare_is_started_after_a_session_claims_one(budget: MemoryBudget) -> None:
    with Sandbox(memory_budget=budget) as sb:
        assert budget.holders == 1  # the pre-started child
        with sb.session() as s:
            assert s.run("1").value == "1"
            assert budget.holders == 1  # that same child; no spare in its place
            # a second sandbox on a full budget does not wait for its pre-start
            with Sandbox(memory_budget=budget, budget_timeout=600) as other:
                assert budget.holders == 1 and other._spare is None
        assert budget.holders == 0


def test_crashed_and_killed_children_give_their_memory_back(
    budget: MemoryBudget, child_mb: int
) -> None:
    with Sandbox(memory_budget=budget, prewarm=False) as sb, sb.session() as s:
        assert s.run("x = 1").ok and budget.in_use_mb == child_mb
        crashed = s.run("import os\nos._exit(3)")
        assert not crashed.ok and "exited with status 3" in str(crashed.error)
        assert budget.holders == 0  # reaped with the crash
        assert s.run("x = 2").ok and budget.holders == 1  # the restart reserved again
        child = s._child
        assert child is not None
        os.killpg(child.proc.pid, signal.SIGKILL)  # as the kernel's OOM killer would
        child.proc.wait(timeout=60)
        killed = s.run("x")
        assert not killed.ok and "SIGKILL" in str(killed.error)
        assert budget.holders == 0
    # a child nobody kills is reaped when it is collected
    dropped = sb._new_child(wait=0)
    assert budget.holders == 1
    del dropped
    gc.collect()
    assert budget.holders == 0


def test_an_ask_the_budget_cannot_hold_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tablequest.llm import Scripted
    from tablequest.methods.run import ask

    monkeypatch.setattr(_budget, "_shared", {})  # no pool made before
    monkeypatch.setenv(ENV, "1000")
    (tmp_path / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
    replies = ['["amount"]', '["north"]', "Thought: sum\nAction: df['amount'].sum()"]
    result = ask(
        "What is the total amount?",
        tmp_path / "sales.csv",
        method="rag",
        llm=Scripted(replies),
        options={"encoder": "hash"},
        trace_dir=tmp_path / "traces",
        cache=False,
    )
    assert result.status == "failed"
    reason = str(result.details["reason"])
    assert "sandbox memory budget is 1000 MB" in reason and f"{ENV}=1000" in reason
