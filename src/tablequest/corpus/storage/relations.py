"""Each stored table as a typed DuckDB relation: names, types, writing and migration.

Every table of a store (format 2 and later) is also one DuckDB relation in the store file,
so DuckDB itself reads the data (`duckdb.connect(STORE, read_only=True).sql("SELECT … FROM
fuel_prices")`), and `tablequest sql`, paging, sorting, filters and typed exports run as SQL.

- **Table or view** (ours, measured): DuckDB gives every table at least one block of its own
  (16 KiB, its smallest) and never packs two tables into one, so a corpus of small tables
  paid ~16 KiB a table. A table of at most `SMALL_CELLS` body cells is therefore a *view*
  over the shared `tq_small(table_id, rows)`, whose `rows` holds the typed rows as one JSON
  array (`from_json` reads each value back into its column's type: numbers as Python writes
  them, dates and times in ISO form); a bigger table is a DuckDB table. Both are read the
  same way, with the same names and types (tested equal). WikiTableQuestions' `204-csv`
  (2,997 tables): 89.5 → 40.8 MiB. The price: a query on a view reads and parses its
  table's JSON (a `count(*)`: 37 ms against 2 ms for a table, at load average 13).

- **Relation name** (`sql_name`): from the table's name as `tablequest tables` lists it (its
  title when the file gave one, else the file name without extension, plus the sheet):
  lower case, every run of characters other than letters and digits one `_`, at most 40
  characters; a name that starts with a digit gets `t_` in front; an empty one is `table`.
  Unique in the store: `fuel_prices`, `fuel_prices_2`, …; the store's own tables
  (`tables`, `indexes`, `embeddings`, `relations`, `store_meta`, `tq_small`) and SQL's
  reserved words are never used as names (`tables_2`, `select_2`). A table keeps its name
  when its file is ingested again.
- **Column names**: from each column's header path joined with " / " (`Size / Depth m` →
  `size_depth_m`), the same rule, at most 63 characters; `c` + the number for an empty header
  (`c3`); a name starting with a digit gets `_` in front (`2019` → `_2019`); a reserved word
  gets `_` behind (`order_`); repeats get `_2`, `_3`. The first column, `_row`, is the body
  row id (what evidence and `show` name rows by). The header path of every column is kept in
  the `relations` metadata table with its SQL type.
- **Types**: exactly `Table.to_dataframe()`'s rule (`table/dtypes.py`): BIGINT, DOUBLE,
  BOOLEAN, TIMESTAMP (DATE when every value is at midnight), else VARCHAR with the cell text as
  stored (an empty text cell is the empty string, not NULL). Missing cells of a typed column
  are NULL.
- **Structure** (header rows, merges, notes, title, source and every cell's original text)
  stays in `tables.data`, so every view renders exactly as before.

Metadata: `relations(table_id, sql_name, columns)` (`columns`: JSON list of {name, header,
type, col_id}); `store_meta(key, value)` holds `format_version`. Stores written before
format 2 are migrated by `migrate_rows` (see `Store`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from tablequest.table import Table

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["FORMAT_VERSION", "INTERNAL_TABLES", "Column", "Relation", "column_names"]
__all__ += ["relation_arrow", "sql_identifier", "table_sql_name"]

FORMAT_VERSION = 2
INTERNAL_TABLES = frozenset(
    {"tables", "indexes", "embeddings", "relations", "store_meta", "tq_small"}
)
SMALL_CELLS = 4096  # a relation of at most this many body cells is a view over `tq_small`
ROW_COLUMN = "_row"
RAW_SUFFIX = "~text"  # tq_raw."<id>~text": a streamed table's text the relation does not give
NAME_CHARS = 40
COLUMN_CHARS = 63

# DuckDB's reserved keywords (`SELECT keyword_name FROM duckdb_keywords() WHERE
# keyword_category = 'reserved'`, DuckDB 1.x–2.0): a relation or column named so would need
# quotes in every query.
RESERVED = frozenset(
    {
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "both",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "constraint",
        "create",
        "default",
        "deferrable",
        "desc",
        "describe",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "false",
        "fetch",
        "for",
        "foreign",
        "from",
        "grant",
        "group",
        "having",
        "in",
        "initially",
        "intersect",
        "into",
        "lateral",
        "leading",
        "limit",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "pivot",
        "pivot_longer",
        "pivot_wider",
        "placing",
        "primary",
        "qualify",
        "references",
        "returning",
        "select",
        "show",
        "summarize",
        "symmetric",
        "table",
        "then",
        "to",
        "trailing",
        "true",
        "union",
        "unique",
        "unpivot",
        "using",
        "variadic",
        "when",
        "where",
        "window",
        "with",
        "lambda",
        "not",
        "null",
        "some",
    }
)

_NOT_WORD = re.compile(r"[^\w]+|_+")


def sql_identifier(text: str, *, limit: int = COLUMN_CHARS) -> str:
    """`text` as a lower-case SQL-safe word: runs of other characters become one `_`."""
    folded = unicodedata.normalize("NFKC", text).lower()
    word = _NOT_WORD.sub("_", folded).strip("_")
    if len(word) > limit:
        cut = word.rfind("_", 0, limit + 1)  # end at a word boundary where there is one
        word = word[: cut if cut >= limit // 2 else limit].rstrip("_")
    return word


def _unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def column_names(table: Table) -> list[str]:
    """The relation's column names for `table`'s columns (module docstring), `_row` excluded."""
    taken = {ROW_COLUMN}
    names = []
    for j in range(table.n_cols):
        word = sql_identifier(" / ".join(table.header_path(j))) or f"c{j + 1}"
        if word[0].isdigit():
            word = "_" + word
        if word in RESERVED:
            word += "_"
        names.append(_unique(word, taken))
    return names


def display_name(path: str, sheet: str | None, title: str | None) -> str:
    """The name the table's relation is made from: its title, else file stem (+ sheet)."""
    if title and title.strip():
        return title
    stem = PurePath(path).stem or PurePath(path).name
    return stem if sheet is None else f"{stem} {sheet}"


