"""`run_pandas`: a client's Python over named tables, in the sandbox the methods use.

Each call is one fresh sandbox session (`tablequest.sandbox`): the named tables are bound as
DataFrames (`Table.to_dataframe()`, the typed frames the methods get), the code runs once,
and the session ends — no state survives between calls, so one client's variables never
reach another's. The `Sandbox` is the methods' (`Sandbox.from_settings` with the server's
loaded settings: the same isolation, CPU, memory, output and figure limits, and the
``[sandbox] isolation`` the server was started with — its ``--config-file`` included); it is
started on the first call and shared by all calls.

Choices (ours): at most `MAX_TABLES` tables and `MAX_CODE_CHARS` characters of code a call;
the per-run timeout defaults to DTR's ``exec_timeout`` (20 s) and may be raised to 60 s.
Names must be Python identifiers that are not keywords and do not start with ``_``.

Host-side cost (issue 40: a 10M-cell table took 31.7 s with ``timeout: 5``, and 231 s and
2.4 GB bound under 8 names): the timeout covers the whole call — the wait for a worker
(`tablequest.mcpserver.pandaspool`), loading and converting the tables, and the run, which
gets what is left. Each table is converted once per call however many names it is bound to
(one DataFrame, encoded once for the child), and `TableTools` refuses tables holding more
than ``[serve] pandas_cells`` cells before loading any. A call past its timeout before its
code ran comes back as a ``TimeoutError`` like a run's own. One table's conversion is not
interrupted: the cells budget bounds it. What comes back (stdout, value, error) has the
server's folders cut off (`scrub_run`): a child's traceback names the Python install and the
sandbox's folder.
"""

from __future__ import annotations

import dataclasses
import keyword
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

import tablequest
from tablequest.errors import UsageError
from tablequest.methods import (
    Binding,
    Verdict,
    evidence_of,
    traced_items,
)
from tablequest.sandbox import ExecResult, Sandbox
from tablequest.table import CellRef, Table

__all__ = [
    "MAX_CODE_CHARS", "MAX_TABLES", "CodeRunner", "PandasRun", "check_names", "host_folders",
    "scrub_run", "timed_out",
]  # fmt: skip

MAX_TABLES = 8
MAX_CODE_CHARS = 20_000
DEFAULT_TIMEOUT = 20.0
MAX_TIMEOUT = 60.0
EVIDENCE_LINES = 20


class BadFrameName(UsageError):
    """A name a table cannot be bound to in the sandbox."""


@dataclass(frozen=True)
class PandasRun:
    """What one `run_pandas` call produced (everything in it came from untrusted code)."""

    result: ExecResult
    frames: dict[str, tuple[int, int]]
    """Each bound name → its DataFrame's shape."""
    evidence: list[CellRef] = field(default_factory=list)
    """The cells the value (else the last printed value) was computed from (`run_evidence`)."""
    verified: str | None = None
    verification: str | None = None

    def text(self) -> str:
        """The run as the model reads it: bound frames, stdout, value or error, evidence."""
        bound = ", ".join(f"{n} ({r}×{c})" for n, (r, c) in self.frames.items())
        parts = [f"tables bound: {bound or 'none'}"]
        if self.result.stdout:
            parts.append(f"stdout:\n{self.result.stdout}")
        if self.result.ok and self.result.value is not None:
            parts.append(f"value:\n{self.result.value}")
        if self.verified is not None:
            cells = [f"{c.table_id} row {c.row} col {c.col} = {c.value[:40]!r} ({c.how})"
                     for c in self.evidence[:EVIDENCE_LINES]]  # fmt: skip
            more = len(self.evidence) - len(cells)
            cells += [f"… {more} more (structured content lists them)"] if more > 0 else []
            parts.append(f"{self.verified}: {self.verification}\nevidence:\n" + "\n".join(cells))
        if not self.result.ok:
            parts.append(f"error: {self.result.error}")
        if self.result.figures:
            parts.append(f"figures: {len(self.result.figures)} (PNG images follow)")
        return "\n\n".join(parts)


def check_names(names: Mapping[str, object]) -> None:
    """Refuse names that are not plain identifiers, and too many tables.

    Raises:
        BadFrameName: a bad name, or more than `MAX_TABLES` tables.
    """
    if len(names) > MAX_TABLES:
        raise BadFrameName(f"at most {MAX_TABLES} tables a call (got {len(names)})")
    for name in names:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise BadFrameName(
                f"{name!r} cannot name a table: use a Python identifier that is not a keyword "
                "and does not start with '_' (e.g. sales, t1)"
            )


