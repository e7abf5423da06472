"""`TablequestError`, the base of every exception tablequest defines, and the one table of
how the CLI and the HTTP API report them.

Every exception class in the package subclasses `TablequestError` and keeps its other bases
(`class SourceError(TablequestError, ValueError)`), so ``except TablequestError`` catches
anything tablequest raised on purpose while ``except ValueError`` keeps working.

`ERRORS` maps an exception class to its `ErrorKind`: the CLI's exit status (see
`tablequest.cli._exit`: 2 bad input, 1 a run that could not complete) and the API's HTTP status
and error code. An exception gets the row of the first class of its MRO that has one, the
way Starlette picks an exception handler. Both surfaces read it: `tablequest.cli._output.fail_on`
for the exit status, `tablequest.serve.app` for the status and code of every error it
answers (`API_ERRORS` there registers the handler; a test checks the two agree).

Choices:
- This module is the lowest layer and imports nothing from tablequest, so the table names
  classes by `__qualname__` (a class moved between modules keeps its row); a test checks that
  every name is exactly one exception class of the package (or a builtin).
- One JSON error code for both surfaces (`{"error": {"code"}}`, `error_code`): an error's
  own `code` (a store error's ``not_a_store``, ``store_locked``, ``disk_full``, …,
  docs/reliability.md), else its row's `api_code` (``unknown_method``, ``bad_option``, …).
  An error with neither gets each surface's generic code: the CLI's ``usage`` (exit 2) or
  ``failed`` (exit 1), the API's name of the HTTP status (``bad_request`` for 400,
  ``too_large`` for 413).
- The sandbox child loads `_bootstrap`, `_landlock` and `_seccomp` by path before lock-down
  (standard library only): there their errors subclass a stand-in `TablequestError`.
- Only errors that reach a surface have a row. An error without one is, for the API, a bug
  answered with a 500; the CLI's commands name the rest themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ERRORS",
    "ErrorKind",
    "TablequestError",
    "error_code",
    "error_kind",
    "exit_code",
    "http_status",
]

_FAILED, _USAGE = 1, 2  # tablequest.cli._exit.FAILED, USAGE


class TablequestError(Exception):
    """Base of every exception tablequest defines; the message names the thing and the fix."""


@dataclass(frozen=True)
class ErrorKind:
    """How the CLI and the HTTP API report one kind of error."""

    exit_code: int
    """The CLI's exit status (`tablequest.cli._exit`)."""
    http_status: int | None
    """The API's status; None: the API does not answer it (it is a 500)."""
    api_code: str | None = None
    """The API's error code; None: the HTTP status's name (``bad_request``, ``too_large``)."""


ERRORS: dict[str, ErrorKind] = {
    # bad input: the CLI exits 2, the API answers 400 (or 422 / 413 as noted)
    "ValueError": ErrorKind(_USAGE, 400),  # validation everywhere (an empty question, steps < 1)
    "UnknownMethod": ErrorKind(_USAGE, 400, "unknown_method"),
    "OptionError": ErrorKind(_USAGE, 400, "bad_option"),
    "ServerOnlyOption": ErrorKind(_USAGE, 422, "server_only_option"),
    "SourceError": ErrorKind(_USAGE, 400),  # a missing or unreadable source, a bad table id
    "EncoderUnavailable": ErrorKind(_USAGE, 400),  # the method's encoder needs an extra
    "UploadRejected": ErrorKind(_USAGE, 413),  # the API answers with its `status` (413, 400)
    "NotAStore": ErrorKind(_USAGE, 503, "store"),
    "NoStore": ErrorKind(_USAGE, 503, "store"),
    # a run that could not complete: the CLI exits 1
    "StoreError": ErrorKind(_FAILED, 503, "store"),  # held by another process, disk full, …
    "Busy": ErrorKind(_FAILED, 429, "busy"),  # the server's ask limit; with Retry-After
}


def error_kind(exc: BaseException) -> ErrorKind | None:
    """The row of the first class in `exc`'s MRO that has one (None: no row)."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("tablequest") or cls.__module__ == "builtins":
            kind = ERRORS.get(cls.__qualname__)
            if kind is not None:
                return kind
    return None


def error_code(exc: BaseException) -> str | None:
    """The JSON error code of `exc` on every surface: its own `code`, else its row's
    `api_code`; None: the surface's generic code (see the module doc)."""
    own = getattr(exc, "code", None) if isinstance(exc, TablequestError) else None
    if isinstance(own, str) and own:
        return own
    kind = error_kind(exc)
    return None if kind is None else kind.api_code


def exit_code(exc: BaseException, default: int = _FAILED) -> int:
    """The CLI's exit status for `exc`: its row's, else `default` (a run that failed)."""
    kind = error_kind(exc)
    return default if kind is None else kind.exit_code


def http_status(exc: BaseException) -> int | None:
    """The API's status for `exc` (None: the API does not answer it, a 500)."""
    kind = error_kind(exc)
    return None if kind is None else kind.http_status
