"""A search hit as people and clients see it: one record for ``tablequest search`` and the API.

`search_hit` turns a ranked `Hit` into a `SearchHit`: the table id, the score rounded to 6
decimals, where the table comes from, its format, and the body rows any pattern matched
(sorted, each once). The caller names the source, because who reads it decides what it may
show: the CLI shows the user's own path (``file#sheet``), the server the file relative to its
corpus root (`service.snapshot`), never a server path. The server adds the table's title and,
when asked, its text preview (`SearchHit.as_json(full=True)`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablequest.corpus.storage.store import Hit

__all__ = ["SearchHit", "all_matched_rows", "search_hit"]


def all_matched_rows(matched: Mapping[str, Sequence[int]]) -> list[int]:
    """The body rows any pattern matched, sorted, each once."""
    return sorted({r for rows in matched.values() for r in rows})


@dataclass(frozen=True)
class SearchHit:
    """One ranked table as shown: `source` as the caller may show it (module doc)."""

    table_id: str
    score: float
    source: str | None
    format: str | None
    matched_rows: list[int]
    title: str | None = None
    preview: str | None = None

    def as_json(self, *, full: bool = False) -> dict[str, Any]:
        """The record as JSON: id, score, source, format and matched rows; `full` adds the
        title and the preview (None when not asked for)."""
        out: dict[str, Any] = {
            "table_id": self.table_id,
            "score": self.score,
            "source": self.source,
            "format": self.format,
            "matched_rows": self.matched_rows,
        }
        if full:
            out.update(title=self.title, preview=self.preview)
        return out


def search_hit(
    hit: Hit,
    *,
    source: str | None,
    format: str | None,
    title: str | None = None,
    matched: Mapping[str, Sequence[int]] | None = None,
    preview: str | None = None,
) -> SearchHit:
    """The shown record of `hit`.

    Args:
        source: Where the table comes from, as this reader may see it (module doc; None
            for a table stored without a path).
        matched: Rows each pattern matched (default: those the ranking found, `Hit.matched_rows`).
    """
    return SearchHit(
        table_id=hit.table_id,
        score=round(hit.score, 6),
        source=source,
        format=format,
        matched_rows=all_matched_rows(hit.matched_rows if matched is None else matched),
        title=title,
        preview=preview,
    )
