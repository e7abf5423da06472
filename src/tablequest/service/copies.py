"""The copies an upload ingests into (`tablequest.service.stores`), and the removal of those a
killed server left behind (issue 40).

An upload's copy is named ``STORE.next-PID-RANDOM`` after the process writing it. A server
killed mid-upload (SIGKILL, power loss) cannot remove it, and each is a full copy of the
store, so every start removes the copies (and their ``.wal``) named after a process that is
not running; copies of this process or of a live one are kept (another server may be
ingesting into its copy), and the removal is logged with the files' names.

Limits: a live process that reused a dead writer's PID keeps that copy until a later start; a
store on a filesystem shared by several machines is judged by this machine's processes only;
copies named by older versions (no PID) are left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import uuid
from pathlib import Path

from tablequest.trace.latest import running_elsewhere

__all__ = ["copy_name", "remove_stale_copies"]

log = logging.getLogger("tablequest.serve")


def copy_name(store_name: str) -> str:
    """The name of an upload's copy of store `store_name`: after this process (module doc)."""
    return f"{store_name}.next-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def remove_stale_copies(path: Path) -> list[Path]:
    """Remove the copies of store `path` (and their ``.wal``) left by dead processes (module
    doc); log and return them."""
    pattern = re.compile(re.escape(path.name) + r"\.next-(\d+)-[0-9a-f]{12}(?:\.wal)?")
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or running_elsewhere(pid):
            continue
        with contextlib.suppress(OSError):  # removed meanwhile by another server, or not ours
            entry.unlink()
            removed.append(entry)
    if removed:
        names = ", ".join(sorted(p.name for p in removed))
        log.warning(
            "removed %d stale cop%s of the store left by an upload that was killed: %s",
            len(removed), "y" if len(removed) == 1 else "ies", names,
        )  # fmt: skip
    return removed
