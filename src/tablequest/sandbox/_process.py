"""One sandbox child process as seen from the host: spawn, wait ready, load, run, kill."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from typing import Any

from . import _launch, _protocol
from ._types import SandboxUnavailable

#: seconds between the soft timeout (TimeoutError inside the child) and the process-group kill
HARD_KILL_GRACE = 0.5


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

    def message_cap(self) -> int:
        """Largest reply the host accepts (JSON may escape a character into 12 bytes)."""
        text = 12 * (2 * self.max_output_bytes + 6000)
        return text + self.max_figures * (self.max_figure_bytes * 4 // 3 + 16) + 4096


def _reap(proc: subprocess.Popen[bytes], workdir: str) -> None:
    """Kill the child's process group, wait for it and remove its directory."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
    _rmtree(workdir)


def _rmtree(path: str) -> None:
    """Remove `path` even if the child made parts of it unreadable."""
    if not os.path.isdir(path):
        return
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, d), 0o700, follow_symlinks=False)
    shutil.rmtree(path, ignore_errors=True)


class Child:
    """A child process in one of three states: starting, ready, loaded (then dead)."""

    def __init__(self, plan: _launch.Plan, limits: Limits) -> None:
        self.plan = plan
        self.limits = limits
        self.workdir = tempfile.mkdtemp(prefix="tablequest-sandbox-")
        self.session_dir = os.path.join(self.workdir, "work")
        self.log_path = os.path.join(self.workdir, "stderr.log")
        self.facts: dict[str, Any] = {}
        if plan.mode != "bwrap":
            os.mkdir(self.session_dir, 0o700)
        if plan.popen_user is not None:
            os.chmod(self.workdir, 0o711)
            os.chown(self.session_dir, plan.popen_user, plan.popen_user)
        config = {
            "drop_uid": plan.child_uid,
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
        }
        launcher = _launch.launcher_argv(
            plan, session=self.session_dir, disk_bytes=limits.disk_mb << 20
        )
        argv = [*launcher, plan.interpreter.executable, "-I", "-B", _launch.CHILD_SCRIPT]
        argv.append(json.dumps(config))
        kwargs: dict[str, Any] = {}
        if plan.popen_user is not None:
            kwargs.update(user=plan.popen_user, group=plan.popen_user, extra_groups=[])
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=_launch.child_env(self.session_dir),
                    cwd=self.workdir if plan.mode == "bwrap" else self.session_dir,
                    start_new_session=True,
                    close_fds=True,
                    **kwargs,
                )
            except OSError as exc:
                _rmtree(self.workdir)
                raise SandboxUnavailable(f"cannot start the sandbox ({argv[0]}): {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self._finalizer = weakref.finalize(self, _reap, self.proc, self.workdir)
        self.state = "starting"

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

    def wait_ready(self, timeout: float) -> None:
        """Block until the child has imported its libraries."""
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
            self.proc.poll()
            tail = self.stderr_tail() or "no output"
            self.kill()
            raise SandboxUnavailable(
                f"sandbox child failed to start ({self.plan.mode}, exit {self.proc.returncode}): "
                f"{tail}"
            )
        self.state = "ready"

    def load(self, frames: list[tuple[str, bytes]], timeout: float) -> dict[str, Any]:
        """Send the frames, let the child lock itself down, return its measured facts."""
        self.wait_ready(timeout)
        header = json.dumps({"op": "load", "frames": [name for name, _ in frames]})
        try:
            _protocol.write_all(self._in, _protocol.frame(header.encode()))
            for _, data in frames:
                _protocol.write_all(self._in, _protocol.frame(data))
            raw = _protocol.read_message(
                self._out, deadline=time.monotonic() + timeout, max_bytes=1 << 20
            )
            reply = _protocol.decode_object(raw)
        except (_protocol.ChannelClosed, _protocol.ChannelTimeout, _protocol.ProtocolViolation):
            reply = {}
        facts = reply.get("facts")
        if reply.get("op") != "loaded" or not isinstance(facts, dict):
            tail = self.stderr_tail() or "no output"
            self.kill()
            raise SandboxUnavailable(f"sandbox child failed while loading the frames: {tail}")
        self.facts = facts
        self.state = "loaded"
        return facts

    def run(self, code: str, timeout: float) -> _protocol.Reply:
        """Run one cell; channel exceptions mean the child must be killed."""
        request = json.dumps({"op": "run", "code": code, "timeout": timeout}).encode()
        _protocol.write_all(self._in, _protocol.frame(request))
        raw = _protocol.read_message(
            self._out,
            deadline=time.monotonic() + timeout + HARD_KILL_GRACE,
            max_bytes=self.limits.message_cap(),
        )
        lim = self.limits
        return _protocol.parse_reply(
            raw,
            max_output=lim.max_output_bytes,
            max_value=lim.max_output_bytes,
            max_figures=lim.max_figures,
            max_figure_bytes=lim.max_figure_bytes,
        )

    def death_reason(self) -> str:
        """Why the process ended, from its exit status (call after it died)."""
        try:
            rc = self.proc.wait(timeout=HARD_KILL_GRACE)
        except subprocess.TimeoutExpired:
            return "the sandbox process stopped answering"
        sig = -rc if rc < 0 else rc - 128 if rc > 128 else 0
        if sig == signal.SIGXCPU:
            return "the session's CPU-time limit was exceeded"
        if sig == signal.SIGKILL:
            return "the sandbox process was killed (SIGKILL; memory or process limits?)"
        if sig:
            return f"the sandbox process died from signal {sig}"
        return f"the sandbox process exited with status {rc}"

    def kill(self) -> None:
        """Kill the process group and clean up (idempotent)."""
        self.state = "dead"
        self._finalizer()
