"""A memory budget shared by the sandbox children of one process (issue 25).

Every child reserves its worst case before it is started and gives it back when it is reaped,
so concurrent asks (`tablequest serve`, threads) cannot start more children than the machine
holds; a child that does not fit waits, then is refused with `SandboxBusy`.

Choices (ours; no paper fixes them):
- a child's worst case is its address-space limit (`memory_mb`, RLIMIT_AS) plus, where its
  session directory is a tmpfs (bubblewrap), `disk_mb`: tmpfs pages are memory too. RLIMIT_AS
  over-counts what a child touches (its imports map about 600 MB), which errs on the safe side;
- the default total is half the machine's physical memory (`SC_PHYS_PAGES` × `SC_PAGE_SIZE`):
  the host process, its tables and the model client need the other half. It is never below
  one default child (2048 + 256 MB), so a small machine still runs one sandbox at a time;
- the size is the ``sandbox.memory_budget_mb`` setting (`tablequest.settings`; its variable is
  `TABLEQUEST_SANDBOX_MEMORY_BUDGET`), taken from the `SandboxSettings` the entry point loaded
  and passed down (`Sandbox.from_settings`; a Ray worker gets them in its job), so a worker
  never takes it from its own environment. Only a `Sandbox()` built without settings (a
  library call) reads the environment (`from_env`). `Sandbox(memory_budget=MemoryBudget(..))`
  gives a sandbox a budget of its own instead;
- one shared budget per size and process (`shared_budget`): a process serves one load of
  settings (the CLI's, the server's, a Ray job's workers), so in practice one; a library caller
  mixing sizes gets one pool per size, each bounded by its own size;
- failing closed: no setting means the default above, never "no budget"; a value that is not a
  positive number of MB is an `InvalidArgument` (a `SandboxError`) and no child starts;
- waiting is not first-come-first-served: a release wakes every waiter and those that fit go.
  Children of one size (the usual case) cannot starve each other for long;
- a reservation is released exactly once (`Reservation.release` is idempotent), from the
  child's reaping (`_process._reap`), which every kill path and garbage collection reach.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from tablequest.waits import waiting

from ._types import InvalidArgument, SandboxBusy

if TYPE_CHECKING:
    from tablequest.settings import SandboxSettings

ENV_VAR = "TABLEQUEST_SANDBOX_MEMORY_BUDGET"
SETTING = "sandbox.memory_budget_mb"

#: one default child: memory_mb 2048 plus a 256 MB tmpfs (the floor of the default budget)
ONE_DEFAULT_CHILD_MB = 2048 + 256

_HOW_TO_RAISE = (
    f"raise it with {ENV_VAR}=<MB> or Sandbox(memory_budget=MemoryBudget(<MB>)), "
    "or lower memory_mb/disk_mb"
)


class Reservation:
    """Memory one child holds in a budget until `release()` (idempotent, thread-safe)."""

    def __init__(self, budget: MemoryBudget, mb: int) -> None:
        self.budget = budget
        self.mb = mb
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        """Give the memory back (a second call does nothing)."""
        self.budget._release(self)


class MemoryBudget:
    """Megabytes that sandbox children may reserve together; see the module docstring.

    Example:
        >>> budget = MemoryBudget(4096)
        >>> r = budget.reserve(2304, timeout=0)
        >>> budget.in_use_mb, budget.holders
        (2304, 1)
        >>> r.release(); budget.in_use_mb
        0
    """

    def __init__(self, total_mb: int, *, source: str = "MemoryBudget(total_mb)") -> None:
        if isinstance(total_mb, bool) or not isinstance(total_mb, int) or total_mb <= 0:
            raise InvalidArgument(f"{source} must be a positive number of MB, got {total_mb!r}")
        self.total_mb = total_mb
        self.source = source
        self._in_use = 0
        self._holders = 0
        self._waiting = 0
        self._cond = threading.Condition()

    @property
    def in_use_mb(self) -> int:
        with self._cond:
            return self._in_use

    @property
    def holders(self) -> int:
        """Children holding a reservation now."""
        with self._cond:
            return self._holders

    @property
    def waiting(self) -> int:
        """Children waiting for room now."""
        with self._cond:
            return self._waiting

    def check_fits(self, mb: int) -> None:
        """Raise SandboxBusy when one child of `mb` exceeds the whole budget."""
        if mb > self.total_mb:
            raise SandboxBusy(
                f"a sandbox child needs {mb} MB but the sandbox memory budget is "
                f"{self.total_mb} MB ({self.source}); {_HOW_TO_RAISE}"
            )

    def reserve(self, mb: int, timeout: float) -> Reservation:
        """Reserve `mb`, waiting up to `timeout` seconds for others to release.

        Raises SandboxBusy when `mb` exceeds the whole budget (at once) or is still not free
        after `timeout` seconds; the message names the budget and how to raise it.
        """
        self.check_fits(mb)
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._in_use + mb > self.total_mb and timeout > 0:
                self._waiting += 1
                try:
                    with waiting():  # the host may let other threads run meanwhile
                        self._cond.wait_for(
                            lambda: self._in_use + mb <= self.total_mb,
                            max(0.0, deadline - time.monotonic()),
                        )
                finally:
                    self._waiting -= 1
            if self._in_use + mb > self.total_mb:
                raise SandboxBusy(
                    f"the sandbox memory budget is in use: {self._holders} running sandbox "
                    f"child(ren) hold {self._in_use} of {self.total_mb} MB ({self.source}) and "
                    f"this one needs {mb} MB; waited {timeout:g} s. Try again later, or "
                    f"{_HOW_TO_RAISE}"
                )
            self._in_use += mb
            self._holders += 1
        return Reservation(self, mb)

    def _release(self, reservation: Reservation) -> None:
        with self._cond:
            if reservation._released:
                return
            reservation._released = True
            self._in_use -= reservation.mb
            self._holders -= 1
            self._cond.notify_all()


def physical_memory_mb() -> int | None:
    """The machine's physical memory in MB (None where the platform does not say)."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None
    return pages * size >> 20 if pages > 0 and size > 0 else None


