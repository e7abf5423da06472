"""Issue 37: copying a store into shards keeps every table's relation, its `sql_name`, and a
streamed table's text (`copy_into_shards`, what `eval run --shards` builds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.corpus import Store, copy_into_shards, ingest
from tablequest.corpus.lexical import rank
from tablequest.corpus.storage import relations, streaming
from tablequest.corpus.storage.shards import ShardedStore

FILES = {
    # streamed (STREAM_MIN_BYTES is 0 below), a DuckDB table: "1,234" keeps its text in
    # tq_raw."<id>~text"
    "prices.csv": 'item,price,day\nTea,"1,234",2024-03-01\nCake,4,2024-03-02\nBun,,2024-03-03\n',
    "b/prices.csv": "item,qty\nTea,1\nCake,2\n",  # streamed, a view; the same name: prices_2
    "titled.csv": "Fuel prices\ncountry,price\nDE,1.85\nFR,1.92\nIT,1.80\n",  # cells, a table
    "small.json": '[{"country": "DE", "rank": 1}, {"country": "FR", "rank": 2}]',  # cells, a view
}


def _sql(store: Store, query: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in store.con.execute(query).fetchall()]


def test_copy_into_shards_keeps_relations_names_and_streamed_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(relations, "SMALL_CELLS", 4)
    # each shard's grep index is not the subject (and its save is a commit and checkpoint)
    monkeypatch.setattr(rank, "grep_index", lambda store: None)
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    with Store(tmp_path / "one.duckdb") as one:
        assert ingest(one, [tmp_path / n for n in FILES], index=False, workers=1).ok
        ids = one.table_ids()
        assert sum(streaming.streamed_rows(one, t) is not None for t in ids) == 2
        copy_into_shards(one, tmp_path / "c.json", 2)
        with ShardedStore(tmp_path / "c.json", read_only=True) as sharded:
            assert sharded.table_ids() == ids
            for tid in ids:
                rel, shard = one.relation(tid), sharded.locate(tid)
                assert sharded.relation(tid) == rel
                assert sharded.get(tid) == one.get(tid)
                assert sharded.get_rows(tid, [1]) == one.get_rows(tid, [1])
                assert streaming.streamed_rows(shard, tid) == streaming.streamed_rows(one, tid)
                for query in (
                    f"SELECT * FROM {rel.sql_name} ORDER BY _row",
                    f"DESCRIBE {rel.sql_name}",
                ):
                    assert _sql(shard, query) == _sql(one, query)
