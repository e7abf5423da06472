"""Header-first text of a table: the view the phrase index and the header vector read.

``plain`` (the store's text for plain BM25 and the table vector) is the title, then one line
per grid row. The ``phrase-hybrid`` retriever needs to know which words are the header, so
it reads this view instead, made from the stored grid (not from ``plain``, whose lines a
store written by an older version broke at a newline inside a cell):

    line 0: every header row's cells (the table's `n_header_rows`, at least its first row)
    then:   the title (when there is one), then one line per body row

Whitespace inside a cell (line breaks included) becomes single spaces; a cell gives at most
`INDEX_CELL_CHARS` characters (`tablequest.table.indexcap`). Line 0 is always the
header, even when it is empty, so "the first line" is the header for every table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tablequest.corpus.storage.store import Store
from tablequest.table import index_cell

__all__ = ["header_first_text", "header_first_texts", "header_line", "stored_tables"]


def _line(cells: Sequence[str]) -> str:
    return " ".join(word for cell in cells for word in index_cell(cell).split())


def header_first_text(cells: Sequence[Sequence[str]], n_header_rows: int, title: str | None) -> str:
    """The header rows on line 0, then the title, then one line per body row."""
    rest = [_line([title or ""]), *(_line(row) for row in cells[max(1, n_header_rows) :])]
    return "\n".join([header_line(cells, n_header_rows), *(r for r in rest if r)])


def header_line(cells: Sequence[Sequence[str]], n_header_rows: int) -> str:
    """Line 0 of `header_first_text`: the header rows' words (at least the first row's)."""
    return _line([c for row in cells[: max(1, n_header_rows)] for c in row])


def header_first_texts(store: Store) -> tuple[list[str], list[str]]:
    """(table ids, their header-first texts) in table-id order, read in batches."""
    ids: list[str] = []
    texts: list[str] = []
    for table_id, title, data in stored_tables(store):
        ids.append(table_id)
        texts.append(header_first_text(data["cells"], int(data["n_header_rows"]), title))
    return ids, texts


def stored_tables(store: Store) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(table id, title, `Table.to_dict` data) of every stored table in table-id order, read
    in batches (one batch in memory; no `Table` objects built)."""
    cursor = store.con.cursor()
    cursor.execute("SELECT table_id, title, data FROM tables ORDER BY table_id")
    while batch := cursor.fetchmany(512):
        for table_id, title, data in batch:
            yield table_id, title, json.loads(data)
