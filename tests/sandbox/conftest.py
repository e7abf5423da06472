"""Shared fixtures for the sandbox tests: sandboxes, frames, host secrets, a listening socket,
and a look at the child's tasks from the host (/proc), which the child cannot fake. Also makes
`sandbox_attacks` (the escape attempts) importable by these tests."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tablequest.sandbox import ExecResult, Sandbox, SandboxUnavailable, Session

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

SECRET = "tq-secret-7f3a9c1e5b"
SECRET_ENV = "TABLEQUEST_TEST_API_KEY"


@dataclass
class Host:
    """What an escape must not reach: secrets, a file system outside the session, a server."""

    secret_file: Path
    private_file: Path
    outside_dir: Path
    listener: socket.socket
    port: int
    #: a root-owned 0600 file inside the interpreter's roots (readable by Landlock's rules)
    root_private: Path | None = None
    secret: str = SECRET
    secret_env: str = SECRET_ENV

    def fingerprint(self) -> list[tuple[object, ...]]:
        """Owner, mode, times and extended attributes of the host files an attack may touch."""
        out: list[tuple[object, ...]] = []
        for path in (self.secret_file, self.private_file, self.root_private):
            if path is not None:
                st = os.lstat(path)
                attrs = tuple(os.listxattr(path, follow_symlinks=False))
                out.append((st.st_uid, st.st_gid, st.st_mode, st.st_mtime_ns, attrs))
        return out

    def fill(self, code: str) -> str:
        """An attack's code with this host's paths, port and pid filled in."""
        return code.format(
            root_private=str(self.root_private),
            secret=str(self.secret_file),
            private=str(self.private_file),
            outside=str(self.outside_dir),
            secret_env=self.secret_env,
            port=self.port,
            host_pid=os.getpid(),
        )

    def leaked(self, result: ExecResult) -> list[str]:
        """Secrets that show up in what a run returned."""
        texts = [result.stdout, result.value or "", result.error or ""]
        markers = [self.secret, "root:x:0:0"]
        return [m for m in markers for t in texts if m in t]

    def connections(self) -> int:
        """Accept and count connections that reached the listening socket."""
        count = 0
        while select.select([self.listener], [], [], 0.2)[0]:
            conn, _ = self.listener.accept()
            conn.close()
            count += 1
        return count


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """Host secrets in the environment and on disk, and a server on 127.0.0.1."""
    outside = tmp_path_factory.mktemp("outside")
    os.chmod(outside, 0o755)
    secret_file = outside / "secret.txt"
    secret_file.write_text(f"{SECRET}\n")
    os.chmod(secret_file, 0o644)
    private_file = outside / "private.txt"
    private_file.write_text(f"{SECRET}\n")
    os.chmod(private_file, 0o600)
    old = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = SECRET
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    root_private = Path(sys.prefix) / f".tablequest-test-private-{os.getpid()}"
    try:
        root_private.write_text(f"{SECRET}\n")
        os.chmod(root_private, 0o600)
    except OSError:  # a read-only interpreter install: that attack is skipped
        root_private = None
    try:
        port = listener.getsockname()[1]
        yield Host(secret_file, private_file, outside, listener, port, root_private)
    finally:
        listener.close()
        if root_private is not None:
            root_private.unlink(missing_ok=True)
        if old is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = old


@pytest.fixture(scope="session")
def frames() -> dict[str, pd.DataFrame]:
    sales = pd.DataFrame(
        {
            "order": [1, 2, 3, 4, 5, 6],
            "region": ["north", "south", "north", "east", "south", "north"],
            "customer": ["c1", "c2", "c1", "c3", "c2", "c3"],
            "amount": [120.0, 80.5, 99.5, 40.0, 19.5, 60.0],
            "date": [
                "2024-01-05",
                "2024-02-11",
                "2024-02-20",
                "2024-03-01",
                "2024-03-15",
                "2024-03-30",
            ],
            "sku": ["AB-100", "CD-200", "AB-310", "EF-999", "CD-201", "AB-100"],
        }
    )
    customers = pd.DataFrame(
        {"customer": ["c1", "c2", "c3"], "segment": ["retail", "b2b", "retail"]}
    )
    return {"sales": sales, "customers": customers}


@pytest.fixture(scope="session")
def sandbox(host: Host) -> Iterator[Sandbox]:
    """The default sandbox (bubblewrap, as `Sandbox()` gives it), created with secrets set."""
    with Sandbox() as sb:
        yield sb


@dataclass(frozen=True)
class Task:
    """One thread of a sandbox child, as the host's /proc shows it."""

    tid: int  # in the host's pid namespace
    ns_tid: int  # in the child's own pid namespace
    name: str
    state: str
    seccomp: str
    fields: dict[str, str]


def child_tasks(session: Session) -> list[Task]:
    """Every thread of the session's Python child (not bubblewrap's or unshare's processes)."""
    child = session._child
    assert child is not None, "the session has no running child"
    pgid, exe = child.proc.pid, child.plan.interpreter.executable
    tasks: list[Task] = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid or argv0 != exe.encode():
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
                fields = {
                    k: v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines())
                }
                state = fields["State"].split()[0]
                ns_tid = int(fields["NSpid"].split()[-1])
                tasks.append(
                    Task(int(tid), ns_tid, fields["Name"], state, fields["Seccomp"], fields)
                )
    return tasks


@pytest.fixture(scope="session")
def tasks_of() -> Callable[[Session], list[Task]]:
    """`tasks_of(session)`: the child's threads seen from the host."""
    return child_tasks


class Harness:
    """The escape suite's sandboxes: one sandbox and one long-lived session per configuration.

    A configuration this machine cannot run is skipped, with the reason, for every attempt.
    """

    def __init__(self, frames: dict[str, pd.DataFrame], configs: dict[str, dict[str, Any]]):
        self.frames = frames
        self.configs = configs
        self.sandboxes: dict[str, Sandbox] = {}
        self.sessions: dict[str, Session] = {}
        self.skipped: dict[str, str] = {}

    def sandbox(self, config: str) -> Sandbox:
        if config in self.skipped:
            pytest.skip(self.skipped[config])
        if config not in self.sandboxes:
            try:
                sb = Sandbox(prewarm=config == "default", **self.configs[config])
            except SandboxUnavailable as exc:
                self.skipped[config] = f"{config} does not work on this machine: {exc}"
                pytest.skip(self.skipped[config])
            self.sandboxes[config] = sb
        return self.sandboxes[config]

    def session(self, config: str) -> Session:
        if config not in self.sessions:
            self.sessions[config] = self.sandbox(config).session(self.frames)
        return self.sessions[config]

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()
        for sb in self.sandboxes.values():
            sb.close()


@pytest.fixture(scope="session")
def escape_harness() -> type[Harness]:
    """The `Harness` class (test modules cannot import conftest)."""
    return Harness
