"""Store and ingest: atomic files, unchanged files, failures named, opaque ids."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import duckdb
import pytest

from tablequest.corpus import Store, StoreError, ingest
from tablequest.corpus.lexical.rank import GREP, bm25_rank, grep_index, grep_rank, matched_rows
from tablequest.corpus.storage.ingest import read_file, walk
from tablequest.corpus.storage.store import table_id_for
from tablequest.table import Table

ingest_mod = importlib.import_module("tablequest.corpus.storage.ingest")
reading = importlib.import_module("tablequest.corpus.storage.reading")


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write(root, "teams.csv", "Year,League\n2001,USL A-League\n2004,USL A-League\n")
    write(root, "sub/cities.md", "| City | Rain |\n|---|---|\n| Zurich | 110 |\n| Oslo | 81 |\n")
    write(
        root,
        "two.html",
        "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"
        "<table><tr><th>b</th></tr><tr><td>2</td></tr></table>",
    )
    write(root, "junk.xlsx", b"\x00\x01\x02 not a zip at all")
    write(root, ".hidden.csv", "x\n1\n")
    return root


def test_ingest_reports_and_is_idempotent(corpus: Path) -> None:
    store = Store()
    report = ingest(store, [corpus])
    assert report.files_seen == 4  # hidden file skipped
    assert report.tables_stored == 4
    assert [f.path for f in report.files_failed] == [str(corpus / "junk.xlsx")]
    assert report.files_failed[0].reason
    assert report.ok
    again = ingest(store, [corpus])
    assert (again.tables_stored, again.tables_unchanged) == (0, 4)
    assert len(store) == 4
    payload = again.to_json()
    assert set(payload) == {
        "files_seen", "tables_stored", "tables_unchanged", "files_failed", "files_warned"
    }  # fmt: skip


def test_changed_file_replaces_its_tables_atomically(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    path = str((corpus / "teams.csv").resolve())
    write(corpus, "teams.csv", "Year,League\n2009,USSF D2\n")
    report = ingest(store, [corpus])
    assert report.tables_stored == 1 and report.tables_unchanged == 3
    [tid] = store.ids_for_path(path)
    assert store.get(tid).body == (("2009", "USSF D2"),)


def test_file_that_becomes_unreadable_keeps_old_tables(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    write(corpus, "teams.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    report = ingest(store, [corpus])
    assert any(f.path.endswith("teams.csv") for f in report.files_failed)
    assert len(store) == 4


def test_ids_are_opaque_and_sources_kept(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    for tid in store.table_ids():
        assert "teams" not in tid and "csv" not in tid and len(tid) == 16
        src = store.source(tid)
        assert src.path and Path(src.path).exists()
    html = str((corpus / "two.html").resolve())
    ids = store.ids_for_path(html)
    assert ids == [table_id_for(html, 0), table_id_for(html, 1)]
    assert [store.source(i).sheet for i in ids] == ["table 1", "table 2"]


def test_get_unknown_id_names_it() -> None:
    store = Store()
    with pytest.raises(KeyError, match="nope"):
        store.get("nope")
    with pytest.raises(KeyError):
        store.source("nope")
    with pytest.raises(KeyError):
        store.text("nope")
    with pytest.raises(KeyError):
        store.plain("nope")
    with pytest.raises(ValueError):
        store.column("data")


def test_file_store_persists_and_reopens(tmp_path: Path, corpus: Path) -> None:
    path = tmp_path / "s" / "c.duckdb"
    with Store(path) as store:
        ingest(store, [corpus])
        hits = grep_rank(store, [r"\busl\b"], 3)
    with Store(path) as again:
        assert len(again) == 4
        assert grep_rank(again, [r"\busl\b"], 3) == hits
        assert again.load_blob(GREP, again.fingerprint()) is not None
    with Store(path, read_only=True) as ro:
        assert len(ro) == 4


def test_store_errors_are_clear(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_text("definitely not duckdb")
    with pytest.raises(StoreError, match=r"is a text file .*not a DuckDB store"):
        Store(bogus)
    with pytest.raises(StoreError, match="no store"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_walk_handles_symlink_loops_and_missing(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, "a/t.csv", "x\n1\n")
    os.symlink(root, root / "a" / "loop")
    found = list(walk([root, tmp_path / "missing"]))
    files = [p for p, problem in found if problem is None]
    assert files == [root / "a" / "t.csv"]
    assert [problem for _, problem in found if problem] == ["no such file or directory"]


def test_read_file_outcomes(tmp_path: Path) -> None:
    good = write(tmp_path, "t.csv", "a,b\n1,2\n")
    status, (rows, warnings) = read_file(str(good), None)
    assert status == "stored" and len(rows) == 1 and warnings == []
    assert read_file(str(good), rows[0][2]) == ("unchanged", None)
    assert read_file(str(tmp_path / "gone.csv"), None)[0] == "failed"
    empty = write(tmp_path, "e.csv", "")
    assert read_file(str(empty), None) == ("failed", read_file(str(empty), None)[1])


def test_parallel_ingest_matches_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "many"
    for i in range(70):
        write(root, f"t{i:02d}.csv", f"id,value\n{i},v{i}\n")
    serial = Store()
    monkeypatch.setattr(reading, "PARALLEL_THRESHOLD", 10_000)
    ingest(serial, [root])
    monkeypatch.setattr(reading, "PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(ingest_mod, "BATCH_FILES", 16)
    parallel = Store()
    report = ingest(parallel, [root], workers=2)
    assert report.tables_stored == 70
    assert serial.table_ids() == parallel.table_ids()


def test_failed_batch_is_retried_file_by_file(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()
    good = Table.from_rows([["a"], ["1"]])
    from tablequest.corpus.storage.store import table_row

    row = table_row(good, path="/g", file_hash="h", idx=0)
    bad = (*row[:9], "not-an-int", *row[10:])  # n_cols must be an integer
    failed = store.put_files([("/g", [row], False), ("/b", [bad], False)])
    assert failed == ["/b"]
    assert store.ids_for_path("/g") and not store.ids_for_path("/b")


def test_add_table_is_keyed_and_idempotent() -> None:
    store = Store()
    t = Table.from_rows([["City", "Rain"], ["Oslo", "81"]])
    tid = store.add_table(t, key="ds/cities")
    assert store.add_table(t, key="ds/cities") == tid and len(store) == 1
    t2 = Table.from_rows([["City", "Rain"], ["Bergen", "200"]])
    assert store.add_table(t2, key="ds/cities") == tid
    assert store.get(tid).body == (("Bergen", "200"),)
    assert [i for i, _ in store.iter_tables()] == [tid]


def test_rank_and_bm25_with_matched_rows(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    hits = grep_rank(store, [r"\busl\b", "2004"], 5)
    assert hits[0].score == 1.0
    assert hits[0].matched_rows == {r"\busl\b": [0, 1], "2004": [1]}
    assert grep_rank(store, ["zzzz"], 5) == []
    bm = bm25_rank(store, "rain in Oslo", 2)
    assert bm and store.source(bm[0].table_id).path.endswith("cities.md")
    assert bm25_rank(store, "the of", 2) == []
    assert matched_rows(store, hits[0].table_id, ["League"], limit=1) == {"League": [0]}


def test_index_is_rebuilt_after_changes(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    assert grep_rank(store, ["Bergen"], 3) == []
    write(corpus, "new.csv", "City\nBergen\n")
    ingest(store, [corpus])
    assert len(grep_rank(store, ["Bergen"], 3)) == 1


def test_embeddings_cached_by_content(corpus: Path) -> None:
    from tablequest.corpus.dense.encoders import HashEncoder
    from tablequest.corpus.dense.index import dense_rank, ensure_embeddings

    class Counting(HashEncoder):
        calls = 0

        def encode(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().encode(texts)

    store = Store()
    ingest(store, [corpus])
    enc = Counting()
    _, matrix = ensure_embeddings(store, enc)
    assert matrix.shape == (4, enc.dim) and Counting.calls == 4
    hits = dense_rank(store, "Zurich rain", 1, enc)
    assert store.source(hits[0].table_id).path.endswith("cities.md")
    assert Counting.calls == 5  # only the query was encoded again
    rows = store.con.execute("SELECT count(*) FROM embeddings").fetchone()
    assert rows == (4,)
    assert dense_rank(Store(), "x", 3, enc) == []


def test_database_is_valid_json(corpus: Path) -> None:
    store = Store()
    ingest(store, [corpus])
    for (data,) in store.con.execute("SELECT data FROM tables").fetchall():
        Table.from_dict(json.loads(data))
    assert isinstance(store.con, duckdb.DuckDBPyConnection)


def test_grep_blob_of_another_layout_is_rebuilt(tmp_path: Path) -> None:
    import io

    import numpy as np

    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.add_table(Table.from_rows([["team", "year"], ["usl", "2004"]]), key="k")
        buf = io.BytesIO()
        np.savez(buf, offsets=np.zeros(5, dtype=np.int64), postings=np.zeros(0, dtype=np.int32))
        store.save_blob(GREP, store.fingerprint(), buf.getvalue())
    with Store(path) as again:
        assert [h.score for h in grep_rank(again, [r"\busl\b"], 1)] == [1.0]
        assert again.load_blob(GREP, again.fingerprint()) == grep_index(again).arrays_blob()
