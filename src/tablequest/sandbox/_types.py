"""Result, layer and error types of the sandbox."""

from __future__ import annotations

from dataclasses import dataclass, field


class SandboxError(RuntimeError):
    """A sandbox operation failed on the host side (closed session, bad frames, ...)."""


class SandboxUnavailable(SandboxError):
    """The sandbox cannot start here (missing interpreter, refused isolation mode, ...)."""


@dataclass(frozen=True)
class ExecResult:
    """What one `Session.run` produced. Everything in it came from untrusted code.

    Attributes:
        ok: the cell finished without an exception.
        stdout: printed output (stdout and stderr), capped.
        value: preview of the last expression's value, or None.
        error: `"KeyError: 'price'"`-style message when `ok` is False.
        figures: matplotlib figures the cell left open, as PNG bytes.
        seconds: wall-clock time of the run as seen by the host.
    """

    ok: bool
    stdout: str = ""
    value: str | None = None
    error: str | None = None
    figures: list[bytes] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Layer:
    """One isolation layer and whether it is in force, as measured in a real child."""

    name: str
    active: bool
    detail: str

    def __str__(self) -> str:
        return f"[{'x' if self.active else ' '}] {self.name}: {self.detail}"
