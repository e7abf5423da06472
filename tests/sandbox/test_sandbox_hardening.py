"""Regression tests for the hardening findings (issue 11) that need more than one run.

- every thread of the child is under Landlock and seccomp (probed from inside each thread);
- a child that stops reading cannot hang the host (write deadlines);
- the number of files a session may create is capped in every mode;
- a reply forged by a thread for the next run is never taken for that run's answer;
- only `SandboxError` leaves the sandbox API, whatever goes wrong inside;
- closing a session removes its directory whatever the code left in it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from tablequest.sandbox import (
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
    Session,
    _frames,
)
from tablequest.sandbox._process import Child

if TYPE_CHECKING:
    from conftest import Task

pytestmark = pytest.mark.slow

MODES = {
    "bwrap": {"use_namespaces": "bwrap"},
    "off": {"use_namespaces": "off", "isolation": "degraded"},
}


@pytest.fixture(scope="module", params=sorted(MODES))
def kernel_only(request: pytest.FixtureRequest) -> Iterator[Session]:
    """A session with the audit hook off (ctypes and symlinks usable, as after a hook bypass).

    The cleanup test closes it, so it runs last among the tests that use it.
    """
    try:
        sandbox = Sandbox(
            audit_hook=False, prewarm=False, max_files=500, disk_mb=32, **MODES[request.param]
        )
    except SandboxUnavailable as exc:
        pytest.skip(f"mode {request.param!r} does not work on this machine: {exc}")
    with sandbox, sandbox.session({"sales": pd.DataFrame({"a": [1]})}) as session:
        yield session


# --------------------------------------------------------------------------- every thread

PROBE = """
import ctypes, os, signal, threading, time
libc = ctypes.CDLL(None, use_errno=True)
answers = {}
def probe(signum):
    fd = libc.open(b"/proc/self/status", 0)
    answers[libc.syscall(186)] = "opened" if fd >= 0 else ctypes.get_errno()
probe_c = ctypes.CFUNCTYPE(None, ctypes.c_int)(probe)
libc.signal(signal.SIGUSR2, probe_c)
for tid in OTHERS:
    libc.syscall(234, os.getpid(), tid, signal.SIGUSR2)  # tgkill
deadline = time.monotonic() + 10
while len(answers) < len(OTHERS) and time.monotonic() < deadline:
    time.sleep(0.05)
try:
    open("/proc/self/status").close()
    answers["main"] = "opened"
except PermissionError:
    answers["main"] = 13