def _half_the_memory() -> tuple[int, str]:
    physical = physical_memory_mb()
    if physical is None:
        return 4 * ONE_DEFAULT_CHILD_MB, "default: four default children (physical memory unknown)"
    half = max(physical // 2, ONE_DEFAULT_CHILD_MB)
    return half, f"default: half of {physical} MB of physical memory"


def default_total_mb(settings: SandboxSettings | None = None, where: str = "") -> tuple[int, str]:
    """The shared budget's size and where it came from: `settings.memory_budget_mb` (the
    loaded setting; `where`: its source, ``Settings.source``), else half the RAM. Without
    `settings` (a library call that loaded none): the setting's variable, else half the RAM.

    Raises:
        InvalidArgument: the size is not a positive number of MB (never a budget of none).
    """
    from tablequest.settings import SandboxSettings, SettingsError, from_env

    if settings is None:
        try:
            settings = from_env(SandboxSettings)
        except SettingsError as exc:
            raise InvalidArgument(str(exc)) from None
        where = "$" + ENV_VAR
    value = settings.memory_budget_mb
    if value is None:
        return _half_the_memory()
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidArgument(f"{SETTING} must be a positive number of MB, got {value!r}")
    if where == "$" + ENV_VAR:
        return value, f"{ENV_VAR}={value}"
    return value, f"{SETTING}={value}" + (f" ({where})" if where else "")


_shared: dict[int, MemoryBudget] = {}
_shared_lock = threading.Lock()


def shared_budget(settings: SandboxSettings | None = None, where: str = "") -> MemoryBudget:
    """The process-wide budget of the size `settings` say (`default_total_mb`; None: the
    environment's, for a `Sandbox()` built without settings). One per size and process."""
    total, source = default_total_mb(settings, where)
    with _shared_lock:
        if total not in _shared:
            _shared[total] = MemoryBudget(total, source=source)
        return _shared[total]
