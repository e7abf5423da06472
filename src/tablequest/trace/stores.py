"""Which store a trace ran against (issue 39: a server lists only its own store's traces).

`ask` writes `store_key(store)` as ``store`` in its first decision (the server's ``request``
decision, a method's ``ask`` decision): a digest of the store's resolved path, so a trace a
client reads names no server folder. `store_of(path)` reads it back from the
trace's first lines only (a trace can be megabytes), cached by (path, modification time,
size), so listing a folder of finished traces reads each once. A trace of a table file, a
folder or an in-memory corpus names no store (None), nor does one written before traces
recorded it.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

__all__ = ["HEAD_LINES", "store_key", "store_of"]

HEAD_LINES = 8
_LINE_BYTES = 64 * 1024


@lru_cache(maxsize=4096)
def _store(path: str, _mtime_ns: int, _size: int) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = [fh.readline(_LINE_BYTES) for _ in range(HEAD_LINES)]
    except OSError:
        return None
    for line in head:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("store"), str):
            return str(event["store"])
    return None


def store_key(store: str | Path) -> str:
    """What a trace records of the store file `store`: its resolved path's digest."""
    resolved = str(Path(store).expanduser().resolve())
    return "sha256:" + hashlib.sha256(resolved.encode()).hexdigest()[:24]


def store_of(path: Path) -> str | None:
    """The `store_key` of the store the trace at `path` ran against, or None (module doc)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _store(str(path), st.st_mtime_ns, st.st_size)