sorted(answers.items(), key=str)
"""


def test_every_thread_is_under_landlock_and_seccomp(
    kernel_only: Session, tasks_of: Callable[[Session], list[Task]]
) -> None:
    """Each thread tries a read only Landlock refuses; a thread created before the lockdown
    (like Arrow's jemalloc thread once was) would succeed, or never answer."""
    session = kernel_only
    start = "import threading\nstop = threading.Event()\n"
    start += "threading.Thread(target=stop.wait, daemon=True).start()\nimport pyarrow"
    assert session.run(start).ok
    tasks = tasks_of(session)
    assert len(tasks) >= 2 and all(t.seccomp == "2" for t in tasks), tasks
    main = min(t.ns_tid for t in tasks)
    others = [t.ns_tid for t in tasks if t.ns_tid != main]
    result = session.run(PROBE.replace("OTHERS", repr(others)), timeout=30)
    assert result.ok, result.error
    expected = sorted([*((tid, 13) for tid in others), ("main", 13)], key=str)
    assert result.value == repr(expected)
    assert {layer.name: layer.active for layer in session.layers}["lockdown before threads"]


# --------------------------------------------------------------------------- no hangs

READ_END = (
    "import fcntl, os, stat\n"
    "def read_end(fd):\n"
    "    try:\n"
    "        fifo = stat.S_ISFIFO(os.fstat(fd).st_mode)\n"
    "    except OSError:\n"
    "        return False\n"
    "    return fifo and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY\n"
    "fd = [fd for fd in range(3, 64) if read_end(fd)][0]  # the request pipe\n"
    "keep = os.dup(fd)\n"
    "fcntl.fcntl(keep, 1031, 4096)  # F_SETPIPE_SZ: the old pipe now holds 4 KB\n"
    "r, w = os.pipe()\n"
    "os.dup2(r, fd)  # the child now reads a pipe nobody writes to\n"
)
STOP_SELF = "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n"
PADDING = "# padding\n" * 20_000  # far more than a shrunk pipe holds


def test_a_child_that_stops_reading_cannot_hang_the_host(
    sandbox: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    """A replaced read end (the host's write blocks) and a stopped child (its read blocks):
    each run returns an error within its deadline, and the session goes on."""

    def run_in_thread(session: Session, code: str) -> ExecResult:
        results: list[ExecResult] = []
        worker = threading.Thread(
            target=lambda: results.append(session.run(code, timeout=2.0)), daemon=True
        )
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "Session.run hung on a child that stopped reading"
        return results[0]

    with sandbox.session(frames) as session:
        assert session.run(READ_END).ok
        for cell in ("x = 1\n", STOP_SELF):  # after the restart: a child that stops itself
            result = run_in_thread(session, cell + PADDING)
            assert not result.ok and "restarted" in str(result.error), result
        assert session.run("len(sales)").value == "6"


# --------------------------------------------------------------------------- forged replies

FORGE_LATER = (
    "import json, os, stat, struct, threading, time\n"
    "def forge():\n"
    "    time.sleep(0.3)\n"
    "    msg = json.dumps({'ok': True, 'stdout': '', 'value': \"'forged'\", 'error': None, "
    "'figures': []}).encode()\n"
    "    for _ in range(500):  # keep trying: any moment the process runs will do\n"
    "        for fd in range(3, 64):\n"
    "            try:\n"
    "                if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
    "                    os.write(fd, struct.pack('>I', len(msg)) + msg)\n"
    "            except OSError:\n"
    "                pass\n"
    "        time.sleep(0.01)\n"
    "threading.Thread(target=forge, daemon=True).start()\n"
)


def test_a_reply_forged_for_the_next_run_is_refused(
    sandbox: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    with sandbox.session(frames) as session:
        assert session.run(FORGE_LATER).ok
        time.sleep(1.0)  # the host is idle (an LLM call): the forger's timer runs out
        outcomes: list[ExecResult] = []
        while len(outcomes) < 20 and all(r.ok for r in outcomes):
            outcomes.append(session.run("'honest'"))
        assert all(r.value in (None, "'honest'") for r in outcomes), outcomes
        assert not outcomes[-1].ok and "restarted" in str(outcomes[-1].error), outcomes
        assert session.run("'honest'").value == "'honest'"


# --------------------------------------------------------------------------- API errors


def test_only_sandbox_errors_leave_the_api(
    sandbox: Sandbox, frames: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    with sandbox.session(frames) as session:

        def explode(self: Child, code: str, timeout: float) -> None:
            raise RecursionError("maximum recursion depth exceeded")

        with monkeypatch.context() as patch:
            patch.setattr(Child, "run", explode)
            result = session.run("1")
        assert not result.ok and "RecursionError" in str(result.error)
        assert "restarted" in str(result.error)
        assert session.run("len(sales)").value == "6"

    def broken(frames: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(_frames, "encode_frames", broken)
    with pytest.raises(SandboxError, match="internal error: KeyError"):
        sandbox.session(frames)


# --------------------------------------------------------------------------- cleanup


def test_the_number_and_size_of_files_are_capped(kernel_only: Session) -> None:
    """A tmpfs with nr_inodes and a size refuses the 501st file and the 33rd MB (this module's
    sandboxes have max_files=500, disk_mb=32); without one ("off") the host measures after
    the run and kills the child. Either way the run fails and the session goes on."""
    result = kernel_only.run("for i in range(1_000):\n    open(f'f{i}', 'w').close()", timeout=30)
    assert not result.ok, result
    if kernel_only.mode == "off":
        assert "more than 500 files" in str(result.error) and "restarted" in str(result.error)
    else:
        assert "No space left on device" in str(result.error)
    tidy = "import os\nfor name in os.listdir('.'):\n    if name[1:].isdigit():\n"
    tidy += "        os.remove(name)\nlen(sales)"
    assert kernel_only.run(tidy).value == "1"
    big = "for i in range(3):\n    with open(f'b{i}', 'wb') as f:\n"
    big += "        f.write(b'x' * (15 << 20))"
    result = kernel_only.run(big, timeout=30)
    assert not result.ok, result
    if kernel_only.mode == "off":
        assert "more than 32 MB" in str(result.error) and "restarted" in str(result.error)
    else:
        assert "No space left on device" in str(result.error)
    tidy = tidy.replace("name[1:].isdigit()", "name.startswith('b')")
    assert kernel_only.run(tidy).value == "1"


def test_closing_removes_whatever_the_code_left(kernel_only: Session, tmp_path: Path) -> None:
    """Symlinks to directories inside and outside, a loop, locked directories: `close()`
    completes, removes the whole directory and follows no link (in "off" mode the session
    lives on the host's disk; with bubblewrap it is a tmpfs that vanishes with the child)."""
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("x")
    code = (
        "import os\nos.makedirs('a/b/c')\nos.symlink('a', 'to-a')\n"
        f"os.symlink({str(target)!r}, 'to-outside')\nos.symlink('loop', 'loop')\n"
        "open('a/b/c/f', 'w').write('x')\nos.chmod('a/b', 0)\nos.chmod('a', 0o500)\n"
        "sorted(os.listdir('.'))"
    )
    child = kernel_only._child
    assert child is not None
    result = kernel_only.run(code)
    assert result.ok and "to-outside" in str(result.value), result
    kernel_only.close()
    assert not os.path.lexists(child.workdir)
    assert (target / "keep.txt").read_text() == "x"
