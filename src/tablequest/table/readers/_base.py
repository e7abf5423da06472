"""The reader interface: one function from a file's bytes to its tables."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tablequest.table.budget import Meter, ReadBudget
from tablequest.table.model import Source, Table

__all__ = ["ReadInput", "Reader", "number_tables"]


@dataclass(frozen=True, slots=True)
class ReadInput:
    """What a reader gets: the display path, the content, and the file when it is on disk.

    `file` is set only when the bytes were read from that file (SQLite opens it read-only
    instead of copying the bytes into memory). A reader that repairs the input (drops NUL
    bytes, reads a broken quote as text, flattens a nested table) says so with `warn`, so
    the repair reaches the caller (`read_tables_report`) instead of passing in silence.
    Readers spend `meter` (the file's `ReadBudget`, table/budget.py) before they
    materialise what the file describes.
    """

    path: str
    data: bytes
    file: Path | None = None
    warnings: list[str] = field(default_factory=list, compare=False)
    budget: ReadBudget = field(default_factory=ReadBudget, compare=False)
    meter: Meter = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # One meter per input: every table of the file spends the same budget.
        size = len(self.data)
        if self.file is not None:
            with contextlib.suppress(OSError):
                size = max(size, self.file.stat().st_size)
        object.__setattr__(self, "meter", self.budget.meter(self.path, size))

    def warn(self, message: str) -> None:
        """Record one repair, as a short sentence ("3 NUL bytes removed")."""
        self.warnings.append(message)


Reader = Callable[[ReadInput], list[Table]]
"""A reader returns every table in the input or raises `UnreadableTable` (and reports any
repair it made with `ReadInput.warn`).

Readers may set `Table.source.sheet` (and `format` when they know better than the caller);
`read_tables` fills in the path and format.
"""


def number_tables(tables: list[Table]) -> list[Table]:
    """Name the tables of a multi-table file "table 1", "table 2", ... (single: unchanged)."""
    if len(tables) < 2:
        return tables
    return [replace(t, source=Source(sheet=f"table {i}")) for i, t in enumerate(tables, 1)]
