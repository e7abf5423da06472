"""Issue 39, item 9: snake_case and camelCase headers are split into words for grep and BM25,
and the whole word still matches (a tiny store)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tablequest.corpus import Store, grep_rank, ingest, search, tokenize
from tablequest.corpus.lexical.compound import (
    compound_tokens,
    compounds,
    searchable_text,
    word_parts,
)
from tablequest.corpus.lexical.phrase import phrase_tokens

QUESTION = "population of the capital city Amsterdam"
TABLES = {
    # the answer's table: compound headers
    "capitals.csv": "capital_city,population_2020\nAmsterdam,905234\nParis,2148000\n",
    # plain words of the question, not the answer: the default search ranked it first
    "towns.csv": "city,population,region\nUtrecht,361924,Utrecht\nHaarlem,162902,North\n",
    "ports.csv": "capital city port,population\nRotterdam,651446\n",
    "camel.csv": "countryName,capitalCity,areaKm2\nNetherlands,Amsterdam,41850\n",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    root = tmp_path_factory.mktemp("compound")
    folder = root / "tables"
    folder.mkdir()
    for name, csv in TABLES.items():
        (folder / name).write_text(csv, encoding="utf-8")
    with Store(root / "s.duckdb") as opened:
        assert ingest(opened, [folder]).ok
        yield opened


def _names(store: Store, ids: list[str]) -> list[str]:
    return [Path(store.source(t).path).name for t in ids]


def test_parts_of_compound_words() -> None:
    assert word_parts("population_2020") == ["population", "2020"]
    assert word_parts("capitalCity") == ["capital", "City"]
    assert word_parts("total_numberOfGoals") == ["total", "number", "Of", "Goals"]
    assert word_parts("HTTPServer") == [] and word_parts("city") == [] and word_parts("_") == []
    text = "capital_city,population_2020\nAmsterdam,capital_city"
    assert compounds(text) == [["capital", "city"], ["population", "2020"]]  # each once
    assert searchable_text(text) == text + "\ncapital city | population 2020"
    assert searchable_text("city,population") == "city,population"
    assert compound_tokens("capitalCity, population_2020") == [
        "capital", "city", "population_2020",
    ]  # fmt: skip


def test_bm25_tokens_keep_the_whole_word_and_add_its_parts() -> None:
    assert tokenize(["capitalCity population_2020"]) == [
        ["capitalcity", "population", "2020", "capital", "city", "population_2020"]
    ]
    assert tokenize(["numberOfGoals"]) == [["numberofgoals", "number", "goals"]]  # no stop word
    # the phrase index keeps its own tokens: its bigrams join words with "_" too
    assert phrase_tokens(["capital_city"]) == [["capital", "city", "capital_city"] * 2]


def test_the_default_search_ranks_the_compound_headers_first(store: Store) -> None:
    hits = search(store, QUESTION, k=4)  # the default retriever: grep
    assert _names(store, [h.table_id for h in hits])[0] == "capitals.csv"
    assert hits[0].score == 1.0  # every content word found: population, capital, city, amsterdam
    bm25 = search(store, QUESTION, k=4, method="bm25")
    assert _names(store, [h.table_id for h in bm25])[0] == "capitals.csv"
    camel = search(store, "capital city of the Netherlands", k=4)
    assert _names(store, [h.table_id for h in camel])[0] == "camel.csv"


def test_exact_searches_still_match_the_whole_word(store: Store) -> None:
    exact = grep_rank(store, [r"\bpopulation_2020\b"], 4)
    assert _names(store, [h.table_id for h in exact]) == ["capitals.csv"]
    camel = grep_rank(store, [r"\bcapitalCity\b"], 4)
    assert _names(store, [h.table_id for h in camel]) == ["camel.csv"]
    bm25 = search(store, "population_2020", k=1, method="bm25")
    assert _names(store, [h.table_id for h in bm25]) == ["capitals.csv"]
    # the stored text (previews, matched rows) is unchanged: the parts live in the index only
    capitals = next(t for t in store.table_ids() if store.source(t).path.endswith("capitals.csv"))
    assert "capital city" not in store.text(capitals)
