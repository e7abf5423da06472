"""One sandbox child process as seen from the host: spawn, wait ready, load, run, kill.

Choices:
- every request carries a fresh random id that the reply must echo, and before a request the
  pipe must be silent: a reply that is stale, forged by a thread or unsolicited kills the
  child instead of being taken for the next run's answer;
- every write and read has a deadline (the pipe to the child is non-blocking);
- between runs the child's process group is stopped (SIGSTOP) and continued just before the
  next request, so threads left behind by a cell cannot run, or spend the session's CPU
  budget, while the host is not waiting for an answer;
- where the session directory is on the host's disk (no tmpfs), the host measures it after
  each run, while the child is stopped, and kills the child past `max_files` or `disk_mb`;
- a child holds its memory-budget reservation (`_budget`) until it is reaped: `_reap` releases
  it last, after the process group is killed and waited, on every path that ends a child.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from typing import Any

from tablequest.errors import RunError

from . import _launch, _protocol, _uids
from ._budget import Reservation
from ._cleanup import measure, remove_tree
from ._types import SandboxUnavailable

#: seconds between the soft timeout (TimeoutError inside the child) and the process-group kill
HARD_KILL_GRACE = 0.5


class LimitExceeded(RunError):
    """The child went past a limit the host enforces itself; it must be killed."""


@dataclass(frozen=True)
class Limits:
    """Resource and output limits applied to every child."""

    cpu_seconds: int
    memory_mb: int
    file_size_mb: int
    disk_mb: int
    max_open_files: int
    max_output_bytes: int
    max_figures: int
    max_figure_bytes: int
    network: bool
    seccomp: bool
    audit_hook: bool
    landlock: bool = True
    max_threads: int = 64
    max_files: int = 10_000
    max_figure_side: int = 4096

    def message_cap(self) -> int:
        """Largest reply the host accepts (JSON may escape a character into 12 bytes)."""
        text = 12 * (2 * self.max_output_bytes + 6000)
        lineage = 2 * _protocol.LINEAGE_CAP + 64
        return text + lineage + self.max_figures * (self.max_figure_bytes * 4 // 3 + 16) + 4096

    def figure_limits(self) -> _protocol.FigureLimits:
        """Bounds a reply's figures must respect."""
        side = self.max_figure_side
        return _protocol.FigureLimits(self.max_figures, self.max_figure_bytes, side, side * side)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal the child's process group, unless its leader was reaped (the pid may be reused)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def session_on_tmpfs(plan: _launch.Plan) -> bool:
    """The session directory is a tmpfs (memory), not a directory on the host's disk."""
    return plan.tmpfs or plan.mode == "bwrap"


def _reap(
    proc: subprocess.Popen[bytes], workdir: str, reservation: Reservation | None = None
) -> None:
    """Kill the child's process group, wait for it, remove its directory and give its memory
    back to the budget (never raises)."""
    try:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(OSError):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    finally:
        try:
            remove_tree(workdir)
        finally:
            if reservation is not None:
                reservation.release()


def _config(plan: _launch.Plan, limits: Limits, session: str, uid: int | None) -> dict[str, Any]:
    """What the child needs to know, as one JSON-able dict (its argv)."""
    return {
        "session": session,
        "uid": uid,
        "tmpfs": {"size": limits.disk_mb << 20, "inodes": limits.max_files} if plan.tmpfs else None,
        "remap": list(plan.remap),
        "read_roots": list(plan.interpreter.roots),
        "nproc": limits.max_threads + (0 if plan.drop_uid else 2) if plan.thread_cap else None,
        "memory": limits.memory_mb << 20,
        "file_size": limits.file_size_mb << 20,
        "open_files": limits.max_open_files,
        "cpu": limits.cpu_seconds,
        "network": limits.network,
        "seccomp": limits.seccomp,
        "audit": limits.audit_hook,
        "landlock": limits.landlock,
        "max_output": limits.max_output_bytes,
        "max_value": limits.max_output_bytes,
        "max_figures": limits.max_figures,
        "max_figure_bytes": limits.max_figure_bytes,
        "max_figure_side": limits.max_figure_side,
    }


