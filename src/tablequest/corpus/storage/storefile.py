"""The file-level side of a store: what a path holds, who holds its lock, what a failure means.

`open_database` is how `tablequest.corpus.storage.store.Store` reaches DuckDB:

- An existing path is opened only when it is a DuckDB database (magic ``DUCK`` at byte 8),
  checked before DuckDB sees it: DuckDB would otherwise open a CSV or Parquet file as an
  empty in-memory database and "store" into nothing, or try to download an extension for
  SQLite. Anything else raises `NotAStore` naming what the file is; the file is untouched.
  (An empty file goes to DuckDB, so that a store another process is just creating is
  waited for, not refused; DuckDB refuses a truly empty file without writing to it.)
- Concurrency is DuckDB's file lock: one writing process, or any number of read-only ones.
  A held store is retried (50 ms doubling to 0.5 s) for up to the lock timeout — the
  argument, else $TABLEQUEST_LOCK_TIMEOUT, else 10 s — then `StoreLocked` names the holder:
  DuckDB's message carries its PID ("Conflicting lock is held in … (PID 123)"), /proc its
  command line; without a PID the message says "another process".
- A missing parent folder is created for a writable store; where that fails (read-only
  media, permissions) the error names the folder and the reason, not an OSError traceback.

`is_store_failure` tells a failure of the file or the disk (no space, I/O error, read-only
media, DuckDB's fatal "checkpoint failed") from a problem with the rows being written.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import duckdb

from tablequest.errors import RunError, UsageError

LOCK_TIMEOUT_ENV = "TABLEQUEST_LOCK_TIMEOUT"
BLOCK_SIZE = 16384  # bytes per block of a new store file (store.py says why)
DEFAULT_LOCK_TIMEOUT = 10.0


class StoreError(RunError):
    """The store cannot be opened or written; the message names the file and the fix."""

    code = "store"


class NotAStore(UsageError, StoreError):
    """The path exists and is not a DuckDB database (it was not touched): bad input (exit 2),
    a store error all the same (the API's 503)."""

    http_status = 503
    code = "not_a_store"


class NoStore(UsageError, StoreError):
    """A store opened for reading does not exist (exit 2, the API's 503)."""

    http_status = 503
    code = "no_store"


class StoreLocked(StoreError):
    """Another process holds the store (`holder`: its PID when DuckDB named it)."""

    code = "store_locked"

    def __init__(self, message: str, holder: int | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class StoreWriteError(StoreError):
    """The file or its disk failed a write (no space, I/O error, read-only media).

    `committed` is True when the failed write was nevertheless committed (DuckDB's
    "COMMIT succeeded and is durable, but the checkpoint failed").
    """

    code = "store_write"

    def __init__(self, message: str, *, committed: bool = False) -> None:
        super().__init__(message)
        self.committed = committed


# -- what a path holds, who holds it, what went wrong ----------------------------------------
_EMPTY = "an empty file"
_SIGNATURES = (
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive (xlsx, docx, …)"),
    (b"\x1f\x8b", "a gzip file"),
    (b"ARROW1", "an Arrow file"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
)


def what_is(path: Path) -> str | None:
    """None when `path` is missing or a DuckDB database; else what it is, in a few words."""
    try:
        if path.is_dir():
            return "a directory"
        if not path.exists():
            return None
        if not path.is_file():
            return "not a regular file"
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not head:
        return _EMPTY
    if head[8:12] == b"DUCK":
        return None
    for magic, kind in _SIGNATURES:
        if head.startswith(magic):
            return kind
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at 4096 bytes is still text
        text = head[: exc.start].decode("utf-8") if exc.start > len(head) - 4 else ""
    if text and "\x00" not in text:
        first = text.splitlines()[0][:60] if text.strip() else ""
        return f"a text file (first line {first!r})"
    return f"a file of {path.stat().st_size:,} bytes that is not a DuckDB database"


_LOCK = re.compile(r"Could not set lock|Conflicting lock", re.IGNORECASE)
_PID = re.compile(r"\(PID (\d+)\)")


def lock_holder(exc: BaseException) -> tuple[bool, int | None]:
    """(is this DuckDB's lock conflict?, the holder's PID when the message names it)."""
    message = str(exc)
    if not _LOCK.search(message):
        return False, None
    match = _PID.search(message)
    return True, int(match.group(1)) if match else None


def describe_process(pid: int | None) -> str:
    """ "PID 123 (tablequest ingest …)" from /proc when readable; else what is known."""
    if pid is None:
        return "another process"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"PID {pid}"
    words = [w.decode(errors="replace") for w in raw.split(b"\x00") if w]
    if words and Path(words[0]).name.startswith("python") and len(words) > 1:
        words = words[1:]  # "python …/tablequest ingest" → "…/tablequest ingest"
    if words:
        words[0] = Path(words[0]).name
    command = " ".join(words)
    return (
        f"PID {pid} ({command[:80]}{'…' if len(command) > 80 else ''})" if command else f"PID {pid}"
    )


def resolve_lock_timeout(value: float | None) -> float:
    """Seconds to wait for a held store: `value`, else the `store.lock_timeout` setting's
    variable ($TABLEQUEST_LOCK_TIMEOUT), else 10."""
    if value is not None:
        return max(0.0, float(value))
    from tablequest.settings import SettingsError, StoreSettings, from_env

    try:
        return from_env(StoreSettings).lock_timeout
    except SettingsError as exc:
        raise StoreError(str(exc)) from None


NO_SPACE = "no space left on the device"
_DISK = (
    ("No space left on device", NO_SPACE),
    ("Disk quota exceeded", "the disk quota is exceeded"),
    ("Read-only file system", "the file system is read-only"),
    ("Permission denied", "permission denied"),
)


def is_store_failure(exc: BaseException) -> bool:
    """True when a DuckDB error is about the file or disk, not about the rows written."""
    message = str(exc)
    if isinstance(exc, (duckdb.IOException, duckdb.FatalException)):
        return True
    if isinstance(exc, duckdb.OutOfMemoryException):
        return True
    if isinstance(exc, duckdb.TransactionException) and "commit" in message.lower():
        return True
    return any(marker in message for marker, _ in _DISK)


def explain(exc: BaseException) -> str:
    """A short reason for a store failure ("no space left on the device", …)."""
    message = str(exc)
    for marker, reason in _DISK:
        if marker in message:
            return reason
    return message.splitlines()[0] if message else type(exc).__name__


_FIRST_DELAY = 0.05


def open_database(
    path: Path, *, read_only: bool, lock_timeout: float | None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the store file `path` (see the module doc for the checks).

    Raises:
        NotAStore: the path holds something else.
        StoreLocked: another process held it for the whole lock timeout.
        StoreError: anything else, with the reason and the fix.
    """
    name = str(path)
    if read_only and not path.exists():
        raise NoStore(f"no store at {name!r}: run `tablequest ingest` first")
    what = what_is(path)
    if what is not None and what != _EMPTY:
        raise NotAStore(_not_a_store(name, what))
    if not read_only:
        _make_parent(path)
        if not path.exists():
            _create(path)
    timeout = resolve_lock_timeout(lock_timeout)
    deadline = time.monotonic() + timeout
    delay = _FIRST_DELAY
    while True:
        try:
            return duckdb.connect(name, read_only=read_only)
        except duckdb.Error as exc:
            locked, pid = lock_holder(exc)
            if not locked:
                raise _open_error(name, exc, read_only=read_only) from exc
            left = deadline - time.monotonic()
            if left > 0 and delay == _FIRST_DELAY:  # say once why nothing happens
                print(
                    f"tablequest: store {name!r} is in use by {describe_process(pid)}; "
                    f"waiting up to {timeout:g} s",
                    file=sys.stderr,
                )
            if left <= 0:
                raise StoreLocked(
                    f"store {name!r} is in use by {describe_process(pid)}; waited {timeout:g} s. "
                    f"Try again when it has finished, or wait longer with "
                    f"{LOCK_TIMEOUT_ENV}=SECONDS",
                    pid,
                ) from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.5)


def sql_literal(text: str) -> str:
    """`text` as a quoted SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _create(path: Path) -> None:
    """Create an empty store file with `BLOCK_SIZE` blocks (DuckDB sets a file's block size
    once, at creation; `duckdb.connect` with that setting would make every later opening of
    the file in this process need the same configuration). Any failure here is left to the
    opening that follows, which reports it."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"ATTACH {sql_literal(str(path))} AS tq_new (BLOCK_SIZE {BLOCK_SIZE})")
        con.execute("DETACH tq_new")
    except duckdb.Error:
        pass
    finally:
        con.close()


def _not_a_store(name: str, what: str) -> str:
    return (
        f"{name!r} is {what}, not a DuckDB store; it was left untouched. "
        "Give --store a new file name (e.g. corpus.duckdb) or an existing store"
    )


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StoreError(
            f"cannot create the folder {str(path.parent)!r} for the store: {reason}. "
            "Choose a store path on writable media"
        ) from None


def _open_error(name: str, exc: duckdb.Error, *, read_only: bool) -> StoreError:
    message = str(exc)
    if "not a valid DuckDB database" in message:
        return NotAStore(_not_a_store(name, _EMPTY))
    if "different configuration" in message:
        return StoreError(
            f"store {name!r} is already open in this process in the other mode "
            f"({'read-only' if read_only else 'read-write'} requested); close it first"
        )
    mode = "read" if read_only else "write"
    hint = "" if read_only else "; commands that only read (search, ask) open it read-only"
    return StoreError(f"cannot open store {name!r} to {mode}: {explain(exc)}{hint}")
