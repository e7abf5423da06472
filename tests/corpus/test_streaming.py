"""Issue 37: big plain CSV/TSV files are loaded by DuckDB (Parquet by pyarrow, SQLite by
sqlite3 in batches), and the result is the same table the structure-aware reader makes from
the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.storage import browse, streaming
from tablequest.corpus.storage.reading import read_file
from tablequest.corpus.storage.relations import RAW_SUFFIX
from tablequest.table import ReadBudget, read_tables

PLAIN = {
    "quotes.csv": 'name,note,amount\n"Smith, J.","said ""hi""",12\nLee,,"1,234"\n"","x",-3\n',
    "multiline.csv": 'id,text\n1,"line one\nline two"\n2,plain\n',
    "crlf.csv": "a,b,c\r\n1,2,3\r\n4, five ,6\r\n",
    "semicolon.csv": "Land;Preis\nDeutschland;1,85\nÖsterreich;1,79\n",
    "tabs.tsv": "city\tdate\tvalue\nZürich\t2024-03-01\t3.5\nBern\t2024-03-02\t\n",
    "trailing.csv": "a,b,c\n1,,\n2,x,\n",
}
NOT_PLAIN = {
    "titled.csv": "Average fuel prices by country March 2024\nCountry,Price\nDE,1.85\nFR,1.92\n",
    "footer.csv": "Country,Price\nDE,1.85\nFR,1.92\nSource: national statistics office\n",
    "blank.csv": "a,b\n1,2\n\n3,4\n",
    "escaped.csv": 'a,b\n"say \\"x\\"",2\n',
    "bom.csv": "\ufeffa,b\n1,2\n",
    "ragged.csv": "a,b\n1,2,3\n",
}


@pytest.fixture()
def stream_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)


def _raw_objects(store: Store) -> tuple[int]:
    """How many tables and views the store's `tq_raw` schema holds."""
    found = store.con.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'tq_raw') + "
        "(SELECT count(*) FROM duckdb_views() WHERE schema_name = 'tq_raw')"
    ).fetchone()
    assert found is not None
    return (int(found[0]),)


def _store(folder: Path, names: dict[str, str], path: Path) -> Store:
    for name, text in names.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = Store(path)
    report = ingest(store, [folder / n for n in names], index=False)
    assert not report.files_failed, report.files_failed
    return store


def test_plain_files_are_streamed_and_equal_the_usual_reading(
    tmp_path: Path, stream_everything: None
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name, text in PLAIN.items():
        path = folder / name
        path.write_text(text, encoding="utf-8", newline="")
        outcome = read_file(str(path), None)
        assert outcome[0] == "stream", name
        # DuckDB reads it in parallel unless a quoted field spans lines (then one thread)
        assert outcome[1].parallel == (name != "multiline.csv"), name
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [folder], index=False)
        for name in PLAIN:
            path = str((folder / name).resolve())
            (table_id,) = store.ids_for_path(path)
            expected = read_tables(path)[0]
            got = store.get(table_id)
            assert got.cells == expected.cells, name
            assert (got.row_ids, got.col_ids) == (expected.row_ids, expected.col_ids)
            assert got.source.format == expected.source.format
            relation = store.relation(table_id)
            again = Store()
            again.add_table(expected, key="k")
            assert [(c.name, c.type) for c in relation.columns] == [
                (c.name, c.type) for c in again.relation(again.table_ids()[0]).columns
            ], name
            page = store.get_rows(table_id, [1, 0])
            assert page.body == (expected.body[1], expected.body[0])
        # only the text the relation does not give back is stored again: "1,234" (BIGINT 1234)
        (quotes,) = store.ids_for_path(str((folder / "quotes.csv").resolve()))
        kept = store.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'tq_raw' "
            "AND table_name = ? ORDER BY column_index",
            [quotes + RAW_SUFFIX],
        ).fetchall()
        assert kept == [("_row",), ("c2",)]


def test_files_a_reader_would_repair_or_frame_are_read_the_usual_way(
    tmp_path: Path, stream_everything: None
) -> None:
    for name, text in NOT_PLAIN.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert read_file(str(path), None)[0] != "stream", name


