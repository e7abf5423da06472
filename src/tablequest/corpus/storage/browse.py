"""Browsing a stored table through its relation: pages, sorting, filters, facets, exports.

`page(store, table_id, offset=…, limit=…, sort=…, where=…)` runs one SQL query on the
table's relation (`corpus/storage/relations.py`) and returns the body row ids of the page in
order, the matching row count and the typed values; `Table.take_rows` (or `Store.get_rows`)
turns the ids into a `Table` that renders exactly as the stored table does (header rows,
merges of the header, title, notes), so `show`, the web page and MCP `get_table` show a page
as they show a table.

Filters (`column op value`, as `show --where` and `?where=` take them; ours): `column` is the
SQL name or the header as shown; `op` is one of `= != < <= > >=` (compared as the column's
type: a value that is not of that type is an error naming it), `~` (contains, any case) or
`^` (starts with, any case), `null` / `notnull` (no value). Several filters all hold.
Sorting is by one column, NULLs last, ties in row order. Facets: the most frequent values
of a column among the matching rows, with their counts (ties by value).

Exports (`export`): csv, tsv, json (records), parquet, xlsx; typed (numbers as numbers,
dates as dates) from the relation, columns named by their header paths, CSV and TSV quoted
only where needed; `raw=True` gives the cells' source text instead (csv/tsv/json/xlsx; CSV
and TSV exactly as the table serializer writes them, header rows included).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tablequest.corpus.storage.relations import ROW_COLUMN, Column, Relation, quote
from tablequest.errors import BadValue
from tablequest.table import unique_names

if TYPE_CHECKING:
    from tablequest.corpus.storage.store import Store

__all__ = ["EXPORT_FORMATS", "Filter", "Page", "export", "facets", "page"]
__all__ += ["encode", "parse_filter", "quoted_value"]

EXPORT_FORMATS = ("csv", "tsv", "json", "parquet", "xlsx")
MAX_LIMIT = 10_000
_OPS = ("!=", "<=", ">=", "=", "<", ">", "~", "^")
_FILTER = re.compile(r"^\s*(.+?)\s*(!=|<=|>=|=|<|>|~|\^)\s*(.*?)\s*$", re.S)
_NULL = re.compile(r"^\s*(.+?)\s+(null|notnull)\s*$", re.I)


@dataclass(frozen=True)
class Filter:
    """One condition on a column: `column op value` (module docstring)."""

    column: str
    op: str
    value: str = ""

    def __str__(self) -> str:
        return f"{self.column} {self.op} {self.value}".strip()


def parse_filter(text: str) -> Filter:
    """`"price > 3"` → Filter("price", ">", "3"); BadValue saying the form when malformed.

    The value is trimmed; one written as a JSON string (``name = " padded "``) is that string,
    spaces at its ends kept (a facet's link writes such a value so)."""
    match = _NULL.match(text)
    if match:
        return Filter(match.group(1), match.group(2).lower())
    match = _FILTER.match(text)
    if not match or not match.group(1):
        raise BadValue(
            f"cannot read the filter {text!r}: write COLUMN OP VALUE with OP one of "
            f"{' '.join(_OPS)}, or COLUMN null / COLUMN notnull"
        )
    return Filter(match.group(1), match.group(2), _value(match.group(3)))


def _value(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        with contextlib.suppress(ValueError):
            value = json.loads(text)
            if isinstance(value, str):
                return value
    return text


def quoted_value(value: str) -> str:
    """`value` as a filter writes it so that `parse_filter` reads it back exactly."""
    if value != value.strip() or value.startswith('"'):
        return json.dumps(value, ensure_ascii=False)
    return value


@dataclass
class Page:
    """One page of a table: its body row ids in order and their typed values."""

    table_id: str
    relation: Relation
    total: int  # rows matching the filters
    offset: int
    limit: int
    row_ids: list[int]
    values: list[tuple[Any, ...]]  # one tuple per row, in `relation.columns` order
    sort: str | None = None
    descending: bool = False
    where: list[Filter] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        from tablequest.corpus.storage.sql import json_value

        return {
            "table_id": self.table_id,
            "sql_name": self.relation.sql_name,
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
            "sort": self.sort,
            "descending": self.descending,
            "where": [str(f) for f in self.where],
            "columns": [c.to_json() for c in self.relation.columns],
            "row_ids": self.row_ids,
            "rows": [[json_value(v) for v in row] for row in self.values],
        }


def _condition(relation: Relation, flt: Filter) -> tuple[str, list[Any]]:
    col = relation.column(flt.column)
    name = quote(col.name)
    if flt.op in ("null", "notnull"):
        # an empty text cell is '' in the relation (the cell as stored): it has no value too
        empty = f"{name} IS NULL" + (f" OR {name} = ''" if col.type == "VARCHAR" else "")
        return (f"NOT ({empty})" if flt.op == "notnull" else f"({empty})"), []
    if flt.op == "~":
        return f"contains(lower({name}::VARCHAR), lower(?))", [flt.value]
    if flt.op == "^":
        return f"starts_with(lower({name}::VARCHAR), lower(?))", [flt.value]
    if col.type != "VARCHAR":
        _check_value(col, flt.value)
    op = "<>" if flt.op == "!=" else flt.op
    return f"{name} {op} CAST(? AS {col.type})", [flt.value]


_FORMS = {
    "DATE": "a date as YYYY-MM-DD, e.g. 2024-03-31",
    "TIMESTAMP": "a time as YYYY-MM-DD HH:MM[:SS]",
    "DOUBLE": "a number with a dot for decimals and no grouping, e.g. 1234.5",
    "BIGINT": "a whole number without grouping, e.g. 1234",
    "BOOLEAN": "true or false",
}


def _check_value(col: Column, value: str) -> None:
    import duckdb

    try:
        duckdb.execute(f"SELECT CAST(? AS {col.type})", [value]).fetchone()
    except duckdb.Error:
        form = _FORMS.get(col.type, "")
        raise BadValue(
            f"{value!r} is not a {col.type.lower()} value, which column {col.name!r} holds"
            + (f" (write {form})" if form else "")
        ) from None


def _where(relation: Relation, where: Sequence[Filter]) -> tuple[str, list[Any]]:
    parts, params = [], []
    for flt in where:
        sql, values = _condition(relation, flt)
        parts.append(sql)
        params += values
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def page(
    store: Store,
    table_id: str,
    *,
    offset: int = 0,
    limit: int = 100,
    sort: str | None = None,
    descending: bool = False,
    where: Sequence[Filter] = (),
) -> Page:
    """One page of `table_id` (module docstring).

    Raises:
        KeyError: no such table, or no such column (the message lists the columns).
        BadValue: a negative offset, a limit outside 0…10,000, a value of the wrong type.
        StoreOutdated: a store of format 1 (`tablequest migrate`).
    """
    if offset < 0:
        raise BadValue(f"offset must be 0 or more, not {offset}")
    if not 0 <= limit <= MAX_LIMIT:
        raise BadValue(f"rows must be between 0 and {MAX_LIMIT:,}, not {limit}")
    relation = store.relation(table_id)
    cond, params = _where(relation, where)
    cur = store.con.cursor()
    try:
        row = cur.execute(
            f"SELECT count(*) FROM {quote(relation.sql_name)}{cond}", params
        ).fetchone()
        total = int(row[0]) if row else 0
    finally:
        cur.close()
    rows = _select(store, relation, where, sort, descending, offset, limit).fetchall()
    return Page(
        table_id=table_id,
        relation=relation,
        total=total,
        offset=offset,
        limit=limit,
        row_ids=[int(r[0]) for r in rows],
        values=[tuple(r[1:]) for r in rows],
        sort=None if sort is None else relation.column(sort).name,
        descending=descending,
        where=list(where),
    )


def _select(
    store: Store,
    relation: Relation,
    where: Sequence[Filter],
    sort: str | None,
    descending: bool,
    offset: int,
    limit: int | None,
) -> Any:
    """The selected rows (`_row` first, then every column) as a DuckDB relation."""
    cond, params = _where(relation, where)
    order = quote(ROW_COLUMN)
    if sort is not None:
        key = quote(relation.column(sort).name)
        order = f"{key} {'DESC' if descending else 'ASC'} NULLS LAST, {order}"
    names = "".join(", " + quote(c.name) for c in relation.columns)
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    return store.con.cursor().sql(
        f"SELECT {quote(ROW_COLUMN)}{names} FROM {quote(relation.sql_name)}{cond} "
        f"ORDER BY {order}{cut} OFFSET {int(offset)}",
        params=params,
    )


def facets(
    store: Store, table_id: str, column: str, *, k: int = 10, where: Sequence[Filter] = ()
) -> list[tuple[Any, int]]:
    """The `k` most frequent values of `column` among the matching rows, with counts."""
    relation = store.relation(table_id)
    name = quote(relation.column(column).name)
    cond, params = _where(relation, where)
    cur = store.con.cursor()
    try:
        rows = cur.execute(
            f"SELECT {name}, count(*) AS n FROM {quote(relation.sql_name)}{cond} "
            f"GROUP BY {name} ORDER BY n DESC, {name} NULLS LAST LIMIT ?",
            [*params, max(0, k)],
        ).fetchall()
    finally:
        cur.close()
    return [(value, int(n)) for value, n in rows]


def export(
    store: Store,
    table_id: str,
    fmt: str,
    *,
    raw: bool = False,
    offset: int = 0,
    limit: int | None = None,
    sort: str | None = None,
    descending: bool = False,
    where: Sequence[Filter] = (),
) -> bytes:
    """The table (or the rows a page selects) as a file in `fmt` (module docstring)."""
    import pyarrow as pa

    if fmt not in EXPORT_FORMATS:
        raise BadValue(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    if raw and fmt == "parquet":
        raise BadValue("--raw gives the cells' text: use csv, tsv, json or xlsx")
    relation = store.relation(table_id)
    if offset < 0:
        raise BadValue(f"offset must be 0 or more, not {offset}")
    headers = list(unique_names(" / ".join(c.header) for c in relation.columns))
    result = _select(store, relation, where, sort, descending, offset, limit)
    arrow = result.to_arrow_table()
    if raw:
        ids = [int(x) for x in arrow.column(0).to_pylist()]
        if fmt in ("csv", "tsv"):  # the cells as the serializer writes them (header rows too)
            from tablequest.table import serialize

            return serialize(
                store.get_rows(table_id, ids), "csv" if fmt == "csv" else "tsv"
            ).encode()
        frame = store.get_rows(table_id, ids).to_dataframe(typed=False)
        frame = frame.reset_index(drop=True)
        frame.columns = headers
        arrow = pa.Table.from_pandas(frame, preserve_index=False)
    else:
        arrow = arrow.drop_columns([ROW_COLUMN]).rename_columns(headers)
    return encode(arrow, fmt)


def _csv_values(array: Any) -> list[Any]:
    """A column's values as CSV text: NULL empty, dates and times in ISO form."""
    return [_csv_value(v) for v in array.to_pylist()]


def _csv_value(value: Any) -> str:
    """One value as CSV text (`show`, `sql` and the API write the same)."""
    from tablequest.corpus.storage.sql import json_value

    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))  # 7.0 as 7, as a spreadsheet writes it
    shown = json_value(value)
    if shown is None:
        return ""
    if isinstance(shown, bool):
        return "true" if shown else "false"
    if isinstance(shown, (list, dict)):
        return json.dumps(shown, ensure_ascii=False)
    return str(shown)


def _xlsx_value(value: Any) -> Any:
    """A value as an xlsx cell: control characters xlsx cannot hold become U+FFFD; an integer
    decimal (HUGEINT) past 2**53, which a spreadsheet's number would round, is written as its
    digits."""
    import decimal

    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if isinstance(value, str):
        return ILLEGAL_CHARACTERS_RE.sub("\ufffd", value)
    if isinstance(value, decimal.Decimal) and abs(value) > 2**53:
        exponent = value.as_tuple().exponent
        if isinstance(exponent, int) and exponent >= 0:
            return str(value)
    return value


def encode(arrow: Any, fmt: str) -> bytes:
    """A pyarrow Table as a file in `fmt` (one of EXPORT_FORMATS)."""
    out = io.BytesIO()
    if fmt in ("csv", "tsv"):
        # the csv module quotes only what needs quotes (pyarrow quotes every string)
        text = io.StringIO()
        writer = csv.writer(text, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        writer.writerow(arrow.column_names)
        for batch in arrow.to_batches(8192):
            columns = [_csv_values(c) for c in batch.columns]
            writer.writerows(zip(*columns, strict=True))
        out.write(text.getvalue().encode())
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(arrow, out)
    elif fmt == "json":
        from tablequest.corpus.storage.sql import json_value

        records = [{k: json_value(v) for k, v in r.items()} for r in arrow.to_pylist()]
        out.write(json.dumps(records, ensure_ascii=False, indent=1).encode())
    else:
        from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

        frame = arrow.to_pandas()
        for name in frame.columns:
            if frame[name].dtype.kind not in "biufmM":
                frame[name] = frame[name].astype(object).map(_xlsx_value)
        frame.columns = [ILLEGAL_CHARACTERS_RE.sub("\ufffd", str(c)) for c in frame.columns]
        frame.to_excel(out, index=False, engine="openpyxl")
    return out.getvalue()
