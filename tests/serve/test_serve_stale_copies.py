"""Issue 40: a server killed (SIGKILL) during an upload leaves its copy of the store; the next
start removes the copies of dead processes, keeps those of live ones, and says so."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tablequest.corpus import Store
from tablequest.service import StoreManager

CHILD = """
import sys, time
from pathlib import Path
import tablequest.service.stores as stores
from tablequest.service import StoreManager

def held(writer, files):  # the upload's ingest, into the copy: held here until killed
    print("writing", flush=True)
    time.sleep(600)

manager = StoreManager(Path(sys.argv[1]))
stores.ingest = held
manager.ingest([Path(sys.argv[2])])
"""


def _killed_upload(store: Path, table: Path) -> int:
    """The PID of a server process SIGKILLed while it ingested an upload into its copy."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store), str(table)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as child:  # fmt: skip
        assert child.stdout is not None
        line = child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=30)
    assert line.strip() == "writing", err
    return child.pid


def test_a_start_removes_the_copies_of_killed_uploads_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "s.duckdb"
    Store(store).close()
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    dead = _killed_upload(store, table)
    left = sorted(p.name for p in tmp_path.glob("s.duckdb.next-*"))
    assert left and all(name.startswith(f"s.duckdb.next-{dead}-") for name in left)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f"s.duckdb.next-{sleeper.pid}-{'a' * 12}"  # another server's upload
        mine = tmp_path / f"s.duckdb.next-{os.getpid()}-{'b' * 12}"
        other = tmp_path / "other.duckdb.next-1-cccccccccccc"  # another store's
        for keep in (live, mine, other):
            keep.write_bytes(b"x")
        size = store.stat().st_size
        with caplog.at_level(logging.WARNING, logger="tablequest.serve"):
            started = time.monotonic()
            manager = StoreManager(store)
        manager.close()
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)
    assert sorted(p.name for p in manager.removed) == left
    assert not list(tmp_path.glob(f"s.duckdb.next-{dead}-*"))
    assert live.exists() and mine.exists() and other.exists()
    assert store.stat().st_size == size and time.monotonic() - started < 30
    said = [r.getMessage() for r in caplog.records if "stale cop" in r.getMessage()]
    assert len(said) == 1 and all(name in said[0] for name in left)
    assert str(tmp_path) not in said[0]  # names, not the folder
    again = StoreManager(store)  # the other server has ended since: its copy goes too
    again.close()
    assert again.removed == [live] and mine.exists() and other.exists()
