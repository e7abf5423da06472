"""Searches on the event loop (`service.search_in_memory`, `service.inmemory`): the same
answer as `run_search` on its threads, and a refusal (None) whenever a step would read DuckDB
or make something big; the rows a streamed table matches are the CLI's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.lexical.rank import matched_rows, question_patterns
from tablequest.corpus.storage import streaming
from tablequest.service import (
    ServeConfig,
    ServerState,
    inmemory,
    run_search,
    search_in_memory,
    stores,
)

QUESTIONS = ["depth of lake Quillsee", "Quillsee 61", "comet period halvorsen", "row 120 zeta"]
ENCODER = "hash"


def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServerState:
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 600)  # comets.csv is streamed
    (tmp_path / "lakes.csv").write_text("Lake,Depth\nMirrow,38\nQuillsee,61\nTarnel,12\n")
    (tmp_path / "orbits.csv").write_text("Comet,Period\nHalvorsen,76\nQuillsee,5\n")
    rows = "".join(f"c{i},{'zeta' if i == 120 else 'eta'} {i}\n" for i in range(150))
    (tmp_path / "comets.csv").write_text("Comet,Note\n" + rows)
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, sorted(tmp_path.glob("*.csv")))
        assert report.tables_stored == 3, report.files_failed
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "t", token="t" * 20)
    state = ServerState(config)
    state.stores.warm(("grep", "bm25"))  # the server warms grep at start; a search loads bm25
    return state


def test_in_memory_answers_are_run_search_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _state(tmp_path, monkeypatch)
    for method in ("grep", "bm25"):
        for q in QUESTIONS:
            fast = search_in_memory(state, q, 5, method, ENCODER, False)
            assert fast is not None, (method, q)
            assert fast == run_search(state, q, 5, method, ENCODER, False)
    # never on the event loop: a method that ranks under a lock and may load a model, a
    # preview (every word's regex over every row), a question of too many words
    assert search_in_memory(state, QUESTIONS[0], 5, "dense", ENCODER, False) is None
    assert search_in_memory(state, QUESTIONS[0], 5, "grep", ENCODER, True) is None
    words = " ".join(f"w{i}" for i in range(inmemory.INLINE_PATTERNS))
    assert search_in_memory(state, f"Quillsee {words}", 5, "grep", ENCODER, False) is None
    assert search_in_memory(state, words, 5, "grep", ENCODER, False) is not None


def test_a_streamed_table_matches_the_rows_its_index_holds_as_the_cli_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """comets.csv is streamed: its index holds a sample of its first 100 rows, where "zeta"
    (row 120) is not; the CLI's matched rows and the server's are the same."""
    state = _state(tmp_path, monkeypatch)
    body = run_search(state, "eta zeta", 5, "grep", ENCODER, False)
    [comets] = [h for h in body["hits"] if h["source"].endswith("comets.csv")]
    patterns = question_patterns("eta zeta")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        cli = matched_rows(store, comets["table_id"], patterns)
    assert sorted({r for rows in cli.values() for r in rows}) == comets["matched_rows"]
    assert 120 not in comets["matched_rows"] and len(comets["matched_rows"]) == 100


def test_in_memory_refuses_duckdb_big_tables_and_big_corpora(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _state(tmp_path, monkeypatch)
    q = "Mirrow depth"  # lakes.csv only
    answer = run_search(state, q, 5, "grep", ENCODER, False)  # makes the lines it reads
    assert search_in_memory(state, q, 5, "grep", ENCODER, False) == answer

    # hit tables over the bound together, their lines made or not: lakes.csv has 3 rows and
    # 2 columns, orbits.csv 2 and 2; "Quillsee" is in both
    monkeypatch.setattr(inmemory, "INLINE_SEARCH_CELLS", 9)
    assert search_in_memory(state, "Halvorsen", 5, "grep", ENCODER, False) is not None
    assert search_in_memory(state, "Quillsee", 5, "grep", ENCODER, False) is None
    run_search(state, "Quillsee", 5, "grep", ENCODER, False)
    assert search_in_memory(state, "Quillsee", 5, "grep", ENCODER, False) is None
    monkeypatch.setattr(inmemory, "INLINE_SEARCH_CELLS", 10)
    assert search_in_memory(state, "Quillsee", 5, "grep", ENCODER, False) is not None

    # a corpus over the bound: no memory reader at all
    monkeypatch.setattr(stores, "INLINE_CORPUS_CELLS", 10)
    assert state.stores.memory_reader() is None
    assert search_in_memory(state, q, 5, "grep", ENCODER, False) is None
    monkeypatch.undo()

    # tables only DuckDB holds (a corpus over the raw budget), and an index not loaded yet
    (tmp_path / "again").mkdir()
    fresh = _state(tmp_path / "again", monkeypatch)
    reader = fresh.stores.memory_reader()
    assert reader is not None
    reader.snapshot.raw = None
    reader.snapshot.indexes.clear()
    assert search_in_memory(fresh, q, 5, "grep", ENCODER, False) is None  # the index: DuckDB
    fresh.stores.warm(("grep", "bm25"))
    for method in ("grep", "bm25"):
        assert search_in_memory(fresh, q, 5, method, ENCODER, False) is None  # the table
    answer = run_search(fresh, q, 5, "grep", ENCODER, False)  # its lines made on a thread
    assert search_in_memory(fresh, q, 5, "grep", ENCODER, False) == answer
    refused = fresh.stores.memory_reader()
    assert refused is not None
    with pytest.raises(inmemory.NotInMemory, match="reads DuckDB"):
        refused.get(refused.table_ids()[0])
    assert refused.refused
