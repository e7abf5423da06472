"""Store and ingest safety in-process (issue 12, defects 1, 4, 5, 7; process-level tests are in
tests/reliability): foreign files refused untouched, lock messages parsed, failed commits
rolled back without a second error, a stopped ingest, indexes persisted at ingest or noted."""

from __future__ import annotations

import errno
import sqlite3
import threading
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablequest.corpus import Store, StoreError, ingest
from tablequest.corpus.lexical.rank import BM25, GREP, bm25_rank, grep_rank, missing_indexes
from tablequest.corpus.storage.ingest import IngestAborted
from tablequest.corpus.storage.store import NotAStore, StoreWriteError
from tablequest.corpus.storage.storefile import describe_process, lock_holder, resolve_lock_timeout


def _csvs(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"t{i:03d}.csv").write_text(f"name,value\nrow{i},{i}\nother{i},{i * 2}\n")
    return folder


def _sqlite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER)")
    con.commit()
    con.close()


FOREIGN = {
    "x.csv": ("a text file (first line 'a,b')", lambda p: p.write_text("a,b\n1,2\n")),
    "x.parquet": (
        "a Parquet file",
        lambda p: pq.write_table(pa.table({"a": [1, 2]}), p),
    ),
    "x.sqlite": ("an SQLite database", _sqlite),
    "x.xlsx": ("a ZIP archive", lambda p: p.write_bytes(b"PK\x03\x04" + bytes(200))),
    "x.bin": ("bytes that is not a DuckDB database", lambda p: p.write_bytes(bytes(range(256)))),
    "x.duckdb": ("an empty file", lambda p: p.write_bytes(b"")),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_that_is_not_a_store_is_refused_and_untouched(
    tmp_path: Path, name: str, read_only: bool
) -> None:
    what, make = FOREIGN[name]
    path = tmp_path / name
    make(path)
    before = path.read_bytes()
    with pytest.raises(NotAStore, match="not a DuckDB store") as caught:
        Store(path, read_only=read_only)
    assert what in str(caught.value) and "left untouched" in str(caught.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no .wal beside it


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAStore, match="a directory"):
        Store(tmp_path)


def test_a_folder_that_cannot_be_created_is_one_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12, defect 8: a missing parent under read-only media raised `OSError [Errno 30]`.

    Without root (no read-only mount) the same path is taken by a parent that is a file, and
    by mkdir failing with EROFS."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the folder") as caught:
        Store(blocker / "sub" / "s.duckdb")
    assert not isinstance(caught.value, OSError) and blocker.read_text() == "x"

    def read_only(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    target = tmp_path / "ro" / "missing" / "s.duckdb"
    with pytest.raises(StoreError, match="Read-only file system") as caught:
        Store(target)
    assert str(target.parent) in str(caught.value)


def test_lock_messages_are_parsed() -> None:
    message = (
        'IO Error: Could not set lock on file "/x/s.duckdb": Conflicting lock is held in '
        "/usr/bin/python3.11 (PID 4242). See also https://duckdb.org/docs/current/connect"
    )
    assert lock_holder(duckdb.IOException(message)) == (True, 4242)
    assert lock_holder(duckdb.IOException('Could not set lock on file "/x"')) == (True, None)
    assert lock_holder(duckdb.IOException("No space left on device")) == (False, None)
    assert describe_process(None) == "another process"
    assert describe_process(99_999_999) == "PID 99999999"


def test_lock_timeout_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_lock_timeout(None) == 10.0
    monkeypatch.setenv("TABLEQUEST_LOCK_TIMEOUT", "2.5")
    assert resolve_lock_timeout(None) == 2.5
    assert resolve_lock_timeout(0) == 0.0
    monkeypatch.setenv("TABLEQUEST_LOCK_TIMEOUT", "soon")
    with pytest.raises(Exception, match="not a number of seconds"):
        resolve_lock_timeout(None)


class _FullDisk:
    """A connection whose COMMIT fails the way DuckDB's does on a full disk: the
    transaction is already gone, so a ROLLBACK after it raises "no transaction is active"."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            self._con.execute("ROLLBACK")
            raise duckdb.TransactionException(
                'TransactionContext Error: Failed to commit: Could not write file "x.wal": '
                "No space left on device"
            )
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def test_a_failed_commit_rolls_back_and_reports_the_disk(tmp_path: Path) -> None:
    folder = _csvs(tmp_path / "in", 3)
    store = Store(tmp_path / "s.duckdb")
    ingest(store, [folder])
    real = store.con
    store.con = _FullDisk(real)  # type: ignore[assignment]
    (folder / "new.csv").write_text("name,value\nnew,1\n")
    with pytest.raises(IngestAborted, match="no space left on the device") as caught:
        ingest(store, [folder])
    assert caught.value.code == "disk_full"
    assert caught.value.report.tables_unchanged == 3 and caught.value.report.tables_stored == 0
    assert "the store is as it was" in str(caught.value)
    with pytest.raises(StoreWriteError):
        store.save_blob(GREP, "x", b"blob")
    store.con = real
    assert len(store) == 3 and store.con.execute("SELECT 1").fetchone() == (1,)
    assert len(store.relations()) == 3  # the new file's relation went with its rollback
    assert not store.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE table_name = 'new' UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE view_name = 'new'"
    ).fetchall()
    report = ingest(store, [folder])  # space again: the same ingest completes
    assert (report.tables_stored, report.tables_unchanged) == (1, 3)
    store.close()


def test_a_stopped_ingest_commits_what_it_read_and_the_rerun_finishes(tmp_path: Path) -> None:
    folder = _csvs(tmp_path / "in", 30)
    stop = threading.Event()

    def progress(done: int, total: int) -> None:
        if done == 10:
            stop.set()

    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        report = ingest(store, [folder], progress=progress, stop=stop)
        assert report.stopped and report.to_json()["files_left"] == 20
        assert report.tables_stored == len(store) == 10
        assert missing_indexes(store) == [GREP, BM25]  # left for the next run
    with Store(path, read_only=True) as ro:
        hits = grep_rank(ro, [r"\brow3\b"], 3)
        assert [ro.source(h.table_id).path for h in hits] == [str(folder / "t003.csv")]
        assert len(ro.notes) == 1 and "in memory" in ro.notes[0]
    with Store(path) as store:
        again = ingest(store, [folder])
        assert (again.tables_stored, again.tables_unchanged) == (20, 10)
        assert not again.stopped and "stopped" not in again.to_json()
        assert missing_indexes(store) == []


def test_indexes_are_built_at_ingest_and_loaded_read_only(tmp_path: Path) -> None:
    folder = _csvs(tmp_path / "in", 12)
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        ingest(store, [folder])
        assert missing_indexes(store) == []
        built = [(h.table_id, round(h.score, 9)) for h in bm25_rank(store, "row7 other7", 3)]
    with Store(path, read_only=True) as ro:
        loaded = [(h.table_id, round(h.score, 9)) for h in bm25_rank(ro, "row7 other7", 3)]
        assert loaded == built and ro.notes == []
    with Store(path) as store:  # an index saved by an older layout is rebuilt, not trusted
        store.save_blob(BM25, store.fingerprint(), b"not an npz")
    with Store(path) as store:
        assert [
            (h.table_id, round(h.score, 9)) for h in bm25_rank(store, "row7 other7", 3)
        ] == built
        assert store.has_blob(BM25, store.fingerprint()) and store.notes == []


def test_a_no_op_reingest_adds_missing_indexes(tmp_path: Path) -> None:
    folder = _csvs(tmp_path / "in", 4)
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [folder], index=False)
        assert missing_indexes(store) == [GREP, BM25]
        report = ingest(store, [folder])
        assert report.tables_stored == 0 and missing_indexes(store) == []


def test_duckdb_never_draws_on_stdout(tmp_path: Path) -> None:
    """DuckDB's progress bar (queries over 2 s) went to stdout, into `ingest --json`."""
    for store in (Store(), Store(tmp_path / "s.duckdb")):
        with store:
            setting = store.con.execute("SELECT current_setting('enable_progress_bar')")
            assert setting.fetchone() == (False,)
