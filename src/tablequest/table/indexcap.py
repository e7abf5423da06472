"""What one cell may contribute to the texts that find and show tables (issue 40, item 4).

A single 20 MB cell cost 50–70 times its size when the search indexes were built (1.2–1.4
GB); a 100 MB cell was stored and then crashed the index build, so every later search on
that store rebuilt the missing index (37 s, 4.7 GB). Every text made to find or show a
table therefore reads at most `INDEX_CELL_CHARS` characters of each cell (and of the
title): the store's ``text`` (grep's postings, full-table evidence) and ``plain`` (BM25,
dense vectors, rerank documents), a streamed table's sample and frequent values, the
header-first view (phrase BM25, header vectors), cell match, the lines matched rows are
found in, and TableSeek's previews. The table itself is stored whole (``data`` and its
typed relation): answers, SQL, exports and table pages see every character.

Choice (ours): 2,000 characters, five times TableSeek's longest preview line (400) and more
than a long prose cell of a real table holds; a word past it is not found by search. A
cell's cost to the indexes is then bounded whatever the file (docs/reliability.md,
"One long cell", has the measurements).
"""

from __future__ import annotations

from dataclasses import replace

from tablequest.table.model import Table

__all__ = ["INDEX_CELL_CHARS", "index_cell", "index_cells"]

INDEX_CELL_CHARS = 2_000
"""The characters of one cell (or a title) that search indexes and previews read."""


def index_cell(text: str) -> str:
    """`text` cut to `INDEX_CELL_CHARS` characters."""
    return text if len(text) <= INDEX_CELL_CHARS else text[:INDEX_CELL_CHARS]


def index_cells(table: Table) -> Table:
    """`table` with every cell and its title cut to `INDEX_CELL_CHARS` characters (the same
    object when none is longer, which is the usual case)."""
    long = any(max(map(len, row), default=0) > INDEX_CELL_CHARS for row in table.cells)
    title = table.title
    if not long and (title is None or len(title) <= INDEX_CELL_CHARS):
        return table
    cells = tuple(tuple(map(index_cell, row)) for row in table.cells) if long else table.cells
    return replace(table, cells=cells, title=None if title is None else index_cell(title))
