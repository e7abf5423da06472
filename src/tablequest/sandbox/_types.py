"""Result, layer and error types of the sandbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablequest.errors import RunError, UsageError


class SandboxError(RunError, RuntimeError):
    """A sandbox operation failed on the host side (closed session, bad frames, ...).

    Every exception that leaves the sandbox API is a `SandboxError` (or a subclass).
    """


class SandboxUnavailable(SandboxError):
    """The sandbox cannot start here (missing interpreter, refused isolation mode, ...)."""


class SandboxBusy(SandboxUnavailable):
    """No child can start now: the sandbox memory budget stays in use (see `MemoryBudget`)."""


class InvalidArgument(UsageError, SandboxError, ValueError, TypeError):
    """A caller passed an argument of the wrong type or value.

    Also a ValueError and a TypeError, which is what these checks raised before.
    """


@dataclass(frozen=True)
class ExecResult:
    """What one `Session.run` produced. Everything in it came from untrusted code.

    Attributes:
        ok: the cell finished without an exception.
        stdout: printed output (stdout and stderr), capped.
        value: preview of the last expression's value, or None.
        error: `"KeyError: 'price'"`-style message when `ok` is False.
        figures: matplotlib figures the cell left open, as PNG bytes (verified images).
        seconds: wall-clock time of the run as seen by the host.
        mode: the isolation mode the code ran in: "bwrap", or "unshare"/"off" when the user
            opted into degraded isolation ("" when no child was involved).
        lineage: which table cells the last expression's value and the printed values were
            computed from (`_lineage`: ``{"value": item | None, "printed": [item, …]}``,
            each item ``{"text", "recipe", "rows", "cut"}``), None when the child sent none.
            Untrusted like the rest: the host checks every cell against its tables.
    """

    ok: bool
    stdout: str = ""
    value: str | None = None
    error: str | None = None
    figures: list[bytes] = field(default_factory=list)
    seconds: float = 0.0
    mode: str = ""
    lineage: dict[str, Any] | None = None

    @property
    def degraded(self) -> bool:
        """The code ran without bubblewrap (the user opted into weaker isolation)."""
        return self.mode in ("unshare", "off")


@dataclass(frozen=True)
class Layer:
    """One isolation layer and whether it is in force, as measured in a real child."""

    name: str
    active: bool
    detail: str

    def __str__(self) -> str:
        return f"[{'x' if self.active else ' '}] {self.name}: {self.detail}"
