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
- `TABLEQUEST_SANDBOX_MEMORY_BUDGET` (MB) replaces the default; it is read once, when the first
  `Sandbox` of the process asks for the shared budget. `Sandbox(memory_budget=MemoryBudget(..))`
  gives a sandbox a budget of its own instead;
- waiting is not first-come-first-served: a release wakes every waiter and those that fit go.
  Children of one size (the usual case) cannot starve each other for long;
- a reservation is released exactly once (`Reservation.release` is idempotent), from the
  child's reaping (`_process._reap`), which every kill path and garbage collection reach.
"""

from __future__ import annotations

import os
import threading
import time

from tablequest.waits import waiting

from ._types import InvalidArgument, SandboxBusy

ENV_VAR = "TABLEQUEST_SANDBOX_MEMORY_BUDGET"

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


def default_total_mb() -> tuple[int, str]:
    """The shared budget's size and where it came from (the `sandbox.memory_budget_mb`
    setting's variable, else half the RAM)."""
    from tablequest.settings import SandboxSettings, SettingsError, from_env

    try:
        value = from_env(SandboxSettings).memory_budget_mb
    except SettingsError as exc:
        raise InvalidArgument(str(exc)) from None
    if value is not None:
        return value, f"{ENV_VAR}={value}"
    physical = physical_memory_mb()
    if physical is None:
        return 4 * ONE_DEFAULT_CHILD_MB, "default: four default children (physical memory unknown)"
    half = max(physical // 2, ONE_DEFAULT_CHILD_MB)
    return half, f"default: half of {physical} MB of physical memory"


_shared: MemoryBudget | None = None
_shared_lock = threading.Lock()


def shared_budget() -> MemoryBudget:
    """The process-wide budget every `Sandbox` uses unless given its own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            total, source = default_total_mb()
            _shared = MemoryBudget(total, source=source)
        return _shared
