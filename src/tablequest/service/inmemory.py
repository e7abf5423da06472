"""A reader that answers from a generation's memory only (`MemoryReader`), so that a search
can run on the event loop instead of a search thread.

Why (issue 38): at 32 clients a lexical ``GET /v1/search`` is bound by the server's CPU per
request, and on a 2-core machine handing each search to a thread cost more than the search:
the event loop and the search threads take the interpreter lock in turn for every request,
and the measured server CPU per search fell from 1.01 to 0.54 ms (p99 44 → 26 ms) when the
WTQ searches ran on the loop instead (docs/results.md). A search must not stall the loop on
DuckDB or on a big table, so the loop runs one itself only when all it reads is in memory
and small; anything else raises `NotInMemory` at the first step that would read more, and
the caller runs the whole search on its threads as before (`service.search.search_in_memory`).

What a `MemoryReader` refuses (the choices are ours; WTQ's 2,108 tables, 365,170 cells, the
largest 3,832, stay well inside them):

- **DuckDB**: its connection is `_NoConnection`; any use raises. So a table not in the
  generation's memory (`Snapshot.raw` is kept for corpora under 256 MB; a streamed table's
  rows are in DuckDB), an index not loaded yet, or a preview that reads rows goes to a thread.
- **A corpus over `INLINE_CORPUS_CELLS`** cells in all (`StoreManager.memory_reader` gives
  none): ranking's cost grows with the corpus (the index's arrays, scans of its texts).
- **Hit tables of over `INLINE_SEARCH_CELLS` cells together**: matched rows cost in
  proportion to a table's text (a word new to the table is searched in all its rows;
  measured on one table of 20,000 cells of frequent words: 35 ms for four new words, 5 ms to
  parse it and make its lines), and a search may ask for 100 tables. WTQ's 3,000 test
  questions with k = 5 read at most 8,203 cells (median 648).

`search_in_memory` adds two bounds of its own: no preview (it runs each word's regex over
every row of the hit tables, uncached) and at most `INLINE_PATTERNS` question words.

The reader records that it refused (`refused`) as well as raising, so a caller never trusts
an answer some layer might have made after catching the error.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, cast

import duckdb

from tablequest.corpus import TableLines
from tablequest.errors import RunError
from tablequest.service.snapshot import ReadStore, Snapshot

__all__ = [
    "INLINE_CORPUS_CELLS",
    "INLINE_PATTERNS",
    "INLINE_SEARCH_CELLS",
    "MemoryReader",
    "NotInMemory",
]

INLINE_CORPUS_CELLS = 2_000_000
"""The largest corpus (cells of all its tables) whose searches may run on the event loop."""
INLINE_PATTERNS = 32
"""The most question words a search on the event loop may have (WTQ: median 4, at most 29)."""
INLINE_SEARCH_CELLS = 20_000
"""The most cells a search on the event loop may match rows in (its hit tables together)."""


class NotInMemory(RunError):
    """A `MemoryReader` was asked for what is not in memory, or too big to make there.

    It never reaches a client: `search_in_memory` takes it as "run it on a thread", and were
    it to escape, the search's short way hands any `TablequestError` to the route, which
    searches with a reader of DuckDB."""

    code = "not_in_memory"


class _NoConnection:
    """Stands in for the DuckDB connection of a `MemoryReader`: any use refuses."""

    def __init__(self, reader: MemoryReader) -> None:
        self._reader = reader

    def __getattr__(self, name: str) -> NoReturn:
        self._reader.refuse(f"reads DuckDB ({name})")


class MemoryReader(ReadStore):
    """A `ReadStore` of one generation that refuses all but its memory (the module doc).

    One per search, on one thread; it holds no connection, so it is never closed and needs
    no hold on its generation (the snapshot it reads stays alive while it is referenced).
    """

    def __init__(self, path: Path, snapshot: Snapshot) -> None:
        self.refused = False
        """Set when any step was refused (the answer, if one came, is not to be used)."""
        self.cells = 0
        """Cells of the tables whose rows it matched so far."""
        con = cast(duckdb.DuckDBPyConnection, _NoConnection(self))
        super().__init__(con, path, snapshot)

    def refuse(self, why: str) -> NoReturn:
        self.refused = True
        raise NotInMemory(why)

    def lines(self, table_id: str) -> TableLines:
        info = self.snapshot.info.get(table_id)
        if info is not None:
            self.cells += info.n_rows * info.n_cols
            if self.cells > INLINE_SEARCH_CELLS:
                self.refuse(f"its tables hold over {INLINE_SEARCH_CELLS} cells")
        return super().lines(table_id)

    def close(self) -> None:
        """Nothing to close (no connection)."""
