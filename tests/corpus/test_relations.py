"""Issue 37: every stored table is a typed DuckDB relation; SQL over them is read-only for
real; paging, filters, facets and exports run on the relation; older stores migrate."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import shutil
from pathlib import Path

import duckdb
import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.storage import browse
from tablequest.corpus.storage.relations import column_names, sql_identifier
from tablequest.corpus.storage.shards import ShardedStore
from tablequest.corpus.storage.sql import SqlError, SqlRefused, SqlRunner
from tablequest.corpus.storage.store import StoreError, StoreOutdated
from tablequest.errors import BadValue
from tablequest.table import Table

FIXTURES = Path(__file__).parent / "fixtures"


def _write(folder: Path) -> None:
    (folder / "fuel_prices.csv").write_text(
        "Country,Size / Depth m,Price,Date,When,Code,Order\n"
        'Germany,12,"1,85",2024-03-01,2024-03-01 10:30,007,a\n'
        'France,,"1,92",2024-03-02,2024-03-02 11:00,012,b\n'
        'Italy,7,"2,01",2024-03-03,2024-03-03 09:15,100,c\n',
        encoding="utf-8",
    )
    sub = folder / "more"
    sub.mkdir()
    (sub / "fuel_prices.csv").write_text("a,b\n1,x\n2,\n", encoding="utf-8")
    (folder / "tables.csv").write_text("select,2019\n1,2\n", encoding="utf-8")


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rel")
    _write(folder)
    path = folder / "store.duckdb"
    with Store(path) as store:
        report = ingest(store, [folder], index=False)
        assert report.tables_stored == 3
    return path


def _by_name(store: Store) -> dict[str, str]:
    return {r.sql_name: r.table_id for r in store.relations()}


def test_names_are_readable_unique_and_sql_safe() -> None:
    assert sql_identifier("Size / Depth m") == "size_depth_m"
    assert sql_identifier("  Zürich—Größe (km²) ") == "zürich_größe_km2"
    table = Table.from_rows(
        [["Size / Depth m", "", "order", "2019", "Size / Depth m", "_row"], ["1"] * 6]
    )
    assert column_names(table) == ["size_depth_m", "c2", "order_", "_2019", "size_depth_m_2", "row"]


def test_relations_are_typed_and_duckdb_reads_them(store_path: Path) -> None:
    with Store(store_path, read_only=True) as store:
        names = _by_name(store)
        assert set(names) == {"fuel_prices", "fuel_prices_2", "tables_2"}
        relation = store.relation(names["fuel_prices"])
    types = {c.name: c.type for c in relation.columns}
    assert types == {
        "country": "VARCHAR", "size_depth_m": "DOUBLE", "price": "DOUBLE", "date": "DATE",
        "when_": "TIMESTAMP", "code": "VARCHAR", "order_": "VARCHAR",
    }  # fmt: skip
    assert relation.column("Size / Depth m").header == ("Size / Depth m",)
    con = duckdb.connect(str(store_path), read_only=True)
    try:
        rows = con.sql("SELECT _row, country, price, date, code FROM fuel_prices ORDER BY _row")
        assert rows.fetchall() == [
            (0, "Germany", 1.85, dt.date(2024, 3, 1), "007"),
            (1, "France", 1.92, dt.date(2024, 3, 2), "012"),
            (2, "Italy", 2.01, dt.date(2024, 3, 3), "100"),
        ]
        assert con.execute("SELECT size_depth_m FROM fuel_prices WHERE _row = 1").fetchone() == (
            None,
        )
        assert con.execute("SELECT select_, _2019 FROM tables_2").fetchone() == (1, 2)
    finally:
        con.close()


def test_reingest_keeps_the_name_and_a_changed_file_replaces_its_relation(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        ingest(store, [tmp_path / "a.csv"], index=False)
        (tmp_path / "b.csv").write_text("x\n5\n", encoding="utf-8")
        ingest(store, [tmp_path / "b.csv"], index=False)
        (tmp_path / "a.csv").write_text("x,y,z\n1,2,3\n4,5,6\n", encoding="utf-8")
        ingest(store, [tmp_path / "a.csv"], index=False)
        names = _by_name(store)
        assert set(names) == {"a", "b"}
        assert store.con.execute("SELECT count(*), sum(z) FROM a").fetchone() == (2, 9)
        # small tables are views over one shared table (no 16 KiB block each); the old
        # relation of a.csv is gone, and so are its rows
        assert store.con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
        ).fetchone() == (2,)
        assert store.con.execute("SELECT count(*) FROM tq_small").fetchone() == (2,)
        assert store.format_version == 2
    assert path.stat().st_size < 2_000_000  # 16 KiB blocks: not 256 KiB per relation


def test_sql_answers_and_refuses_everything_else(store_path: Path) -> None:
    before = hashlib.sha256(store_path.read_bytes()).hexdigest()
    with SqlRunner(store_path) as runner:
        result = runner.run("SELECT country, price FROM fuel_prices WHERE price > 1.9 ORDER BY 2")
        assert result.rows == [("France", 1.92), ("Italy", 2.01)]
        assert result.columns == [("country", "VARCHAR"), ("price", "DOUBLE")]
        assert runner.run("SELECT * FROM range(50)", limit=10).truncated_by == "rows"
        refused = [
            "DELETE FROM fuel_prices",
            "CREATE TABLE x AS SELECT 1",
            "SELECT * FROM read_csv('/etc/passwd')",
            "SELECT * FROM tables",
            "SELECT path FROM store.main.tables",
            "WITH tables AS (SELECT 1) SELECT * FROM tables",
            "SELECT * FROM duckdb_databases()",
            "SELECT current_setting('temp_directory')",
            "SELECT 1; SELECT 2",
            "ATTACH '/tmp/x.duckdb' AS x",
            "SET enable_external_access = true",
            "COPY fuel_prices TO '/tmp/out.csv'",
            "INSTALL httpfs",
        ]
        for query in refused:
            with pytest.raises(SqlRefused):
                runner.run(query)
        with pytest.raises(SqlRefused, match="`tablequest tables`"):
            runner.run("SHOW TABLES")
        with pytest.raises(SqlRefused, match="INSTALL refused"):
            runner.run("-- a comment\nINSTALL httpfs")
        with pytest.raises(SqlRefused, match="Did you mean fuel_prices"):
            runner.run("SELECT * FROM fuel_price")
        with pytest.raises(SqlError, match=r"Candidate bindings.*country.*line 1, column 8"):
            runner.run("SELECT countr FROM fuel_prices")
        with pytest.raises(SqlError, match="time limit"):
            runner.run("SELECT count(*) FROM range(100000000) a, range(100000000) b", timeout=0.5)
    assert hashlib.sha256(store_path.read_bytes()).hexdigest() == before


def test_sql_refuses_a_sharded_corpus(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n1\n", encoding="utf-8")
    manifest = tmp_path / "corpus.json"
    with ShardedStore(manifest, shards=2) as sharded:
        ingest(sharded, [tmp_path / "a.csv"], index=False)
    with pytest.raises(StoreError, match="sharded corpus"):
        SqlRunner(manifest)


def test_pages_sort_filter_facets(store_path: Path) -> None:
    with Store(store_path, read_only=True) as store:
        tid = _by_name(store)["fuel_prices"]
        page = browse.page(store, tid, offset=1, limit=1, sort="Price", descending=True)
        assert (page.total, page.row_ids) == (3, [1])
        assert page.values[0][0] == "France"
        where = [browse.parse_filter("price >= 1.9"), browse.parse_filter("country ~ AN")]
        assert browse.page(store, tid, where=where).row_ids == [1]
        assert browse.page(store, tid, where=[browse.parse_filter("size_depth_m null")]).total == 1
        assert browse.facets(store, tid, "order_", k=2) == [("a", 1), ("b", 1)]
        empty_text = [browse.parse_filter("b null")]  # an empty text cell has no value
        assert browse.page(store, _by_name(store)["fuel_prices_2"], where=empty_text).row_ids == [1]
        with pytest.raises(BadValue, match="YYYY-MM-DD"):
            browse.page(store, tid, where=[browse.parse_filter("date > 15/02/2024")])
        with pytest.raises(BadValue, match="not a double"):
            browse.page(store, tid, where=[browse.parse_filter("price > cheap")])
        with pytest.raises(KeyError, match="columns: country"):
            browse.page(store, tid, sort="nope")
        sorted_view = store.get(tid).take_rows([2, 0])
        assert [row[0] for row in sorted_view.body] == ["Italy", "Germany"]
        assert sorted_view.header_rows == store.get(tid).header_rows


def test_exports_are_typed_or_raw(store_path: Path) -> None:
    import openpyxl
    import pyarrow.parquet as pq

    with Store(store_path, read_only=True) as store:
        tid = _by_name(store)["fuel_prices"]
        csv = browse.export(store, tid, "csv", offset=2, limit=1).decode()
        assert csv.splitlines()[1].startswith("Italy,7,2.01,2024-03-03")
        raw = browse.export(store, tid, "csv", raw=True, limit=1).decode()
        assert '"1,85"' in raw and ",007," in raw
        parquet = pq.read_table(io.BytesIO(browse.export(store, tid, "parquet")))
        assert parquet.column("Price").to_pylist() == [1.85, 1.92, 2.01]
        book = openpyxl.load_workbook(io.BytesIO(browse.export(store, tid, "xlsx")))
        assert next(book.active.iter_rows(min_row=2, values_only=True))[2] == 1.85


def test_a_store_written_before_relations_is_migrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.duckdb"
    with gzip.open(FIXTURES / "store_format1.duckdb.gz") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)  # written by the store code of main before issue 37
    with Store(path, read_only=True) as old:
        assert old.format_version == 1 and len(old) == 1
        table = old.get(old.table_ids()[0])
        with pytest.raises(StoreOutdated, match="tablequest migrate"):
            old.relation(old.table_ids()[0])
    with pytest.raises(StoreOutdated, match="tablequest migrate"):
        SqlRunner(path)
    with Store(path) as store:
        assert any("migrated to format 2" in n for n in store.notes)
        assert "migrated to format 2 (typed SQL relations" in capsys.readouterr().err
        assert store.get(store.table_ids()[0]) == table  # nothing lost or changed
        assert store.format_version == 2
    assert not list(tmp_path.glob("*.migrating*"))
    with SqlRunner(path) as runner:
        assert runner.run("SELECT country, price_eur FROM fuel_prices").rows == [
            ("Germany", 1.85),
            ("France", 1.92),
        ]


def test_true_false_columns_are_boolean_and_keep_their_text(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from tablequest.cli import app

    (tmp_path / "flags.csv").write_text(
        "name,active,answer\nann,True,yes\nbob,false,no\ncy,,yes\ndee,FALSE,no\n",
        encoding="utf-8",
    )
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        ingest(store, [tmp_path / "flags.csv"], index=False)
        (tid,) = store.table_ids()
        types = {c.name: c.type for c in store.relation(tid).columns}
        assert types == {"name": "VARCHAR", "active": "BOOLEAN", "answer": "VARCHAR"}
        page = browse.page(store, tid, where=[browse.parse_filter("active = false")])
        assert page.row_ids == [1, 3]
        with pytest.raises(BadValue, match="true or false"):
            browse.page(store, tid, where=[browse.parse_filter("active = maybe")])
    with SqlRunner(path) as runner:
        assert runner.run("SELECT name FROM flags WHERE active").rows == [("ann",)]
        assert runner.run("SELECT count(*) FROM flags WHERE NOT active").rows == [(2,)]
    runner = CliRunner()
    shown = runner.invoke(app, ["show", tid, "-s", str(path), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    assert [r["active"] for r in json.loads(shown.stdout)] == [True, False, None, False]
    readable = runner.invoke(app, ["show", tid, "-s", str(path)])
    assert readable.exit_code == 0, readable.output
    assert "True" in readable.stdout and "FALSE" in readable.stdout  # the cells as written
    raw = runner.invoke(app, ["show", tid, "-s", str(path), "--format", "csv", "--raw"])
    assert "ann,True,yes" in raw.stdout


def test_small_tables_are_views_with_the_same_typed_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.corpus.storage import relations
    from tablequest.corpus.storage.tablerows import table_row

    table = Table.from_rows(
        [["n", "x", "day", "at", "ok", "name"],
         ["1", "1.5", "2024-03-01", "2024-03-01 10:30", "true", "O'Neil \"Q\""],
         ["2", "", "2024-03-02", "2024-03-02 11:00:05.25", "FALSE", "Zürich"],
         ["3", "1e20", "", "", "", ""]]
    )  # fmt: skip
    rows = {}
    for small in (True, False):
        monkeypatch.setattr(relations, "SMALL_CELLS", 4096 if small else 0)
        with Store() as store:
            store.add_table(table, key="k")
            (rel,) = store.relations()
            kinds = store.con.execute(
                "SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [rel.sql_name]
            ).fetchone()
            assert kinds == (int(small),)
            described = store.con.execute(f"DESCRIBE {rel.sql_name}").fetchall()
            rows[small] = (
                [(r[0], r[1]) for r in described],
                store.con.execute(f"SELECT * FROM {rel.sql_name} ORDER BY _row").fetchall(),
            )
    assert rows[True] == rows[False]
    assert [t for _, t in rows[True][0]] == [
        "BIGINT", "BIGINT", "DOUBLE", "DATE", "TIMESTAMP", "BOOLEAN", "VARCHAR"
    ]  # fmt: skip
    monkeypatch.undo()
    # many small tables: no 16 KiB block each (300 tables took 300 blocks as DuckDB tables)
    path = tmp_path / "many.duckdb"
    with Store(path) as store:
        batch = []
        for i in range(300):
            small_table = Table.from_rows([["a", "b"], [str(i), f"v{i}"]])
            key = f"/data/t{i}.csv"
            batch.append((key, [table_row(small_table, path=key, file_hash=str(i), idx=0)], False))
        assert store.put_files(batch) == []
        assert store.con.execute("SELECT a FROM t299").fetchall() == [(299,)]
    assert path.stat().st_size < 1_000_000  # 0.4 MB; as DuckDB tables 5.4 MB


def test_a_value_with_spaces_at_its_ends_filters_as_written_in_json(tmp_path: Path) -> None:
    """A facet of " padded " linked to ``col =  padded `` and found no row: the filter trims
    its value (a review found it); a value in JSON quotes is that exact string."""
    from tablequest.serve.rows import facet_filter

    (tmp_path / "p.csv").write_text('name,n\n" padded ",1\npadded,2\n"""q""",3\n')
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [tmp_path / "p.csv"], index=False)
        (tid,) = store.table_ids()
        for value, row in ((" padded ", 0), ("padded", 1), ('"q"', 2)):
            link = facet_filter("name", value)
            assert browse.page(store, tid, where=[browse.parse_filter(link)]).row_ids == [row]
    assert browse.parse_filter('name = " x "').value == " x "
    assert browse.parse_filter('name = "x').value == '"x'  # not a JSON string: as written
