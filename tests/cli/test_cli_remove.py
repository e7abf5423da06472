"""Issue 39, table management: `tablequest rm ID...` removes tables from every index and the
typed relation (unknown ids: an error naming them, nothing removed), `ingest --prune` drops
the tables of files gone from disk, `tables` shows when each table was ingested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import (
    BM25,
    GREP,
    Store,
    UnknownTables,
    ingest_corpus,
    open_corpus,
    remove_tables,
    search,
)

runner = CliRunner()


def _folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cities.csv").write_text("city,population\nAmsterdam,900\nRotterdam,650\n")
    (data / "rivers.csv").write_text("river,length km\nVarna,120\nRhine,1230\n")
    return data


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def _ids(store: Path) -> dict[str, str]:
    code, out = _run("tables", "-s", str(store), "--json")
    assert code == 0, out
    return {row["name"]: row["table_id"] for row in json.loads(out)}


def _found(store: Path, question: str, method: str) -> list[str]:
    code, out = _run("search", question, "-s", str(store), "-m", method, "--json")
    assert code == 0, out
    return [hit["table_id"] for hit in json.loads(out)]


def test_rm_removes_a_table_from_every_index_and_its_relation(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert _run("ingest", str(_folder(tmp_path)), "-s", str(store))[0] == 0
    rivers = _ids(store)["rivers.csv"]
    for method in ("grep", "bm25"):
        assert _found(store, "length of the river Varna", method)[0] == rivers
    code, out = _run("rm", rivers, "-s", str(store), "--json")
    assert code == 0, out
    assert json.loads(out) == {"removed": [rivers], "tables_left": 1}
    assert list(_ids(store)) == ["cities.csv"]
    for method in ("grep", "bm25"):
        assert rivers not in _found(store, "length of the river Varna", method)
    code, out = _run("sql", "SELECT * FROM rivers", "-s", str(store))
    assert code == 2 and "rivers" in out
    with Store(store, read_only=True) as st:  # the rebuilt indexes are saved, not stale
        fp = st.fingerprint()
        assert st.has_blob(GREP, fp) and st.has_blob(BM25, fp)
        assert st.con.execute("SELECT count(*) FROM relations").fetchone() == (1,)


def test_rm_of_an_unknown_id_names_it_and_removes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert _run("ingest", str(_folder(tmp_path)), "-s", str(store))[0] == 0
    before = _ids(store)
    code, out = _run("rm", before["cities.csv"], "tnosuchtable0000", "-s", str(store))
    assert code == 2
    assert "'tnosuchtable0000'" in out and "nothing removed" in out
    assert _ids(store) == before


def test_ingest_prune_drops_the_tables_of_files_gone_from_disk(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    data = _folder(tmp_path)
    assert _run("ingest", str(data), "-s", str(store))[0] == 0
    (data / "rivers.csv").unlink()
    assert _run("ingest", str(data), "-s", str(store))[0] == 0
    assert set(_ids(store)) == {"cities.csv", "rivers.csv"}  # without --prune: kept
    code, out = _run("ingest", str(data), "-s", str(store), "--prune", "--json")
    assert code == 0, out
    assert json.loads(out)["files_pruned"] == [str((data / "rivers.csv").resolve())]
    assert set(_ids(store)) == {"cities.csv"}
    assert _found(store, "river Varna", "grep") == []


def test_tables_shows_when_each_table_was_ingested(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert _run("ingest", str(_folder(tmp_path)), "-s", str(store))[0] == 0
    code, out = _run("tables", "-s", str(store), "--json")
    stamps = [row["ingested_at"] for row in json.loads(out)]
    assert len(stamps) == 2 and all(s and s.endswith("Z") and "T" in s for s in stamps)
    code, out = _run("tables", "-s", str(store))
    assert code == 0 and "ingested (UTC)" in out
    assert stamps[0][:10] in out


def test_remove_tables_in_a_sharded_corpus(tmp_path: Path) -> None:
    data = _folder(tmp_path)
    with open_corpus(tmp_path / "c.json", read_only=False, shards=2) as corpus:
        assert ingest_corpus(corpus, [data]).ok
        (cities,) = [t for t in corpus.table_ids() if "cities" in corpus.source(t).path]
        with pytest.raises(UnknownTables, match="'nope'"):
            remove_tables(corpus, [cities, "nope"])
        assert len(corpus) == 2
        assert remove_tables(corpus, [cities]) == [cities]
        assert len(corpus) == 1
    with open_corpus(tmp_path / "c.json") as corpus:
        assert [h.table_id for h in search(corpus, "Amsterdam population", k=5)] == []
        assert len(corpus) == 1