@pytest.mark.parametrize(
    ("wide", "streamed"), [("9,9,9", False), ("9,9,", False), ('9,9,""', False), ("9", True)]
)
def test_a_file_duckdb_refuses_falls_back_to_the_reader(
    tmp_path: Path,
    stream_everything: None,
    monkeypatch: pytest.MonkeyPatch,
    wide: str,
    streamed: bool,
) -> None:
    # the sampled head and tail look plain; a row wider than the header in the middle (an
    # empty extra field too, which DuckDB alone would drop) sends it to the usual reader
    lines = ["a,b"] + [f"{i},{i}" for i in range(3000)]
    lines[1500] = wide
    path = tmp_path / "middle.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(streaming, "_HEAD_BYTES", 200)
    monkeypatch.setattr(streaming, "_TAIL_BYTES", 200)
    assert read_file(str(path), None)[0] == "stream"
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False)
        assert report.tables_stored == 1 and not report.files_failed
        table = store.get(store.table_ids()[0])
        assert table == read_tables(str(path))[0]
        data = store.con.execute("SELECT data FROM tables").fetchone()[0]
        assert ('"body"' in data) is streamed  # a short row is padded the same way by both


def test_streamed_table_is_indexed_boundedly_and_replaced_cleanly(
    tmp_path: Path, stream_everything: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "SAMPLE_ROWS", 5)
    path = tmp_path / "big.csv"
    rows = [f"{i},city {i % 7},{i * 1.5}" for i in range(1000)]
    path.write_text("txn,city,amount\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [path])
        (table_id,) = store.table_ids()
        text, plain = store.text(table_id), store.plain(table_id)
        assert text.count("\n") <= 6  # header + the sample rows
        assert "city 6" in plain  # the most frequent values of a text column
        assert store.shape(table_id) == (1000, 3)
        stored = store.con.execute(
            "SELECT (SELECT count(*) FROM duckdb_views() WHERE schema_name = 'tq_raw'), "
            "(SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'tq_raw')"
        ).fetchall()
        assert stored == [(1, 0)]  # every column's text is the relation's: none stored twice
        page = browse.page(store, table_id, offset=997, limit=3)
        assert page.row_ids == [997, 998, 999] and page.values[-1] == (999, "city 5", 1498.5)
        assert store.subset([table_id]).get(table_id) == store.get(table_id)
        monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1 << 30)
        path.write_text("txn,city\n1,x\n", encoding="utf-8")  # read as usual now
        ingest(store, [path], index=False)
        assert store.shape(table_id) == (1, 2)
        assert _raw_objects(store) == (0,)


def test_a_parquet_file_is_streamed_with_the_readers_text(
    tmp_path: Path, stream_everything: None
) -> None:
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "mixed.parquet"
    table = pa.table(
        {
            "city": ["Zürich", "Bern", None, "Bern"],
            "n": [1, None, 3, 4],
            "x": [0.1 + 0.2, float("nan"), 2.0, -0.0],
            "ok": [True, False, None, True],
            "at": [dt.datetime(2024, 3, 1), dt.datetime(2024, 3, 2, 10, 30), None, None],
            "tags": [["a"], [], None, ["b", "c"]],
        }
    )
    pq.write_table(table, path)
    assert read_file(str(path), None)[0] == "stream"
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False)
        assert report.tables_stored == 1 and not report.files_failed
        (table_id,) = store.table_ids()
        assert '"body"' in store.con.execute("SELECT data FROM tables").fetchone()[0]
        expected = read_tables(str(path))[0]
        assert store.get(table_id).cells == expected.cells
        assert store.get(table_id).source.format == "parquet"
        types = [c.type for c in store.relation(table_id).columns]
        assert types == ["VARCHAR", "DOUBLE", "DOUBLE", "BOOLEAN", "TIMESTAMP", "VARCHAR"]


def test_a_parquet_file_over_the_budget_is_refused_as_before(
    tmp_path: Path, stream_everything: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("TABLEQUEST_READ_MAX_CELLS", "10")
    monkeypatch.setenv("TABLEQUEST_READ_FREE_CELLS", "10")
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"a": list(range(20)), "b": list(range(20))}), path)
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False)
        assert report.tables_stored == 0
        assert (
            "max_cells" in report.files_failed[0].reason or "cells" in report.files_failed[0].reason
        )


def test_duckdbs_load_of_a_streamed_file_keeps_the_reading_time(
    tmp_path: Path, stream_everything: None
) -> None:
    """`max_seconds` bounds DuckDB's own load (a timer interrupts it): past it the file is
    skipped naming the limit, nothing of it is written, and the store reads on."""
    path = tmp_path / "rows.csv"
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(20_000)), encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False, budget=ReadBudget(max_seconds=1e-6))
        assert report.tables_stored == 0 and len(report.files_failed) == 1, report
        assert "max_seconds" in str(report.files_failed[0])
        assert store.table_ids() == [] and store.relations() == []
        assert _raw_objects(store) == (0,)
        assert ingest(store, [path], index=False).tables_stored == 1  # the default budget
        (table_id,) = store.table_ids()
        assert store.shape(table_id) == (20_000, 2)


