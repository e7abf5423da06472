"""`TablequestError`, the base of every exception tablequest defines, its two kinds, and how
the CLI and the HTTP API report each error.

Every exception class in the package derives from one of two bases:

- `UsageError`: bad input — an empty question, ``--steps 0``, an unknown method or option,
  a source that is not there. The CLI exits 2 (`tablequest.cli._exit.USAGE`); the API answers
  400; the JSON code (both surfaces) is ``usage``.
- `RunError`: a run that could not complete — the model unreachable, the store held by another
  process, a disk full, the sandbox unavailable. The CLI exits 1 (``FAILED``); the API
  answers 503 (the service could not do it now; 500 is kept for bugs); the code is ``failed``.

A class says how it is reported with three class attributes: `exit_code`, `http_status` and
`code` (the JSON ``{"error": {"code"}}`` on every surface). A subclass overrides what differs
(`UnknownMethod`: ``unknown_method``; `ServerOnlyOption`: 422; `Busy`: 429 ``busy``; a SQL
query past its time limit, `SqlTimeout`: 422 ``sql_timeout``; a store error its own code,
``store_locked``, ``disk_full``, …, docs/reliability.md); an instance may
set its own `code` (`IngestAborted`). The surfaces read nothing else: `tablequest.cli._output`
(`fail_on`, and every command's catch-all) and `tablequest.serve.app` (one handler for
`TablequestError`). A test walks every exception class of the package and checks both.

Anything else that reaches a surface — a ``ValueError`` from pandas, a ``KeyError`` from a
bug — is an **internal error**, never the user's mistake: the CLI exits 1 with ``internal
error: Type: message`` (and the trace file, when the run wrote one), the API answers 500 with
the code ``internal`` (`INTERNAL`) and logs the traceback. `internal_message` writes that line.

Choices:
- The two bases are not ``ValueError``/``RuntimeError``: a surface that catches
  `TablequestError` catches only what tablequest raised on purpose. `BadValue` is the usage
  error of a value that is not allowed (where the standard library would raise ValueError).
  Only the sandbox's `InvalidArgument` keeps ``ValueError``/``TypeError`` (its documented
  contract, like a builtin's bad argument).
- A store error that is the user's mistake (`NotAStore`, `NoStore`) is a `UsageError` and a
  `StoreError` (``except StoreError`` still catches it) and keeps the API's 503.
- This module is the lowest layer and imports nothing from tablequest. The sandbox child loads
  `_bootstrap`, `_landlock` and `_seccomp` by path before lock-down (standard library only):
  there their errors subclass a stand-in `RunError`.
- `trace_note` adds a ``trace: PATH`` note to an exception that escapes a run which wrote a
  trace (`tablequest.methods.run.ask`); `internal_message` names it.
- A command reports what it catches with `fail_on`, so its class decides the exit status and
  code on every surface. Where the CLI had chosen otherwise, the class's kind won: a file
  given to ``trace show`` that is not a trace (`UnreadableTrace`) is bad input, exit 2 (the
  CLI said 1) and HTTP 422 ``trace`` on both; DTR's memory file that cannot be read or
  written (`MemoryUnavailable`) is a run failure, exit 1 (the CLI said 2). The codes the CLI
  had named became their classes' (`CacheError`: ``cache``; `RetentionError`:
  ``bad_retention``; `UnreadableTrace`: ``trace``).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "INTERNAL",
    "BadValue",
    "RunError",
    "TablequestError",
    "UsageError",
    "error_code",
    "exit_code",
    "http_status",
    "internal_message",
    "trace_note",
]

INTERNAL = "internal"
"""The JSON code of an internal error (a bug: not a `TablequestError`)."""
_TRACE_NOTE = "trace: "


class TablequestError(Exception):
    """Base of every exception tablequest defines; the message names the thing and the fix.

    Subclass `UsageError` or `RunError`, not this class (its values are `RunError`'s).
    """

    exit_code: ClassVar[int] = 1
    """The CLI's exit status (`tablequest.cli._exit`)."""
    http_status: ClassVar[int] = 503
    """The API's status."""
    code: str = "failed"
    """The JSON error code on every surface (an instance may set its own)."""


class UsageError(TablequestError):
    """Bad input: exit 2, HTTP 400, code ``usage``."""

    exit_code = 2
    http_status = 400
    code = "usage"


class RunError(TablequestError):
    """A run that could not complete: exit 1, HTTP 503, code ``failed``."""

    exit_code = 1
    http_status = 503
    code = "failed"


class BadValue(UsageError):
    """A value the caller gave is not allowed (an alpha outside [0, 1], an unknown format);
    the message names the value and what is allowed."""


def error_code(exc: BaseException) -> str:
    """The JSON error code of `exc`: its `code`, or ``internal`` for any other exception."""
    code = exc.code if isinstance(exc, TablequestError) else None
    return code if isinstance(code, str) and code else INTERNAL


def exit_code(exc: BaseException) -> int:
    """The CLI's exit status for `exc` (1 for an internal error)."""
    return exc.exit_code if isinstance(exc, TablequestError) else 1


def http_status(exc: BaseException) -> int:
    """The API's status for `exc` (500 for an internal error)."""
    return exc.http_status if isinstance(exc, TablequestError) else 500


def trace_note(exc: BaseException, path: object) -> None:
    """Note on `exc` the trace file of the run it escaped (once)."""
    if _trace_of(exc) is None:
        exc.add_note(f"{_TRACE_NOTE}{path}")


def _trace_of(exc: BaseException) -> str | None:
    notes = getattr(exc, "__notes__", None) or []
    found = [n for n in notes if isinstance(n, str) and n.startswith(_TRACE_NOTE)]
    return found[0][len(_TRACE_NOTE) :] if found else None


def internal_message(exc: BaseException, *, where: str | None = None, detail: bool = True) -> str:
    """``internal error: Type: message`` for an exception that is not a `TablequestError`,
    with the trace file noted on it (`trace_note`) and `where` (a log id), and a word that it
    is a bug, not the input; without `detail`, no message (a server's may name its paths)."""
    text = str(exc).strip().splitlines()[0][:300] if detail and str(exc).strip() else ""
    line = f"internal error: {type(exc).__name__}" + (f": {text}" if text else "")
    trace = _trace_of(exc)
    if trace and not detail:  # its id, not the server's folder
        trace = trace.rsplit("/", 1)[-1].removesuffix(".jsonl")
    refs = [f"trace {trace}"] if trace else []
    refs += [where] if where else []
    ref = f" ({'; '.join(refs)})" if refs else ""
    return f"{line}{ref} — a bug in tablequest, not in the input; please report it"
