"""Synthetic scale data like Synthetic TabFact (TableRAG §4.6, App. C)."""

from __future__ import annotations

import pytest

from tablequest.methods.rag.synth import SIZES, expand_table, protected_values
from tablequest.table import Table

GAMES = Table.from_rows(
    [["team", "points", "city"], ["Lions", "3", "Oslo"], ["Bears", "5", "Rome"],
     ["Cats", "5", "Oslo"], ["Dogs", "1", "Lima"]],
    title="league",
)  # fmt: skip


def test_originals_are_kept_in_order_with_their_names() -> None:
    out = expand_table(GAMES, 40, 12, seed=3)
    table = out.table
    assert (table.n_rows, table.n_cols, table.title) == (40, 12, "league")
    assert sorted(out.row_map) == [0, 1, 2, 3] and sorted(out.col_map) == [0, 1, 2]
    assert list(out.row_map.values()) == sorted(out.row_map.values())
    assert list(out.col_map.values()) == sorted(out.col_map.values())
    for r, new_r in out.row_map.items():
        for c, new_c in out.col_map.items():
            assert table.body[new_r][new_c] == GAMES.body[r][c]
    names = table.columns
    assert [names[out.col_map[c]] for c in range(3)] == ["team", "points", "city"]
    assert len(set(names)) == 12
    extra = [n for i, n in enumerate(names) if i not in out.col_map.values()]
    assert all(re_base(n) in {"team", "points", "city"} for n in extra)


def re_base(name: str) -> str:
    return name.rsplit("_", 1)[0]


def test_new_cells_come_from_the_column_values_and_avoid_protected_ones() -> None:
    out = expand_table(GAMES, 60, 6, seed=1, protect=["Lions", " oslo "])
    table = out.table
    originals = set(out.row_map.values())
    for j, name in enumerate(table.columns):
        base = re_base(name) if name not in GAMES.columns else name
        allowed = {row[GAMES.columns.index(base)] for row in GAMES.body}
        for i, row in enumerate(table.body):
            if i in originals and j in out.col_map.values():
                continue
            assert row[j] in allowed
            assert row[j] not in ("Lions", "Oslo")
    lions = [i for i, row in enumerate(table.body) if "Lions" in row]
    assert lions == [out.row_map[0]]  # a lookup of the protected entity finds only its row


def test_seeded_sizes_and_errors() -> None:
    assert SIZES == ((100, 100), (500, 500), (1000, 1000))
    a = expand_table(GAMES, 100, 100, seed=5).table
    assert a == expand_table(GAMES, 100, 100, seed=5).table
    assert a != expand_table(GAMES, 100, 100, seed=6).table
    with pytest.raises(ValueError, match="smaller than the table"):
        expand_table(GAMES, 3, 10)
    with pytest.raises(ValueError, match="without columns"):
        expand_table(Table.from_rows([]), 5, 5)
    only = expand_table(Table.from_rows([["x"], ["a"]]), 3, 2, protect=["a"])
    assert [row for row in only.table.body].count(("a", "a")) <= 1
    assert expand_table(Table.from_rows([["x"]]), 2, 1).table.n_rows == 2


def test_protected_values_found_in_the_question() -> None:
    q = "Did the Lions score more points than the bears in Oslo 2005?"
    assert protected_values(GAMES, q) == ["Lions", "Oslo", "Bears"]
    assert protected_values(GAMES, "How many teams scored 5?") == []  # numbers are not kept
