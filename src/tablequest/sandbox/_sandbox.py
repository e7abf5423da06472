"""`Sandbox` (configuration + at most one pre-started child) and `Session` (one stateful child).

Choices (issue 25): a session takes the pre-started child when there is one and none is
started in its place — a spare that nobody claims holds memory the next ask may need — so an
ask starts one child, and a second only when its first dies (a restart). Every child reserves
`memory_mb` (+ `disk_mb` on a tmpfs) from a `MemoryBudget` before it starts (`_budget`); a
child that does not fit waits up to `budget_timeout` seconds, then `SandboxBusy` is raised.
The pre-start at construction never waits: without room now, the first session starts its own.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from tablequest.waits import waiting

from . import _frames, _launch, _policy, _protocol
from ._budget import SETTING as BUDGET_SETTING
from ._budget import MemoryBudget, shared_budget
from ._layers import build_layers
from ._process import Child, LimitExceeded, Limits, session_on_tmpfs
from ._types import (
    ExecResult,
    InvalidArgument,
    Layer,
    SandboxBusy,
    SandboxError,
    SandboxUnavailable,
)

if TYPE_CHECKING:
    import pandas as pd

    from tablequest.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


def _api(method: Callable[P, R]) -> Callable[P, R]:
    """Only `SandboxError` (and subclasses) leaves the sandbox API: anything else is wrapped."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"sandbox internal error: {type(exc).__name__}: {exc}") from exc

    return wrapper


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidArgument(f"{name} must be a positive number, got {value!r}")


def _check_arguments(sizes: Mapping[str, float], use_namespaces: str) -> None:
    """Every size is a positive number and the mode is one of the four."""
    for name, value in sizes.items():
        _positive(name, value)
    if use_namespaces not in ("auto", "bwrap", "unshare", "off"):
        raise InvalidArgument(
            f"use_namespaces must be 'auto', 'bwrap', 'unshare' or 'off', got {use_namespaces!r}"
        )


