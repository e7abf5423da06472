"""A stored table's rows as the API and the table page take them, and SQL results as files.

The work is the library's (`tablequest.corpus.storage.browse`: pages, sorting, filters,
facets, exports over the table's relation; `tablequest.corpus.storage.sql`: the queries);
this module reads the request's words into its arguments and its answers into responses:

- filters are `column op value` texts (``?where=`` is repeatable; blank ones are skipped;
  at most `MAX_FILTERS` of `MAX_FILTER_CHARS` each), facets name columns (at most
  `MAX_FACETS`);
- a download is named after the table's relation (``fuel_prices.csv``) or ``query.csv``,
  with an ASCII fallback name and the UTF-8 one (RFC 6266), and the media type of its
  format;
- a SQL result as CSV has one header line of column names; NULL is an empty field, true
  and false are lower case, dates ISO, lists and structs JSON (what `json_value` gives).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from tablequest.corpus import SqlResult, browse, json_value
from tablequest.errors import BadValue

__all__ = [
    "EXPORT_TYPES", "MAX_FACETS", "MAX_FILTERS", "SQL_TYPES", "attachment", "facet_filter",
    "facet_json", "parse_where", "sql_file",
]  # fmt: skip

MAX_FILTERS = 16
MAX_FILTER_CHARS = 1000
MAX_FACETS = 8
EXPORT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "tsv": "text/tab-separated-values; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
"""Media type of each download format of a table (`browse.EXPORT_FORMATS`)."""
SQL_TYPES = {k: EXPORT_TYPES[k] for k in ("csv", "tsv", "parquet", "xlsx")}
"""Media type of each file format of a SQL result (JSON is the API's own answer)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def parse_where(texts: Iterable[str] | None) -> list[browse.Filter]:
    """The filters of `texts` (blank ones skipped).

    Raises:
        BadValue: a filter that cannot be read (the message shows the form), or too many.
    """
    given = [t for t in texts or () if t.strip()]
    if len(given) > MAX_FILTERS:
        raise BadValue(f"at most {MAX_FILTERS} filters, not {len(given)}")
    for text in given:
        if len(text) > MAX_FILTER_CHARS:
            raise BadValue(f"a filter is longer than {MAX_FILTER_CHARS:,} characters")
    return [browse.parse_filter(t) for t in given]


def facet_json(values: Sequence[tuple[Any, int]]) -> list[dict[str, Any]]:
    """`browse.facets`' answer as JSON: ``[{"value", "count"}]``."""
    return [{"value": json_value(v), "count": n} for v, n in values]


def facet_filter(column: str, value: Any) -> str:
    """The filter that selects the rows holding `value` in `column` (a facet's link)."""
    if value is None:
        return f"{column} null"
    shown = json_value(value)
    if isinstance(shown, bool):
        shown = str(shown).lower()
    return f"{column} = {browse.quoted_value(str(shown))}"


def attachment(name: str) -> str:
    """A Content-Disposition header that downloads the file as `name` (any script)."""
    fallback = _UNSAFE.sub("_", name).strip("_.") or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def sql_file(result: SqlResult, fmt: str) -> bytes:
    """A SQL result as a file: ``csv``, ``tsv``, ``parquet`` or ``xlsx`` (the module doc).

    Raises:
        BadValue: an unknown format, or a result Parquet cannot hold.
    """
    if fmt in ("csv", "tsv", "xlsx"):  # as `tablequest sql --format` writes them
        return browse.encode(result.arrow, fmt)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        try:
            pq.write_table(result.arrow, buffer)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise BadValue(f"this result cannot be written as Parquet: {exc}") from None
        return buffer.getvalue()
    raise BadValue(f"unknown format {fmt!r}; use json, csv, tsv, parquet or xlsx")
