"""`corpus.hits`: the search-hit record the CLI and the API both show."""

from __future__ import annotations

from tablequest.corpus.retrieval.hits import SearchHit, all_matched_rows, search_hit
from tablequest.corpus.storage.store import Hit


def test_search_hit_rounds_the_score_and_merges_the_rows() -> None:
    hit = Hit("t1", 0.123456789, {r"\blake\b": [4, 1], "61": [1, 9]})
    record = search_hit(hit, source="lakes.html", format="html")
    assert record == SearchHit("t1", 0.123457, "lakes.html", "html", [1, 4, 9])
    assert record.as_json() == {
        "table_id": "t1", "score": 0.123457, "source": "lakes.html", "format": "html",
        "matched_rows": [1, 4, 9],
    }  # fmt: skip


def test_given_rows_replace_the_rankings_and_full_adds_title_and_preview() -> None:
    hit = Hit("t2", 2.0, {"x": [7]})
    record = search_hit(hit, source="a.csv", format=None, title="T", matched={"y": [3, 3, 2]})
    full = record.as_json(full=True)
    assert full["matched_rows"] == [2, 3] and full["title"] == "T" and full["preview"] is None
    assert set(full) == {"table_id", "score", "source", "format", "matched_rows", "title",
                         "preview"}  # fmt: skip
    assert all_matched_rows({}) == [] and search_hit(
        hit, source="s", format="csv"
    ).matched_rows == [7]
