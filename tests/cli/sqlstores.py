"""Small stores for the `sql`, `migrate` and `show` paging tests: `make_store` writes two
tables (`prices`: 30 rows of text, a number written with thousands separators, an integer
and a date; `towns`), `downgrade` turns a store into one of format 1 (as tablequest wrote it
before typed relations)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tablequest.corpus import Store
from tablequest.corpus.storage.relations import quote
from tablequest.table import Source, Table

ITEMS = ("bread", "bun", "cake", "tart", "pie")


def _prices() -> Table:
    rows: list[list[str]] = [["item", "price", "qty", "day"]]
    for i in range(30):
        rows.append(
            [f"{ITEMS[i % 5]} {i}", f"{1000 + i * 2.5:,}", str(i % 7), f"2024-03-{i + 1:02d}"]
        )
    return Table.from_rows(rows, source=Source("prices.csv", "csv"))


def make_store(path: Path) -> Path:
    """A store of two small tables: `prices` (30 rows, typed columns) and `towns`."""
    towns = Table.from_rows(
        [["town", "people"], ["Aldergrove", "1,200"], ["Millbrook", "800"]],
        source=Source("towns.csv", "csv"),
    )
    with Store(path) as st:
        st.add_table(_prices(), key="prices.csv")
        st.add_table(towns, key="towns.csv")
    return path


def downgrade(path: Path) -> None:
    """Make `path` a store of format 1, as tablequest wrote it before typed relations: the
    same `tables`, `indexes` and `embeddings`, no relations and no `store_meta`."""
    con = duckdb.connect(str(path))
    try:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        for (name,) in con.execute("SELECT sql_name FROM relations").fetchall():
            con.execute(f"DROP {'VIEW' if name in views else 'TABLE'} {quote(name)}")
        con.execute("DROP TABLE relations")
        con.execute("DROP TABLE store_meta")
        con.execute("DROP TABLE IF EXISTS tq_small")  # small tables' rows (format 2)
    finally:
        con.close()
