"""Removing the temporary files of corpus builds that died (`tablequest.eval.corpora`).

A build writes its corpus under a temporary name in the cache folder
(``.{name}.{pid}-{random}.tmp.duckdb``) and renames it when done; one killed with SIGKILL
cannot remove it. `clean_stale_builds` removes such files (and their ``.wal``): older than
the call, named after a PID that is not running, and not locked by any process (DuckDB holds
a file lock while writing). Files named after this process are never touched (another thread
may be building).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

__all__ = ["clean_stale_builds"]

_TMP_NAME = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp\.duckdb(\.wal)?$")


def clean_stale_builds(directory: Path, *, before: float) -> list[Path]:
    """Remove the temporary files of dead corpus builds in `directory` (see the module
    doc): modified before `before` (a `time.time()`), named after a PID that is not
    running and not this process, and not locked. Returns the files removed."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = _TMP_NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        database = entry.with_name(entry.name.removesuffix(".wal"))
        try:
            if entry.stat().st_mtime >= before:
                continue
        except OSError:
            continue
        if _running(int(match.group(1))) or _locked(database):
            continue
        with contextlib.suppress(OSError):
            entry.unlink()
            removed.append(entry)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else (or cannot tell: keep the file)
    try:  # a zombie is dead: its parent has not reaped it yet
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _locked(path: Path) -> bool:
    """True when a process holds DuckDB's lock on `path` (POSIX; elsewhere False)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (also drops the probe lock)
    return False
