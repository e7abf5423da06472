"""Out-of-process execution of generated Python over DataFrames (see docs/security.md).

`Sandbox().session({"sales": df}).run("sales.groupby('region').amount.sum()")` runs the code
in a separate, locked-down Python process and returns an `ExecResult`.
"""

from ._budget import MemoryBudget
from ._sandbox import Sandbox, Session
from ._types import (
    ExecResult,
    InvalidArgument,
    Layer,
    SandboxBusy,
    SandboxError,
    SandboxUnavailable,
)

__all__ = [
    "ExecResult",
    "InvalidArgument",
    "Layer",
    "MemoryBudget",
    "Sandbox",
    "SandboxBusy",
    "SandboxError",
    "SandboxUnavailable",
    "Session",
]