class Sandbox:
    """Runs generated Python over DataFrames out of process, contained and resource-limited.

    Example:
        >>> with Sandbox() as sandbox, sandbox.session({"sales": df}) as s:  # doctest: +SKIP
        ...     s.run("sales.groupby('region')['amount'].sum()").value

    Args:
        cpu_seconds: CPU time per session (all runs together); SIGXCPU kills the child.
        memory_mb: address-space limit of the child (imports take about 600 MB of it).
        file_size_mb: largest file the child may write.
        disk_mb: size of the session directory when it is a tmpfs (bubblewrap only).
        max_open_files: open file descriptors in the child.
        max_output_bytes: cap on stdout and on the value preview (characters).
        max_figures: figures returned per run; max_figure_bytes caps each PNG.
        network: allow AF_INET/AF_INET6 sockets and keep the host network (off by default).
        use_namespaces: "auto" (bubblewrap; with degraded isolation, else unshare, else
            none), or force one; a forced mode that does not work raises SandboxUnavailable.
        isolation: "strict" refuses to run without bubblewrap (SandboxUnavailable with a
            one-line hint); "degraded" accepts "unshare" and "off". Default: the
            TABLEQUEST_SANDBOX variable, then `[sandbox] isolation` in tablequest.toml,
            then "strict" (the `sandbox.isolation` setting, `tablequest.settings`).
        isolation_source: Where a given `isolation` came from, for messages (an entry point
            passes the loaded setting's source; default "argument").
        seccomp / audit_hook / landlock: the in-child layers; turn them off only to test the
            other layers.
        python: interpreter for the child (default: this one; it needs pandas & co.).
        prewarm: start one child now, so the first `session()` only hands it the frames; it
            is skipped when the memory budget has no room now. No spare is started after a
            session claims it (`warm()` starts one on demand).
        startup_timeout: seconds a child may take to import its libraries.
        max_threads: threads the child may run (RLIMIT_NPROC, where the child has a uid or
            user namespace of its own).
        max_files: files and directories the session tmpfs may hold (nr_inodes).
        max_figure_side: widest/tallest figure returned, in pixels.
        memory_budget: the budget this sandbox's children reserve `memory_mb` (+ `disk_mb`
            on a tmpfs) from (default: the process-wide one, TABLEQUEST_SANDBOX_MEMORY_BUDGET
            MB or half the physical memory; `from_settings` passes the loaded setting's).
        budget_timeout: seconds a new child waits for room in the budget before
            `SandboxBusy` is raised.
    """

    @classmethod
    def from_settings(cls, settings: Settings | None) -> Sandbox:
        """A sandbox with the loaded ``[sandbox]`` section: its isolation (and where it came
        from) and the process-wide memory budget of its ``memory_budget_mb`` (`_budget`),
        never the environment's (None: its own resolution, as `Sandbox()`). What the methods
        and MCP's ``run_pandas`` use; on a Ray worker, the settings are the job's."""
        if settings is None:
            return cls()
        source = settings.source("sandbox.isolation").removeprefix("$")
        budget = shared_budget(settings.sandbox, settings.source(BUDGET_SETTING))
        return cls(
            isolation=settings.sandbox.isolation, isolation_source=source, memory_budget=budget
        )

    @_api
    def __init__(
        self,
        *,
        cpu_seconds: int = 60,
        memory_mb: int = 2048,
        file_size_mb: int = 64,
        disk_mb: int = 256,
        max_open_files: int = 64,
        max_output_bytes: int = 100_000,
        max_figures: int = 8,
        max_figure_bytes: int = 2_000_000,
        network: bool = False,
        use_namespaces: _launch.Mode = "auto",
        isolation: _policy.Isolation | None = None,
        isolation_source: str | None = None,
        seccomp: bool = True,
        audit_hook: bool = True,
        landlock: bool = True,
        python: str | None = None,
        prewarm: bool = True,
        startup_timeout: float = 60.0,
        max_threads: int = 64,
        max_files: int = 10_000,
        max_figure_side: int = 4096,
        memory_budget: MemoryBudget | None = None,
        budget_timeout: float = 60.0,
    ) -> None:
        sizes = {
            "cpu_seconds": cpu_seconds,
            "memory_mb": memory_mb,
            "file_size_mb": file_size_mb,
            "disk_mb": disk_mb,
            "max_open_files": max_open_files,
            "max_output_bytes": max_output_bytes,
            "max_figures": max_figures,
            "max_figure_bytes": max_figure_bytes,
            "max_threads": max_threads,
            "max_files": max_files,
            "max_figure_side": max_figure_side,
        }
        _check_arguments(
            {**sizes, "startup_timeout": startup_timeout, "budget_timeout": budget_timeout},
            use_namespaces,
        )
        self.isolation, self.isolation_source = _policy.resolve(isolation)
        if isolation is not None and isolation_source:
            self.isolation_source = isolation_source
        self.limits = Limits(
            **{name: int(value) for name, value in sizes.items()},
            network=bool(network),
            seccomp=bool(seccomp),
            audit_hook=bool(audit_hook),
            landlock=bool(landlock),
        )
        self.plan = _launch.plan(
            use_namespaces,
            python=python,
            network=bool(network),
            degraded=self.isolation == "degraded",
        )
        self.prewarm = prewarm
        self.startup_timeout = float(startup_timeout)
        self.budget = _budget_of(memory_budget)
        self.budget_timeout = float(budget_timeout)
        tmpfs_mb = self.limits.disk_mb if session_on_tmpfs(self.plan) else 0
        self.child_mb = self.limits.memory_mb + tmpfs_mb
        self.budget.check_fits(self.child_mb)  # a child that never fits: say so now
        self._lock = threading.Lock()
        self._spare: Child | None = None
        self._closed = False
        if prewarm:
            # no room now: the first session starts (and waits for) its child itself
            with contextlib.suppress(SandboxBusy):
                self._spare = self._new_child(wait=0.0)

    @property
    def mode(self) -> str:
        """The isolation mode in use: "bwrap", "unshare" or "off"."""
        return self.plan.mode

    @_api
    def session(self, frames: Mapping[str, pd.DataFrame] | None = None) -> Session:
        """Start a session with `frames` bound to their names in the child's namespace."""
        if self._closed:
            raise SandboxError("this Sandbox is closed")
        encoded, notes = _frames.encode_frames(frames or {})
        return Session(self, encoded, notes)

    @_api
    def warm(self) -> None:
        """Block until a pre-started child is ready (starting one if needed; it waits for
        room in the memory budget like any child)."""
        if self._closed:
            raise SandboxError("this Sandbox is closed")
        with self._lock:
            spare = self._spare if self._spare is not None and self._spare.alive else None
        if spare is None:
            spare = self._new_child(wait=self.budget_timeout)
            with self._lock:
                old, self._spare = self._spare, spare
            if old is not None:
                old.kill()
        spare.wait_ready(self.startup_timeout)

    @_api
    def layers(self) -> list[Layer]:
        """The isolation layers as measured in a real child on this machine."""
        with self.session() as s:
            return s.layers

    @_api
    def describe(self) -> str:
        """A human-readable report: mode, degradations and every layer."""
        lines = [f"sandbox mode: {self.mode}"]
        if self.plan.degraded:
            lines[0] += f" (degraded isolation, opted in by {self.isolation_source})"
        lines += [f"  degraded: {note}" for note in self.plan.notes]
        lines += [f"  {layer}" for layer in self.layers()]
        return "\n".join(lines)

    def _new_child(self, wait: float) -> Child:
        """Start a child once the budget has room for it (SandboxBusy after `wait` seconds)."""
        reservation = self.budget.reserve(self.child_mb, timeout=wait)
        return Child(self.plan, self.limits, reservation)

    def _claim(self, frames: list[tuple[str, bytes]]) -> Child:
        """A loaded child: the spare when there is one, else a new one (no spare in its
        place: one that sits unused holds memory, see the module docstring)."""
        with self._lock:
            child, self._spare = self._spare, None
        for attempt in range(2):
            if child is None or not child.alive:
                if child is not None:  # died while idle: reap it and free its memory now
                    child.kill()
                child = self._new_child(wait=self.budget_timeout)
            try:
                child.load(frames, self.startup_timeout)
                break
            except SandboxUnavailable:
                if attempt == 1 or child.state != "dead":
                    raise
                child = None
        assert child is not None
        return child

    @_api
    def close(self) -> None:
        """Kill the pre-started child; sessions already open keep working until closed."""
        self._closed = True
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.kill()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _budget_of(budget: object) -> MemoryBudget:
    """`budget`, or the process-wide one when None."""
    if budget is None:
        return shared_budget()
    if not isinstance(budget, MemoryBudget):
        raise InvalidArgument(f"memory_budget must be a MemoryBudget, not {type(budget).__name__}")
    return budget


