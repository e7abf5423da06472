"""Cell match (`lexical.cellmatch`) and the plain text's lines (issue 29, Must 2)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.lexical import cellmatch
from tablequest.corpus.lexical.cellmatch import (
    CELL_INDEX,
    CellIndex,
    cell_index,
    normalize,
    question_grams,
    table_cells,
)
from tablequest.corpus.storage.store import plain_text
from tablequest.corpus.storage.views import header_first_text, header_first_texts, header_line
from tablequest.table import Table


def test_cells_are_normalized_names() -> None:
    assert normalize("  New-York  Americans!! ") == "new york americans"
    assert normalize("St._Louis") == "st louis"  # underscores are separators too
    grid = [["Club", "Cup", "Goals"], ["Real Madrid C.F.", "1998", "12"], ["", "3.5", "—"]]
    # numbers are out unless a year; empty and punctuation-only cells are out
    assert table_cells(grid) == {"club", "cup", "goals", "real madrid c f", "1998"}
    assert table_cells([["one two three four five six seven eight"]]) == {
        "one two three four five six seven eight"
    }
    assert table_cells([["one two three four five six seven eight nine"]]) == set()


def test_marks_and_forms_fold_and_stop_word_cells_are_not_names() -> None:
    assert normalize("İstanbul") == "istanbul"  # the dotted capital I is i + a mark
    assert normalize("Re\u0301al Madrid") == normalize("Réal Madrid") == "real madrid"
    assert normalize("ＦＩＦＡ") == "fifa"  # full-width letters
    assert normalize("Straße") == "strasse"  # case folding, not lower()
    grid = [["A", "The", "of the"], ["B", "The Beatles", "1007"], ["0001", "2150", "2024"]]
    assert table_cells(grid) == {"b", "the beatles", "1007", "2024"}


def test_equal_questions_give_bit_equal_scores_whatever_the_set_order() -> None:
    grids = [
        [["x"] * 3, [f"name {i}" for i in range(40)]],
        [[f"name {i}" for i in range(0, 40, 3)]],
    ]
    index = CellIndex.build(["a", "b"], grids)
    question = " ".join(f"name {i}" for i in range(40))
    want = sum(sorted(index.idf[index.cell_ids[f"name {i}"]] for i in range(0, 40, 3)))
    assert index.df("name 3") == 2 and index.df("name 1") == 1 and index.df("nope") == 0
    assert index.scores(question)[1] > 0
    assert index.scores(question).tolist() == index.scores(question).tolist()
    assert abs(index.scores(question)[1] - want) < 1e-12


def test_question_grams_are_every_phrase_up_to_eight_words() -> None:
    assert question_grams("Real Madrid, 1998?") == {
        "real",
        "madrid",
        "1998",
        "real madrid",
        "madrid 1998",
        "real madrid 1998",
    }
    ten = " ".join(f"w{i}" for i in range(10))
    assert len(question_grams(ten)) == 10 + 9 + 8 + 7 + 6 + 5 + 4 + 3  # n ≤ 8


def test_scores_sum_the_idf_of_each_matched_cell_once() -> None:
    grids = [
        [["club", "city"], ["Real Madrid", "Madrid"]],
        [["city", "country"], ["Madrid", "Spain"]],
        [["river", "length"], ["Tagus", "120"]],
    ]
    index = CellIndex.build(["a", "b", "c"], grids)
    scores = index.scores("How far is Madrid from Real Madrid, the city?")
    madrid, city, real_madrid = math.log1p(3 / 2), math.log1p(3 / 2), math.log1p(3 / 1)
    assert scores.tolist() == pytest.approx([real_madrid + madrid + city, madrid + city, 0.0])
    # "madrid" twice in the question counts once; "120" is a number, never a cell
    assert index.scores("tagus 120").tolist() == pytest.approx([0.0, 0.0, math.log1p(3)])
    assert index.scores("").tolist() == [0.0, 0.0, 0.0]


def test_the_store_index_is_built_once_in_table_id_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tables"
    root.mkdir()
    (root / "clubs.csv").write_text("club,city\nReal Madrid,Madrid\n")
    (root / "rivers.csv").write_text("river,length\nTagus,1007\n")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [root]).ok
        index = cell_index(store)
        assert index.ids == store.table_ids()
        assert cell_index(store) is index and store.cached_index(CELL_INDEX) is index
        clubs = next(t for t in index.ids if "clubs" in store.get(t).source.path)
        scores = index.scores("where do real madrid play")
        assert index.ids[int(np.argmax(scores))] == clubs
        blob = store.load_blob(CELL_INDEX, store.fingerprint())
        assert blob is not None  # a writable store keeps it
    monkeypatch.setattr(cellmatch, "_built", lambda store: pytest.fail("rebuilt"))
    with Store(tmp_path / "s.duckdb", read_only=True) as again:
        loaded = cell_index(again)  # read back, not rebuilt
        assert loaded is not index and loaded.cell_ids == index.cell_ids
        assert np.array_equal(loaded.scores("where do real madrid play"), scores)
        assert np.array_equal(loaded.idf, index.idf)
        with pytest.raises(ValueError, match="another corpus"):
            CellIndex.from_blob(index.ids[:1], blob)


def test_plain_text_keeps_one_line_per_row() -> None:
    table = Table.from_rows([["No. in\nseries", "Title"], ["1", "Pilot\r\n(part 1)"]])
    assert plain_text(table) == "No. in series Title\n1 Pilot (part 1)"


def test_the_header_first_view_puts_every_header_row_first_and_the_title_after() -> None:
    cells = [["", "Medals\nwon"], ["Nation", "Gold"], ["Norway", "16"], ["", ""]]
    assert header_first_text(cells, 2, "Olympic  medal table") == (
        "Medals won Nation Gold\nOlympic medal table\nNorway 16"
    )
    assert header_first_text(cells, 0, None) == "Medals won\nNation Gold\nNorway 16"
    assert header_first_text([], 1, "Only a title") == "\nOnly a title"  # line 0: the header
    assert header_line(cells, 2) == "Medals won Nation Gold"


def test_the_phrase_index_and_header_vector_read_the_grid_not_the_stored_plain(
    tmp_path: Path,
) -> None:
    from tablequest.corpus.dense.encoders import HashEncoder
    from tablequest.corpus.dense.index import ensure_embeddings
    from tablequest.corpus.lexical.phrase import PHRASE_BM25
    from tablequest.corpus.lexical.rank import bm25_index

    root = tmp_path / "tables"
    root.mkdir()
    (root / "episodes.csv").write_text('"No. in\nseries",Title\n1,Pilot\n')
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [root]).ok
        # a store written before one row was one line: plain broken inside the header cell
        store.con.execute("UPDATE tables SET plain = 'No. in\nseries Title\n1 Pilot'")
        assert header_first_texts(store)[1] == ["No. in series Title\n1 Pilot"]
        encoder = HashEncoder()
        _, vectors = ensure_embeddings(store, encoder, view="header")
        assert np.allclose(vectors[0], encoder.encode(["No. in series Title"])[0])
        scores = bm25_index(store, kind=PHRASE_BM25).scores("series title")
        assert scores[0] > 0  # "series_title" is a bigram of the header line
