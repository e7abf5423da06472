"""Reading budgets: how much one file (and one ingest) may cost to read.

A small file can describe a huge table (a dictionary-encoded Parquet column, an SQLite
generated column, JSON records that each bring a new key, HTML colspans). Readers therefore
spend a `ReadBudget` while they read, and check it *before* they materialise what a file
describes: Parquet from its metadata and each row group's decoded size, SQLite through a
progress handler, a value-length limit and a row LIMIT, JSON/CSV/Markdown before padding
ragged rows into a grid, HTML per cell across all tables of the file, xlsx per `<c>` element
and per value's text as its parts are streamed (`readers/xlsxparts.py`). A file over budget
raises `OverBudget` (an `UnreadableTable`), whose reason names the limit, what the file
needed, and the setting that raises the limit; an ingest reports such a file as failed and
goes on with the rest.

Defaults (ours; docs/reliability.md "Reading budgets" has the measurements):
- Cells per file (all its tables): `free_cells` 1,000,000 whatever the file's size, more
  only as the file is larger — `cells_per_byte` 1.0 cell per byte of the file — and never
  past `max_cells` 20,000,000. A cell of a real file costs at least a byte (a value or a
  separator; in xlsx, which compresses, every `<c>` element counts, empty ones too), so a
  50 MB CSV of 20M cells reads, while 8 KB describing 2M cells (Parquet dictionary pages,
  JSON keys, HTML spans, 4M empty xlsx cells in 22 KB) is refused. Python holds a read
  cell in roughly 150 bytes along the ingest path, so a file under 1 MB stays under ~200 MB
  of memory.
- Decoded bytes of cell values from binary formats (Parquet pages, SQLite records, xlsx
  cell text with a shared string counted at each use; text formats are bounded by their
  file size already): `max_decoded_bytes` 32 MiB whatever the file's size, or 32 bytes per
  byte of the file when that is more (compressed columns).
- `max_seconds` 20 s of wall time per file (checked between rows, by SQLite's progress
  handler inside a statement, and at every chunk of an xlsx part).
- `max_columns` 5,000 per table.
- Per ingest: `ingest_cells` 100,000,000 cells in all (a file that would pass it is
  skipped, the files after it still get their chance), `ingest_seconds` unlimited.
The limits are the `[reading]` settings (`tablequest.settings.ReadingSettings`: defaults,
variables such as `TABLEQUEST_READ_MAX_CELLS=50000000`, ``ingest --budget``; 0 or "none"
removes a limit): an entry point loads them once and passes `ReadBudget.from_settings` down,
to worker processes too (pickled); called without a budget, a reader uses `from_env`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

from tablequest.settings import ReadingSettings, from_env, parse_limit, spec_of
from tablequest.table.errors import UnreadableTable

__all__ = ["ENV", "FLOAT_FIELDS", "Meter", "OverBudget", "ReadBudget", "parse_limit"]

ENV: dict[str, str] = {
    f.name: spec_of(ReadingSettings, f.name).env[0] for f in fields(ReadingSettings)
}
"""Each limit's environment variable (declared in `tablequest.settings`)."""
FLOAT_FIELDS = frozenset(
    f.name for f in fields(ReadingSettings) if f.type in ("float | None", "float")
)
DECODED_PER_BYTE = 32
_DEFAULT = ReadingSettings()


@dataclass(frozen=True, slots=True)
class ReadBudget:
    """Limits on reading one file (`max_*`) and one ingest (`ingest_*`); None: no limit."""

    free_cells: int | None = _DEFAULT.free_cells
    cells_per_byte: float | None = _DEFAULT.cells_per_byte
    max_cells: int | None = _DEFAULT.max_cells
    max_decoded_bytes: int | None = _DEFAULT.max_decoded_bytes
    max_seconds: float | None = _DEFAULT.max_seconds
    max_columns: int | None = _DEFAULT.max_columns
    ingest_cells: int | None = _DEFAULT.ingest_cells
    ingest_seconds: float | None = _DEFAULT.ingest_seconds

    @classmethod
    def from_settings(cls, reading: ReadingSettings) -> ReadBudget:
        """The budget of the `[reading]` settings."""
        return cls(**asdict(reading))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReadBudget:
        """The defaults, overridden by the `ENV` variables that are set (the fallback of a
        reader called without a budget).

        Raises:
            SettingsError: a variable is not a non-negative number (a ValueError naming it).
        """
        return cls.from_settings(from_env(ReadingSettings, environ))

    def meter(self, path: str, size: int | None = None) -> Meter:
        """A fresh meter for reading `path` (`size` bytes, when known); its clock starts now."""
        return Meter(self, path, size)

    def cell_limit(self, size: int | None) -> tuple[int | None, str]:
        """The cells a file of `size` bytes may describe, and the field that sets it."""
        cap, name = self.max_cells, "max_cells"
        if self.free_cells is None or self.cells_per_byte is None or size is None:
            return cap, name
        scaled = max(self.free_cells, int(self.cells_per_byte * size))
        if cap is None or scaled < cap:
            return scaled, "free_cells" if scaled == self.free_cells else "cells_per_byte"
        return cap, name