def table_sql_name(name: str, taken: set[str]) -> str:
    """A new unique relation name made from a table's `name` (added to `taken`)."""
    word = sql_identifier(name, limit=NAME_CHARS) or "table"
    if word[0].isdigit():
        word = "t_" + word
    candidate, k = word, 2
    while candidate in taken or candidate in INTERNAL_TABLES or candidate in RESERVED:
        candidate, k = f"{word}_{k}", k + 1
    taken.add(candidate)
    return candidate


@dataclass(frozen=True)
class Column:
    """One relation column: its SQL name, the header path it came from, type and column id."""

    name: str
    header: tuple[str, ...]
    type: str
    col_id: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "header": list(self.header),
            "type": self.type,
            "col_id": self.col_id,
        }


@dataclass(frozen=True)
class Relation:
    """A stored table's relation: its id, SQL name and columns (`_row` not listed)."""

    table_id: str
    sql_name: str
    columns: tuple[Column, ...]

    @classmethod
    def from_row(cls, table_id: str, sql_name: str, columns: str) -> Relation:
        cols = tuple(
            Column(c["name"], tuple(c["header"]), c["type"], int(c["col_id"]))
            for c in json.loads(columns)
        )
        return cls(table_id, sql_name, cols)

    def column(self, name: str) -> Column:
        """The column called `name` (its SQL name, or its header path as shown)."""
        for col in self.columns:
            if name in (col.name, " / ".join(col.header)):
                return col
        known = ", ".join(c.name for c in self.columns)
        raise KeyError(f"no column {name!r} in {self.sql_name}; columns: {known}")

    def to_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "sql_name": self.sql_name,
            "columns": [c.to_json() for c in self.columns],
        }


def relation_arrow(table: Table) -> tuple[pa.Table, list[Column]]:
    """`table`'s body as an Arrow table (`_row`, then its typed columns) and its columns."""
    import pyarrow as pa

    body = table.body
    texts = [pa.array([row[j] for row in body], type=pa.string()) for j in range(table.n_cols)]
    return typed_arrow(table, pa.array(list(table.row_ids), type=pa.int64()), texts)