def timed_out(started: float, timeout: float, what: str) -> PandasRun:
    """A call that ran out of its timeout before its code ran, as a run's own timeout reads."""
    spent = time.monotonic() - started
    error = (
        f"TimeoutError: {what} took {spent:.1f} s of the call's timeout ({timeout:g} s); "
        "bind fewer or smaller tables, or retry when the server is less busy"
    )
    return PandasRun(ExecResult(ok=False, error=error, seconds=spent), {})


def host_folders() -> list[str]:
    """Server folders a child's output can name: the Python install (a traceback's frames),
    tablequest's own source, the temporary folder (the sandbox's session folder)."""
    source = Path(tablequest.__file__).resolve().parents[1]
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(source), tempfile.gettempdir()}
    return sorted(found)


def scrub_run(run: PandasRun, text: Callable[[str], str]) -> PandasRun:
    """`run` with `text` (a `Scrubber`'s) applied to the child's stdout, value and error."""
    result = run.result
    scrubbed = dataclasses.replace(
        result,
        stdout=text(result.stdout),
        value=None if result.value is None else text(result.value),
        error=None if result.error is None else text(result.error),
    )
    return dataclasses.replace(run, result=scrubbed)


class CodeRunner:
    """Runs code over tables in one shared, lazily started `Sandbox`."""

    def __init__(self, make_sandbox: Callable[[], Sandbox] = Sandbox) -> None:
        self._make = make_sandbox
        self._sandbox: Sandbox | None = None
        self._lock = threading.Lock()
        self.runs = 0

    def _box(self) -> Sandbox:
        with self._lock:
            if self._sandbox is None:
                self._sandbox = self._make()
            return self._sandbox

    def run(
        self,
        code: str,
        tables: Mapping[str, Table],
        timeout: float,
        ids: Mapping[str, str] | None = None,
        *,
        started: float | None = None,
    ) -> PandasRun:
        """Bind `tables` by name, run `code` once, end the session. `ids` names each bound
        table's id (the evidence's ``table_id``; the bound name when not given). `timeout`
        counts from `started` (`time.monotonic()`; default now): converting the tables
        (each `Table` object once, whatever names it has) and starting the session spend it.

        Raises:
            BadFrameName: see `check_names`.
            SandboxError: the sandbox cannot start or is busy (its message says why).
        """
        check_names(tables)
        started = time.monotonic() if started is None else started
        deadline = started + timeout
        converted: dict[int, pd.DataFrame] = {}
        for table in tables.values():
            if id(table) not in converted:
                if time.monotonic() >= deadline:
                    return timed_out(started, timeout, "binding the tables")
                converted[id(table)] = table.to_dataframe()
        frames = {n: converted[id(t)] for n, t in tables.items()}
        if time.monotonic() >= deadline:
            return timed_out(started, timeout, "binding the tables")
        with self._lock:
            self.runs += 1
        with self._box().session(frames) as session:
            left = deadline - time.monotonic()
            if left <= 0:
                return timed_out(started, timeout, "starting the sandbox")
            result = session.run(code, timeout=left)
        shapes = {n: (len(f), len(f.columns)) for n, f in frames.items()}
        bindings = {
            n: Binding.of(n, (ids or {}).get(n, n), t, [str(c) for c in frames[n].columns])
            for n, t in tables.items()
        }
        cells, verdict = run_evidence(result, bindings)
        if verdict is None:
            return PandasRun(result, shapes)
        return PandasRun(result, shapes, cells, verdict.verified, verdict.why)

    def close(self) -> None:
        with self._lock:
            box, self._sandbox = self._sandbox, None
        if box is not None:
            box.close()


def run_evidence(
    result: ExecResult, bindings: Mapping[str, Binding]
) -> tuple[list[CellRef], Verdict | None]:
    """The cells of the run's value (else of its last printed value) and whether that value
    recomputes from them; (``[]``, None) when the run failed or showed nothing."""
    if not result.ok:
        return [], None
    items = traced_items(result.lineage)
    if not items:
        return [], None
    has_value = bool((result.lineage or {}).get("value"))
    item = items[0] if has_value else items[-1]
    found = evidence_of(item.text, [[item]], bindings)
    return found if found is not None else ([], None)
