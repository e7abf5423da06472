"""One long cell (issue 40, item 4): every text that finds or shows a table reads at most
`INDEX_CELL_CHARS` characters of a cell, while the table is stored whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.corpus import Store, ingest, preview_hit, search
from tablequest.corpus.lexical.cellmatch import table_cells
from tablequest.corpus.lexical.rank import matched_rows
from tablequest.corpus.storage import streaming
from tablequest.corpus.storage.views import header_first_texts
from tablequest.table import INDEX_CELL_CHARS, Table, index_cells, preview

# 60,000 characters: "alpha" opens the cell, "zebra" only appears past the cap.
LONG = "alpha " + "filler " * 8_570 + "zebra"
BOUND = INDEX_CELL_CHARS + 500  # the cap plus the table's short cells and markup


def _long_csv(folder: Path) -> Path:
    path = folder / "long.csv"
    path.write_text(f'id,text,other\n1,"{LONG}",plain\n2,short,"zebra crossing"\n')
    return path


@pytest.mark.parametrize("streamed", [False, True])
def test_each_index_text_reads_a_cell_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    if streamed:  # a big plain CSV goes in through DuckDB: its sample and frequent values
        monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    store = Store()
    report = ingest(store, [_long_csv(tmp_path)])
    assert report.tables_stored == 1, report.files_failed
    (table_id,) = store.table_ids()
    assert ('"body": {"raw"' in store.rows([table_id])[0][10]) == streamed
    assert store.get(table_id).body[0][1] == LONG  # stored whole
    assert len(store.text(table_id)) < BOUND
    assert len(store.plain(table_id)) < 2 * BOUND  # a streamed table adds its top values
    assert max(map(len, header_first_texts(store)[1])) < BOUND
    hits = search(store, "alpha", k=1, method="grep")
    assert [h.matched_rows for h in hits] == [{r"\balpha\b": [0]}]
    assert [h.table_id for h in search(store, "alpha", k=1, method="bm25")] == [table_id]
    # Past the cap a word is not found in that cell; the short cell still matches.
    assert matched_rows(store, table_id, [r"\bzebra\b"]) == {r"\bzebra\b": [1]}
    assert len(preview_hit(store, hits[0], "alpha")) < BOUND


def test_previews_and_cell_match_read_up_to_the_cap() -> None:
    table = Table.from_rows([["name", "text"], ["a", LONG], ["b", "zebra"]], title="t" * 5000)
    capped = index_cells(table)
    assert capped.body[0][1] == LONG[:INDEX_CELL_CHARS] and capped.title == "t" * INDEX_CELL_CHARS
    assert capped.cells[0] == table.cells[0] and capped.row_ids == table.row_ids
    short = Table.from_rows([["name"], ["a"]], title="short")
    assert index_cells(short) is short
    shown = preview(table, [r"\bzebra\b"], match_only=True)
    assert shown.matched_rows == {r"\bzebra\b": [1]}  # the long cell's zebra is past the cap
    word = "x" * (INDEX_CELL_CHARS + 10)  # cell match normalizes the cell up to the cap only
    assert table_cells([[word, "Real Madrid"]]) == {"x" * INDEX_CELL_CHARS, "real madrid"}