class OverBudget(UnreadableTable):
    """A file that would cost more to read than its `ReadBudget` allows.

    Attributes:
        limit: the budget field exceeded ("max_cells", ...).
        setting: the environment variable that raises it.
    """

    def __init__(self, path: str, limit: str, needed: str, allowed: str) -> None:
        self.limit = limit
        self.setting = ENV[limit]
        self.needed = needed
        self.allowed = allowed
        reason = f"over the reading budget: {needed} exceeds {limit}={allowed}"
        super().__init__(path, f"{reason} (set {self.setting})")

    def __reduce__(self) -> tuple[type[OverBudget], tuple[str, str, str, str]]:  # type: ignore[override]
        return (type(self), (self.path, self.limit, self.needed, self.allowed))


class Meter:
    """What reading one file has spent so far, checked against its budget on every call."""

    __slots__ = (
        "_deadline", "budget", "byte_cap", "bytes", "cell_cap", "cell_field", "cells", "path",
        "size",
    )  # fmt: skip

    def __init__(self, budget: ReadBudget, path: str, size: int | None = None) -> None:
        self.budget = budget
        self.path = path
        self.size = size
        self.cells = 0
        self.bytes = 0
        self.cell_cap, self.cell_field = budget.cell_limit(size)
        cap = budget.max_decoded_bytes
        self.byte_cap = cap if cap is None or size is None else max(cap, DECODED_PER_BYTE * size)
        seconds = budget.max_seconds
        self._deadline = None if seconds is None else time.monotonic() + seconds

    def remaining_cells(self) -> int | None:
        """Cells left to this file, or None without a cell limit."""
        cap = self.cell_cap
        return None if cap is None else max(0, cap - self.cells)

    def remaining_bytes(self) -> int | None:
        """Decoded bytes left to this file, or None without a byte limit."""
        cap = self.byte_cap
        return None if cap is None else max(0, cap - self.bytes)

    def spend(self, cells: int = 0, nbytes: int = 0) -> None:
        """Count `cells` and `nbytes` more; raise `OverBudget` once past a limit."""
        self.cells += cells
        self.bytes += nbytes
        cap = self.cell_cap
        if cap is not None and self.cells > cap:
            raise OverBudget(self.path, self.cell_field, self._cells_needed(), self._allowed())
        cap = self.byte_cap
        if cap is not None and self.bytes > cap:
            raise OverBudget(
                self.path, "max_decoded_bytes", f"{self.bytes:,}+ decoded bytes", f"{cap:,}"
            )
        self.tick()

    def _cells_needed(self) -> str:
        of = "" if self.size is None else f" from a file of {self.size:,} bytes"
        return f"{self.cells:,}+ cells{of}"

    def _allowed(self) -> str:
        budget = self.budget
        if self.cell_field == "max_cells":
            return f"{self.cell_cap:,}"
        if self.cell_field == "free_cells":
            return f"{budget.free_cells:,} (cells any file may describe)"
        return (
            f"{budget.cells_per_byte:g} (a file may describe {budget.free_cells:,} cells, more "
            f"at {budget.cells_per_byte:g} per byte: {self.cell_cap:,} for this one)"
        )

    def columns(self, n: int) -> None:
        """Check a table's column count."""
        cap = self.budget.max_columns
        if cap is not None and n > cap:
            raise OverBudget(self.path, "max_columns", f"a table of {n:,} columns", f"{cap:,}")

    def grid(self, rows: Sequence[Sequence[object]]) -> None:
        """Spend the cells of `rows` padded to their widest row (before padding them)."""
        width = max(map(len, rows), default=0)
        self.columns(width)
        self.spend(cells=len(rows) * width)

    def tick(self) -> None:
        """Raise `OverBudget` once the file's time is spent."""
        if self._deadline is not None and time.monotonic() > self._deadline:
            self.out_of_time()

    def expired(self) -> bool:
        """True once the file's time is spent (for callbacks that must not raise)."""
        return self._deadline is not None and time.monotonic() > self._deadline

    def out_of_time(self) -> None:
        """Raise the `max_seconds` `OverBudget`."""
        limit = self.budget.max_seconds
        raise OverBudget(self.path, "max_seconds", "reading time", f"{limit:g} s")
