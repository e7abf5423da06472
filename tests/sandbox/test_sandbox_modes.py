"""Every isolation mode this machine supports, with every layer on, checked from the host.

The degraded modes ("unshare", "off") run with the opt-in; each is skipped, with the reason,
where it does not work. What must hold in every mode: honest table code runs; the child has
an unused uid of its own, no groups and no capabilities (read from the host's /proc, which
the child cannot fake); every thread is under seccomp; the child is stopped between runs, so
a thread left spinning costs nothing; the result records the mode.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from tablequest.sandbox import Sandbox, SandboxUnavailable, Session

if TYPE_CHECKING:
    from conftest import Task

pytestmark = pytest.mark.slow

HONEST = """
import re
m = sales.merge(customers, on='customer')
by_segment = m.groupby('segment')['amount'].sum().to_dict()
pivot = sales.pivot_table(index='region', values='amount', aggfunc='count')
months = pd.to_datetime(sales['date']).dt.month.value_counts().sort_index().to_dict()
skus = [int(re.search(r'-(\\d+)', s).group(1)) for s in sales['sku']]
sales.plot.bar(x='order', y='amount')
(by_segment, int(pivot.loc['north', 'amount']), months, max(skus))
"""
HONEST_VALUE = "({'b2b': 100.0, 'retail': 319.5}, 3, {1: 1, 2: 2, 3: 3}, 999)"


@pytest.fixture(scope="module", params=["bwrap", "unshare", "off"])
def mode_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    mode = request.param
    if mode == "bwrap":  # the default sandbox, shared with the other modules
        yield request.getfixturevalue("sandbox")
        return
    try:
        sandbox = Sandbox(use_namespaces=mode, isolation="degraded", prewarm=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"mode {mode!r} does not work on this machine: {exc}")
    with sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def mode_session(mode_sandbox: Sandbox, frames: dict[str, pd.DataFrame]) -> Iterator[Session]:
    with mode_sandbox.session(frames) as session:
        yield session


def main_task(tasks: list[Task]) -> Task:
    return min(tasks, key=lambda t: t.ns_tid)


def test_honest_programs_run(mode_session: Session, mode_sandbox: Sandbox) -> None:
    result = mode_session.run(HONEST, timeout=30)
    assert result.ok, result.error
    assert result.value == HONEST_VALUE
    assert len(result.figures) == 1 and result.figures[0].startswith(b"\x89PNG")
    assert result.mode == mode_sandbox.mode
    assert result.degraded == (mode_sandbox.mode != "bwrap")


def test_child_is_unprivileged(
    mode_session: Session, tasks_of: Callable[[Session], list[Task]]
) -> None:
    status = main_task(tasks_of(mode_session)).fields
    uids, gids = status["Uid"].split(), status["Gid"].split()
    assert len(set(uids)) == 1 and len(set(gids)) == 1 and uids[0] == gids[0], status
    uid = int(uids[0])
    if os.geteuid() == 0:
        assert uid not in (0, 65534) and status["Groups"] == "", status
        assert status["CapBnd"].strip("0") == "", status
    for field in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert status[field].strip("0") == "", (field, status)
    assert status["NoNewPrivs"] == "1"
    layers = {layer.name: layer for layer in mode_session.layers}
    for name in ("unprivileged uid", "no capabilities", "lockdown before threads", "seccomp"):
        assert layers[name].active, layers[name]


def test_each_child_has_its_own_uid(
    sandbox: Sandbox, tasks_of: Callable[[Session], list[Task]]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root host can give each child a uid of its own")
    with sandbox.session() as one, sandbox.session() as other:
        assert main_task(tasks_of(one)).fields["Uid"] != main_task(tasks_of(other)).fields["Uid"]


def test_every_thread_is_under_seccomp_and_stops_between_runs(
    mode_session: Session, tasks_of: Callable[[Session], list[Task]]
) -> None:
    spin = (
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "import pyarrow as pa\nint(pa.array(range(100_000)).sum().as_py())"
    )
    assert mode_session.run(spin).value == "4999950000"
    deadline = time.monotonic() + 10
    tasks = tasks_of(mode_session)
    while any(t.state != "T" for t in tasks) and time.monotonic() < deadline:
        time.sleep(0.05)
        tasks = tasks_of(mode_session)
    assert len(tasks) >= 2 and all(t.state == "T" for t in tasks), tasks
    assert all(t.seccomp == "2" for t in tasks), tasks  # installed without TSYNC: all born after
    cpu = [Path(f"/proc/{t.tid}/stat").read_text().rsplit(")", 1)[1].split()[11:13] for t in tasks]
    time.sleep(0.5)
    again = [
        Path(f"/proc/{t.tid}/stat").read_text().rsplit(")", 1)[1].split()[11:13] for t in tasks
    ]
    assert cpu == again  # no CPU time spent while the host was not waiting for a run
    assert mode_session.run("2 + 2").value == "4"  # continued for the next run