class Child:
    """A child process in one of three states: starting, ready, loaded (then dead)."""

    def __init__(
        self, plan: _launch.Plan, limits: Limits, reservation: Reservation | None = None
    ) -> None:
        """Start the process; `reservation` (its memory in the budget) is the child's from
        now on: released when it is reaped, or here when it cannot start."""
        try:
            self._start(plan, limits, reservation)
        except BaseException:
            if reservation is not None:
                reservation.release()
            raise

    def _start(self, plan: _launch.Plan, limits: Limits, reservation: Reservation | None) -> None:
        self.plan = plan
        self.limits = limits
        self.uid = _uids.unused_uid() if plan.drop_uid else None
        try:
            self.workdir = tempfile.mkdtemp(prefix="tablequest-sandbox-")
        except OSError as exc:
            raise SandboxUnavailable(f"cannot create the sandbox directory: {exc}") from exc
        self.session_dir = os.path.join(self.workdir, "work")
        self.log_path = os.path.join(self.workdir, "stderr.log")
        self.facts: dict[str, Any] = {}
        self.cells = 0  # run requests sent (or attempted)
        self.state = "dead"
        try:
            self.proc = self._spawn()
        except BaseException:
            remove_tree(self.workdir)
            raise
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        self._finalizer = weakref.finalize(self, _reap, self.proc, self.workdir, reservation)
        self.state = "starting"

    def _spawn(self) -> subprocess.Popen[bytes]:
        plan = self.plan
        if plan.mode != "bwrap":
            os.mkdir(self.session_dir, 0o700)
            if self.uid is not None:  # the child reaches its session as its own uid
                os.chmod(self.workdir, 0o711)
                os.chown(self.session_dir, self.uid, self.uid)
        config = _config(plan, self.limits, self.session_dir, self.uid)
        launcher = _launch.launcher_argv(
            plan, session=self.session_dir, disk_bytes=self.limits.disk_mb << 20
        )
        argv = [*launcher, plan.interpreter.executable, "-I", "-B", _launch.CHILD_SCRIPT]
        argv.append(json.dumps(config))
        with open(self.log_path, "wb") as log:
            try:
                return subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=_launch.child_env(self.session_dir),
                    cwd=self.workdir,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SandboxUnavailable(f"cannot start the sandbox ({argv[0]}): {exc}") from exc

    @property
    def alive(self) -> bool:
        """The process is still running."""
        return self.state != "dead" and self.proc.poll() is None

    def stderr_tail(self, limit: int = 1500) -> str:
        """The end of the child's stderr (startup diagnostics)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self.log_path) - limit))
                return fh.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def _failed(self, what: str) -> SandboxUnavailable:
        self.proc.poll()
        tail = self.stderr_tail() or "no output"
        self.kill()
        return SandboxUnavailable(
            f"sandbox child {what} ({self.plan.mode}, exit {self.proc.returncode}): {tail}"
        )

    def wait_ready(self, timeout: float) -> None:
        """Block until the child has locked itself down and imported its libraries."""
        if self.state != "starting":
            return
        try:
            raw = _protocol.read_message(
                self._out, deadline=time.monotonic() + timeout, max_bytes=256
            )
            ok = _protocol.decode_object(raw).get("op") == "ready"
        except (_protocol.ChannelClosed, _protocol.ProtocolViolation):
            ok = False
        except _protocol.ChannelTimeout:
            self.kill()
            raise SandboxUnavailable(
                f"sandbox child did not start within {timeout:g} s ({self.plan.mode})"
            ) from None
        if not ok:
            raise self._failed("failed to start")
        self.state = "ready"

    def load(self, frames: list[tuple[str, bytes]], timeout: float) -> dict[str, Any]:
        """Send the frames, let the child finish its lockdown, return its measured facts."""
        self.wait_ready(timeout)
        request_id = secrets.randbits(62)
        header = {"op": "load", "id": request_id, "frames": [name for name, _ in frames]}
        deadline = time.monotonic() + timeout
        reply: dict[str, Any] = {}
        try:
            _protocol.write_all(
                self._in, _protocol.frame(json.dumps(header).encode()), deadline=deadline
            )
            for _, data in frames:
                _protocol.write_all(self._in, _protocol.frame(data), deadline=deadline)
            raw = _protocol.read_message(self._out, deadline=deadline, max_bytes=1 << 20)
            reply = _protocol.decode_object(raw)
            _protocol.check_id(reply, request_id)
        except (_protocol.ChannelClosed, _protocol.ChannelTimeout, _protocol.ProtocolViolation):
            reply = {}
        facts = reply.get("facts")
        if reply.get("op") != "loaded" or not isinstance(facts, dict):
            raise self._failed("failed while loading the frames")
        self.facts = facts
        self.state = "loaded"
        _signal_group(self.proc, signal.SIGSTOP)
        return facts

    def run(self, code: str, timeout: float) -> _protocol.Reply:
        """Run one cell; channel exceptions mean the child must be killed."""
        deadline = time.monotonic() + timeout + HARD_KILL_GRACE
        request_id = secrets.randbits(62)
        request = {"op": "run", "id": request_id, "code": code, "timeout": timeout}
        self.cells += 1
        _protocol.expect_silence(self._out)
        _signal_group(self.proc, signal.SIGCONT)
        _protocol.write_all(
            self._in, _protocol.frame(json.dumps(request).encode()), deadline=deadline
        )
        raw = _protocol.read_message(
            self._out, deadline=deadline, max_bytes=self.limits.message_cap()
        )
        _signal_group(self.proc, signal.SIGSTOP)
        self._check_file_count()
        lim = self.limits
        return _protocol.parse_reply(
            raw,
            request_id=request_id,
            max_output=lim.max_output_bytes,
            max_value=lim.max_output_bytes,
            figures=lim.figure_limits(),
        )

    def _check_file_count(self) -> None:
        """Without a tmpfs (mode "off") the session is on the host's disk: cap it here.

        The child is stopped while we count, and counting stops past the file cap.
        """
        if session_on_tmpfs(self.plan):
            return
        cap, disk = self.limits.max_files, self.limits.disk_mb
        files, size = measure(self.session_dir, limit=cap)
        if files > cap:
            raise LimitExceeded(f"the session created more than {cap} files")
        if size > disk << 20:
            raise LimitExceeded(f"the session's files take more than {disk} MB")

    def death_reason(self) -> str:
        """Why the process ended, from its exit status (call after it died)."""
        try:
            rc = self.proc.wait(timeout=HARD_KILL_GRACE)
        except subprocess.TimeoutExpired:
            return "the sandbox process stopped answering"
        sig = self.exit_signal()
        if sig == signal.SIGXCPU:
            return "the session's CPU-time limit was exceeded"
        if sig == signal.SIGKILL:
            return "the sandbox process was killed (SIGKILL; memory or process limits?)"
        if sig:
            return f"the sandbox process died from signal {sig}"
        return f"the sandbox process exited with status {rc}"

    def exit_signal(self) -> int:
        """The signal the process died of (0: none, or still running)."""
        try:
            rc = self.proc.wait(timeout=HARD_KILL_GRACE)
        except subprocess.TimeoutExpired:
            return 0
        return -rc if rc < 0 else rc - 128 if rc > 128 else 0

    def kill(self) -> None:
        """Kill the process group and clean up (idempotent)."""
        self.state = "dead"
        self._finalizer()