def typed_arrow(
    table: Table, row_ids: pa.Array, texts: list[pa.Array]
) -> tuple[pa.Table, list[Column]]:
    """The relation of `table` (its header and ids) whose body columns' text is `texts`."""
    import pyarrow as pa

    from tablequest.table import type_string_columns

    names = column_names(table)
    arrays = [row_ids.combine_chunks() if hasattr(row_ids, "combine_chunks") else row_ids]
    columns = []
    for j, (sql_type, array) in enumerate(type_string_columns(texts)):
        arrays.append(array)
        columns.append(Column(names[j], table.header_path(j), sql_type, table.col_ids[j]))
    return pa.Table.from_arrays(arrays, names=[ROW_COLUMN, *names]), columns


def quote(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def existing_names(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """table id → sql_name of every relation in the store."""
    return dict(con.execute("SELECT table_id, sql_name FROM relations").fetchall())


def drop_relations(con: duckdb.DuckDBPyConnection, table_ids: Sequence[str]) -> None:
    """Drop the relations of `table_ids` and their metadata (inside the caller's transaction)."""
    if not table_ids:
        return
    _drop_raw(con, table_ids)  # first: its view reads the relation
    rows = con.execute(
        "SELECT sql_name FROM relations WHERE list_contains(?, table_id)", [list(table_ids)]
    ).fetchall()
    found = views(con, [n for (n,) in rows])
    for (name,) in rows:
        con.execute(f"DROP {'VIEW' if name in found else 'TABLE'} IF EXISTS {quote(name)}")
    con.execute("DELETE FROM tq_small WHERE list_contains(?, table_id)", [list(table_ids)])
    con.execute("DELETE FROM relations WHERE list_contains(?, table_id)", [list(table_ids)])


def views(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> set[str]:
    """Which of the relation `names` are views (a small table's, over `tq_small`)."""
    found = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' "
        "AND database_name = current_database() AND list_contains(?, view_name)",
        [list(names)],
    ).fetchall()
    return {r[0] for r in found}


def raw_objects(con: duckdb.DuckDBPyConnection, table_ids: Sequence[str]) -> dict[str, str]:
    """The streamed tables' text objects of `table_ids` (streaming.py): name → `VIEW` or
    `TABLE`, for the view `tq_raw."<id>"` and the table `tq_raw."<id>~text"` (a store
    written before the view was made keeps a table `tq_raw."<id>"`)."""
    names = [n for t in table_ids for n in (t, t + RAW_SUFFIX)]
    found = con.execute(
        "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE schema_name = 'tq_raw' "
        "AND database_name = current_database() AND list_contains(?, view_name) UNION ALL "
        "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE schema_name = 'tq_raw' "
        "AND database_name = current_database() AND list_contains(?, table_name)",
        [names, names],
    ).fetchall()
    return {str(name): str(kind) for name, kind in found}


def _drop_raw(con: duckdb.DuckDBPyConnection, table_ids: Sequence[str]) -> None:
    """Drop a streamed table's text objects (`raw_objects`)."""
    for name, kind in raw_objects(con, table_ids).items():
        con.execute(f"DROP {kind} tq_raw.{quote(name)}")


def create_raw_view(
    con: duckdb.DuckDBPyConnection,
    table_id: str,
    sql_name: str,
    columns: Sequence[Column],
    kept: Collection[str],
) -> None:
    """`tq_raw."<table id>"`, a streamed table's text as read (`streaming.py`): column `cJ`
    from `tq_raw."<table id>~text"` when it is `kept` there, else from the relation: a text
    column as it is, a typed one cast back to text (checked at ingest to give the cells)."""
    picks = []
    for j, column in enumerate(columns):
        if f"c{j}" in kept:
            picks.append(f"r.c{j}")
        else:
            cast = "" if column.type == "VARCHAR" else "::VARCHAR"
            picks.append(f"t.{quote(column.name)}{cast} AS c{j}")
    joined = f"main.{quote(sql_name)} t"
    if kept:
        joined += f" JOIN tq_raw.{quote(table_id + RAW_SUFFIX)} r ON r._row = t._row"
    con.execute(
        f"CREATE VIEW tq_raw.{quote(table_id)} AS SELECT t._row, {', '.join(picks)} FROM {joined}"
    )


def write_relations(
    con: duckdb.DuckDBPyConnection,
    rows: Iterable[tuple[Any, ...]],
    keep: dict[str, str],
) -> None:
    """Create the relation of every `tables` row in `rows` (inside the caller's transaction).

    `keep` maps table ids whose relations were just dropped to their old names, so a table
    ingested again keeps its name. The rows' relations must not exist yet.
    """
    taken = {str(r[0]) for r in con.execute("SELECT sql_name FROM relations").fetchall()}
    metadata: list[tuple[str, str, str]] = []
    small: list[tuple[str, str]] = []
    for row in rows:
        table_id, path, sheet, title, data = row[0], row[1], row[5], row[6], row[10]
        name = keep.get(table_id)
        if name is None or name in taken:
            name = table_sql_name(display_name(path, sheet, title), taken)
        else:
            taken.add(name)
        if len(row) > 13:  # typed where it was read (`store.table_row`)
            arrow, columns = row[13]
        else:
            arrow, columns = relation_arrow(Table.from_dict(json.loads(data)))
        if arrow.num_rows * len(columns) <= SMALL_CELLS:
            small.append((table_id, _json_rows(arrow)))
            create_view(con, name, table_id, columns)
        else:
            _create_table(con, name, arrow)
        metadata.append((table_id, name, columns_json(columns)))
    _insert_metadata(con, metadata)
    _insert_small(con, small)


def _create_table(con: duckdb.DuckDBPyConnection, name: str, arrow: pa.Table) -> None:
    # a relation over the Arrow table: half the cost of register/unregister per table
    # (measured: 1.0 against 1.8 ms a table)
    con.from_arrow(arrow).create(quote(name))


def _json_rows(arrow: pa.Table) -> str:
    """A small relation's rows as one JSON array of objects (`_row` and its columns), each
    value as DuckDB's `from_json` reads it back into the column's type: numbers as Python
    writes them (exact), dates and times in ISO form, NULL as null."""
    return json.dumps(arrow.to_pylist(), ensure_ascii=False, default=str)


def create_view(
    con: duckdb.DuckDBPyConnection, name: str, table_id: str, columns: list[Column]
) -> None:
    """The relation of a small table: a view reading its typed rows from `tq_small`."""
    shape = json.dumps([{ROW_COLUMN: "BIGINT", **{c.name: c.type for c in columns}}])
    literal = "'" + shape.replace("'", "''") + "'"
    ident = "'" + table_id.replace("'", "''") + "'"  # ids are ours, but never trust a quote
    con.execute(
        f"CREATE VIEW {quote(name)} AS SELECT unnest(from_json(rows, {literal}), "
        f"recursive := true) FROM main.tq_small WHERE table_id = {ident}"
    )


def _insert_small(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str]]) -> None:
    insert_lists(con, "tq_small", rows, 2)


def columns_json(columns: Sequence[Column]) -> str:
    """The `relations.columns` value of a relation's columns."""
    return json.dumps([c.to_json() for c in columns], ensure_ascii=False)


def _insert_metadata(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str]]) -> None:
    insert_lists(con, "relations", rows, 3)


def insert_lists(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[str, ...]], width: int
) -> None:
    """Insert `rows` in one statement, each column passed as one list and unnested (not an
    Arrow table of Python values: `pa.array` imports pandas, `table.dtypes_arrow` says why;
    not `executemany`: a statement per row)."""
    if rows:
        unnest = ", ".join(f"unnest(${i + 1})" for i in range(width))
        con.execute(
            f"INSERT INTO {table} SELECT {unnest}", [[r[i] for r in rows] for i in range(width)]
        )