def _sqlite_file(path: Path) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE sales (id INTEGER, item TEXT, price REAL, paid TEXT, note BLOB)")
    rows = [
        (1, "tea", 2.5, "true", None),
        (2, "cake", None, "FALSE", b"x"),
        (3, None, 0.1 + 0.2, "true", 7),  # a column of mixed kinds in a later batch
        (4, "jam", 3.0, "", "text"),
        (5, "tea", 1e20, "false", None),
    ]
    con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?)", rows)
    con.execute('CREATE TABLE "empty one" (a TEXT, b INTEGER)')
    con.commit()
    con.close()


def test_an_sqlite_database_is_streamed_in_batches_typed_like_the_usual_reading(
    tmp_path: Path, stream_everything: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.table.readers import sqlite as sqlite_reader

    path = tmp_path / "shop.db"
    _sqlite_file(path)
    expected = read_tables(str(path))
    usual = Store()
    for i, table in enumerate(expected):
        usual.add_table(table, key=f"k{i}")

    def no_cell_lists(*args: object) -> None:
        raise AssertionError("an SQLite table was read as a Python cell list")

    monkeypatch.setattr(sqlite_reader, "_table", no_cell_lists)
    monkeypatch.setattr(sqlite_reader, "_BATCH_ROWS", 2)
    assert read_file(str(path), None)[0] == "stream"
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False)
        assert report.tables_stored == 2 and not report.files_failed, report
        ids = store.ids_for_path(str(path.resolve()))
        for i, (table_id, want) in enumerate(zip(ids, expected, strict=True)):
            got = store.get(table_id)
            assert got.cells == want.cells and got.row_ids == want.row_ids
            assert (got.source.format, got.source.sheet) == ("sqlite", want.source.sheet)
            types = [(c.name, c.type) for c in store.relation(table_id).columns]
            assert types == [(c.name, c.type) for c in usual.relation(usual.table_ids()[i]).columns]
        assert '"body"' in store.con.execute("SELECT data FROM tables LIMIT 1").fetchone()[0]
        assert [c.type for c in store.relation(ids[0]).columns] == [
            "BIGINT", "VARCHAR", "DOUBLE", "BOOLEAN", "VARCHAR"
        ]  # fmt: skip
        paid = "SELECT id FROM shop_sales WHERE paid ORDER BY id"
        assert store.con.execute(paid).fetchall() == [(1,), (3,)]
        assert store.get_rows(ids[0], [4]).body == (("5", "tea", "1e+20", "false", ""),)
        assert store.shape(ids[1]) == (0, 2)


def test_an_sqlite_database_over_the_budget_is_refused_as_before(
    tmp_path: Path, stream_everything: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLEQUEST_READ_MAX_CELLS", "10")
    monkeypatch.setenv("TABLEQUEST_READ_FREE_CELLS", "10")
    path = tmp_path / "shop.db"
    _sqlite_file(path)
    assert read_file(str(path), None)[0] == "failed"
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path], index=False)
        assert report.tables_stored == 0 and "cells" in report.files_failed[0].reason


def test_the_index_builders_imports_are_joined_before_the_ingest_returns(tmp_path: Path) -> None:
    import sys
    import threading

    (tmp_path / "a.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    with Store() as store:
        assert ingest(store, [tmp_path / "a.csv"]).tables_stored == 1
    assert "bm25s" in sys.modules
    assert not [t for t in threading.enumerate() if t.name == "tq-preload"]


def test_a_quoted_line_break_is_found_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # such a file is read by one thread (DuckDB's parallel reader refuses it): `parallel`
    monkeypatch.setattr(streaming, "_CHUNK_BYTES", 4)
    found = streaming._quoted_line_break
    assert not found(b"a,b\n1,2\n") and not found(b'a,b\n"x ""y""",2\n"z",3\n')
    assert found(b'a,b\n"x\ny",2\n') and found(b'a,b\n"x ""\ny""",2\n')
    assert found(b'a,b,c,d\n1,2,3,"4\n5"\n')  # the quote opens in one chunk, the break in the next