class Session:
    """One child with persistent state; `run` executes cells in it. Not thread-safe."""

    def __init__(self, sandbox: Sandbox, frames: list[tuple[str, bytes]], notes: list[str]) -> None:
        self._sandbox = sandbox
        self._frames = frames
        self.notes = notes
        self.restarts = 0
        self._closed = False
        self._child: Child | None = sandbox._claim(frames)
        self._facts = self._child.facts

    @property
    def mode(self) -> str:
        """The isolation mode this session's code runs in."""
        return self._sandbox.mode

    @property
    @_api
    def layers(self) -> list[Layer]:
        """Isolation layers measured in this session's child."""
        rows = build_layers(self._sandbox.plan, self._sandbox.limits, self._facts)
        return [Layer(name, active, detail) for name, active, detail in rows]

    @_api
    def run(self, code: str, timeout: float = 10.0) -> ExecResult:
        """Run `code`; the last expression's value comes back as a preview.

        A timeout, a crash or a malformed, stale or unsolicited reply kills the child; the
        next `run` starts a fresh one with the same frames (earlier variables are gone, the
        error says so). Raises only `SandboxError` (closed session, bad arguments, a child
        that cannot be restarted).
        """
        if self._closed:
            raise SandboxError("this session is closed")
        if not isinstance(code, str):
            raise InvalidArgument(f"code must be str, not {type(code).__name__}")
        _positive("timeout", timeout)
        with waiting():  # the host may let other threads run meanwhile (tablequest.waits)
            return self._run(code, float(timeout))

    def _run(self, code: str, timeout: float) -> ExecResult:
        """One cell. When a child's first cell ends with the child SIGKILLed, the cell is run
        once more in a new child: a pre-started child can be killed while idle (seen under
        heavy load on CI, cause not pinned down; the kernel's OOM killer does the same), and
        a first cell's effects stay inside its child (its own directory, no earlier state),
        so the retry is exact; a cell that kills its child costs one more try."""
        result = self._attempt(code, timeout, retry=True)
        if result is None:
            result = self._attempt(code, timeout, retry=False)
        assert result is not None  # without `retry` an attempt always ends with a result
        return result

    def _attempt(self, code: str, timeout: float, *, retry: bool) -> ExecResult | None:
        """Run `code` in the session's child (claiming one first); None: retry (above)."""
        if self._child is None:
            self._child = self._sandbox._claim(self._frames)
            self._facts = self._child.facts
            self.restarts += 1
        child = self._child
        start = time.monotonic()
        try:
            reply = child.run(code, timeout)
        except _protocol.ChannelTimeout:
            error = f"TimeoutError: the cell did not finish within {timeout:g} s"
        except _protocol.ChannelClosed:
            if retry and child.cells == 1 and child.exit_signal() == signal.SIGKILL:
                child.kill()
                self._child = None
                self.restarts -= 1  # the session's state was not lost: not a restart
                return None
            error = f"SandboxError: {child.death_reason()}"
        except _protocol.ProtocolViolation as exc:
            error = f"SandboxError: invalid reply from the sandbox ({exc})"
        except LimitExceeded as exc:
            error = f"SandboxError: {exc}"
        except Exception as exc:  # whatever went wrong, the child's state is unknown now
            error = f"SandboxError: sandbox internal error ({type(exc).__name__}: {exc})"
        else:
            return ExecResult(
                ok=reply.ok,
                stdout=reply.stdout,
                value=reply.value,
                error=reply.error,
                figures=reply.figures,
                seconds=time.monotonic() - start,
                mode=self.mode,
                lineage=reply.lineage,
            )
        child.kill()
        self._child = None
        error += "; the sandbox was restarted: variables from earlier runs are gone"
        return ExecResult(ok=False, error=error, seconds=time.monotonic() - start, mode=self.mode)

    @_api
    def close(self) -> None:
        """Kill the child and remove its directory."""
        self._closed = True
        if self._child is not None:
            self._child.kill()
            self._child = None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
