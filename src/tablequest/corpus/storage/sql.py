"""Read-only SQL over a store's relations (`tablequest sql`, `/v1/sql`, MCP `query_sql`).

A query runs on its own DuckDB connection: an in-memory database that attaches the store
file READ_ONLY, then turns external access off (no file readers such as
`read_csv('/etc/passwd')`, no `COPY`, `ATTACH`, `INSTALL`/`LOAD`) and locks its
configuration (no `SET`). Before it runs, the statement is checked with DuckDB's own parser:

- exactly one statement, and a SELECT (DESCRIBE, SUMMARIZE, FROM-first, VALUES, UNPIVOT and
  PIVOT with its values listed, `PIVOT t ON c IN ('a', 'b') USING …`, included), or
  `EXPLAIN [ANALYZE] [(FORMAT …)]` of one (the explained SELECT is checked as any query, and
  EXPLAIN ANALYZE, which runs it, within the same limits). A PIVOT without `IN` is refused:
  DuckDB makes it two statements, the first creating an ENUM type of the column's values —
  a write, and a statement this check cannot see into;
- every table it names is one of the store's relations (or a WITH name of the query that
  does not shadow one of the store's own tables: `tables`, `indexes`, …, whose rows hold
  source paths and indexes, are never readable, nor DuckDB's catalog views);
- table functions only `range`, `generate_series` and `unnest`; no `current_setting`,
  `getvariable` or `duckdb_*`/`pragma_*` function (they show paths and settings).

Limits: `timeout` seconds (the query is interrupted: `SqlTimeout`, code ``sql_timeout``),
`limit` rows and `max_bytes` bytes of result (the result says `truncated` and why), DuckDB's
memory limit and threads. Errors name
the line and column DuckDB points at and suggest close table and column names.

A sharded corpus is refused with a message naming its shard files: each shard is a store
with its own relations, and one query across them would need one meaning for relation
names that repeat across shards (ours; `tablequest sql -s SHARD.duckdb` queries one).
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from tablequest.corpus.storage.relations import INTERNAL_TABLES, Relation
from tablequest.corpus.storage.storefile import NotAStore, StoreError, sql_literal
from tablequest.errors import UsageError

__all__ = ["SqlError", "SqlRefused", "SqlResult", "SqlRunner", "SqlTimeout", "json_value"]

DEFAULT_LIMIT = 1000
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MEMORY_LIMIT = "1GB"
TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
DENIED_FUNCTIONS = frozenset({"current_setting", "getvariable", "getenv", "current_schemas"})
DENIED_PREFIXES = ("duckdb_", "pragma_")
EXPLAIN_WORDS = frozenset({"analyze", "format", "text", "json", "html", "graphviz", "yaml", ","})
_CARET = re.compile(r"LINE (\d+): (.*)\n(\s*)\^")


class SqlError(UsageError):
    """A query failed (syntax, unknown name, time or memory limit); `line`/`column` when
    DuckDB pointed at a place."""

    code = "sql"

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


class SqlRefused(SqlError):
    """The statement is not allowed (not a single SELECT, or it names what it may not)."""

    code = "sql_refused"


class SqlTimeout(SqlError):
    """The query ran past its time limit and was interrupted: the query is valid but too
    costly at that limit (exit 2, HTTP 422, code ``sql_timeout``; not 408, which clients
    retry, nor 503: the same query would run past the limit again)."""

    code = "sql_timeout"
    http_status = 422


@dataclass
class SqlResult:
    """Columns (name, DuckDB type), rows, and whether a limit cut them."""

    columns: list[tuple[str, str]]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    truncated_by: str | None = None  # "rows" | "bytes"
    seconds: float = 0.0
    arrow: Any = field(default=None, repr=False)  # the rows as a pyarrow Table

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [{"name": n, "type": t} for n, t in self.columns],
            "rows": [[json_value(v) for v in row] for row in self.rows],
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "truncated_by": self.truncated_by,
            "seconds": round(self.seconds, 4),
        }


def json_value(value: Any) -> Any:
    """A result value as JSON can hold it (dates as ISO text, decimals as numbers).

    A decimal without a fractional part in its type (DuckDB gives HUGEINT, what ``sum`` of
    an integer column returns, as DECIMAL(38,0)) is an integer, every digit kept; one with
    a fractional part is a float (DECIMAL(10,2) 12.50 → 12.5)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        if isinstance(exponent, int) and exponent >= 0:
            return int(value)
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class SqlRunner:
    """Runs checked, read-only queries on one store file (a connection of its own).

    Raises (on creation):
        StoreError: the store cannot be opened (missing, locked, not a store, outdated).
    """

    def __init__(self, path: str | Path, *, lock_timeout: float | None = None) -> None:
        self.path = Path(path).expanduser()
        self.relations = self._relations(lock_timeout)
        self._names = {r.sql_name.casefold(): r for r in self.relations}
        self._lock = threading.Lock()
        self.con = duckdb.connect(":memory:")
        try:
            self.con.execute(f"ATTACH {sql_literal(str(self.path))} AS store (READ_ONLY)")
            self.con.execute("USE store")
            self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
            self.con.execute("SET threads = 2")
            self.con.execute("SET enable_progress_bar = false")
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            self.con.close()
            raise StoreError(f"cannot open store {str(self.path)!r} for SQL: {exc}") from exc

    def _relations(self, lock_timeout: float | None) -> list[Relation]:
        from tablequest.corpus.storage.shards import is_manifest
        from tablequest.corpus.storage.store import Store

        if is_manifest(self.path):  # bad input: the fix is -s SHARD.duckdb
            raise NotAStore(
                f"{str(self.path)!r} is a sharded corpus: `sql` runs on one store file, and "
                "each shard is one (its relations named in its own `tables --json`); query "
                "a shard file with -s SHARD.duckdb"
            )
        with Store(self.path, read_only=True, lock_timeout=lock_timeout) as store:
            store._need_relations()
            return store.relations()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> SqlRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- checking -----------------------------------------------------------------------
    def check(self, query: str) -> None:
        """Refuse what is not one SELECT (or EXPLAIN of one) over the store's relations
        (module docstring)."""
        kind = self._kind(query)
        if kind == "EXPLAIN":
            query = _explained(query)
            kind = self._kind(query)
            if kind != "SELECT":
                raise SqlRefused(
                    f"EXPLAIN runs here only on a SELECT ({_first_word(query) or kind} "
                    "refused): EXPLAIN ANALYZE runs the statement, and the store is read-only"
                )
        if kind == "MULTI" and "PIVOT" in _words(query):
            raise SqlRefused(
                "PIVOT needs its values listed here: PIVOT t ON col IN ('a', 'b') USING "
                "sum(x). Without IN, DuckDB first creates an ENUM type of the column's values "
                "(a write, in a statement this check cannot see); SELECT DISTINCT col FROM t "
                "lists them"
            )
        if kind != "SELECT":
            word = _first_word(query) or kind
            raise SqlRefused(
                f"only SELECT statements run here ({word} refused): the store is read-only"
            )
        tree = json.loads(self.con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()[0])  # type: ignore[index]
        if tree.get("error"):
            raise SqlRefused(f"this statement cannot be checked: {tree.get('error_message')}")
        ctes: set[str] = set()
        refs: list[dict[str, Any]] = []
        _walk(tree, ctes, refs)
        for name in ctes:
            if name in INTERNAL_TABLES:
                raise SqlRefused(f"a WITH name may not be {name!r} (one of the store's own tables)")
        for node in refs:
            self._check_ref(node, ctes)

    def _kind(self, query: str) -> str:
        """The one statement's type name (SELECT, EXPLAIN, MULTI, …)."""
        try:
            statements = self.con.extract_statements(query)
        except duckdb.Error as exc:
            raise _error(exc) from None
        if len(statements) != 1:
            raise SqlRefused(f"give exactly one SQL statement ({len(statements)} given)")
        return str(statements[0].type.name)

    def _check_ref(self, node: dict[str, Any], ctes: set[str]) -> None:
        kind = node.get("type") or node.get("class")
        if kind == "FUNCTION":
            name = str(node.get("function_name", "")).casefold()
            if name in DENIED_FUNCTIONS or name.startswith(DENIED_PREFIXES):
                raise SqlRefused(f"the function {name}() is not available here")
            return
        if kind == "TABLE_FUNCTION":
            name = str((node.get("function") or {}).get("function_name", "")).casefold()
            if name not in TABLE_FUNCTIONS:
                raise SqlRefused(
                    f"the table function {name}() is not available here; query the store's "
                    "relations (`tablequest tables --json` lists their sql_name)"
                )
            return
        name = str(node.get("table_name", "")).strip('"').casefold()
        catalog = str(node.get("catalog_name", "")).casefold()
        schema = str(node.get("schema_name", "")).casefold()
        if kind == "SHOW_REF" and not name:
            return  # DESCRIBE/SUMMARIZE of a query: its tables are checked on their own
        if kind == "SHOW_REF" and name in ("__show_tables_expanded", "tables", "databases"):
            raise SqlRefused(
                "SHOW TABLES is not available here: `tablequest tables` (MCP: list_tables) "
                "lists the tables with their sql_name; DESCRIBE name shows a table's columns"
            )
        plain = not catalog and not schema
        if (
            catalog in ("", "store")
            and schema in ("", "main")
            and (name in self._names or (plain and name in ctes))
        ):
            return
        raise SqlRefused(self._unknown(".".join(p for p in (catalog, schema, name) if p)))

    def _unknown(self, name: str) -> str:
        names = sorted(r.sql_name for r in self.relations)
        close = difflib.get_close_matches(name.rsplit(".", 1)[-1], names, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        listed = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
        return f"no table {name!r} here.{hint} Tables: {listed or '(none)'}"

    # -- running ------------------------------------------------------------------------
    def run(
        self,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> SqlResult:
        """Check and run `query`; at most `limit` rows and `max_bytes` bytes come back.

        Raises:
            SqlRefused: a statement that is not allowed (nothing was run).
            SqlError: DuckDB's error (with line and column), or a limit it ran into.
        """
        import pyarrow as pa

        with self._lock:
            self.check(query)
            cursor = self.con.cursor()
        started = time.monotonic()
        timer = threading.Timer(timeout, cursor.interrupt)
        timer.start()
        try:
            cursor.execute("USE store")
            relation = _bind(cursor, query)
            types = [str(t) for t in relation.types]
            reader = relation.to_arrow_reader(1024)
            batches, rows, size, cut = [], 0, 0, None
            for batch in reader:
                if rows + batch.num_rows > limit:
                    batch, cut = batch.slice(0, limit - rows), "rows"
                if size + batch.nbytes > max_bytes:
                    batch, cut = _fit(batch, max_bytes - size), "bytes"
                batches.append(batch)
                rows, size = rows + batch.num_rows, size + batch.nbytes
                if cut:
                    break
            arrow = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.InterruptException:
            raise SqlTimeout(
                f"the query ran past the time limit of {timeout:g} s: narrow it (a WHERE, "
                "fewer joins) or raise the limit"
            ) from None
        except duckdb.OutOfMemoryException:
            raise SqlError(
                f"the query needed more than the memory limit ({MEMORY_LIMIT})"
            ) from None
        except duckdb.Error as exc:
            raise _error(exc) from None
        finally:
            timer.cancel()
            cursor.close()
        names = arrow.column_names
        if len(types) != len(names):
            types = [str(arrow.schema.field(i).type) for i in range(len(names))]
        columns = list(zip(names, types, strict=True))
        return SqlResult(
            columns=columns,
            rows=[tuple(r.values()) for r in arrow.to_pylist()],
            truncated=cut is not None,
            truncated_by=cut,
            seconds=time.monotonic() - started,
            arrow=arrow,
        )


_WORD = re.compile(r"(?:\s|--[^\n]*\n?|/\*.*?\*/)*([A-Za-z]+)", re.S)


def _first_word(query: str) -> str:
    """The statement's first keyword (after comments), upper case."""
    match = _WORD.match(query)
    return match.group(1).upper() if match else ""


def _words(query: str) -> list[str]:
    """The query's keywords and identifiers, upper case (comments and strings skipped)."""
    tokens = duckdb.tokenize(query)
    ends = [pos for pos, _ in tokens[1:]] + [len(query)]
    kept = (duckdb.token_type.keyword, duckdb.token_type.identifier)
    return [query[p:e].strip().upper() for (p, t), e in zip(tokens, ends, strict=True) if t in kept]


def _explained(query: str) -> str:
    """The statement an `EXPLAIN [ANALYZE] [(options)]` explains (its text, from the first
    token after the prefix). Options other than ANALYZE and FORMAT are refused."""
    tokens = [(p, t) for p, t in duckdb.tokenize(query) if t != duckdb.token_type.comment]
    ends = [pos for pos, _ in tokens[1:]] + [len(query)]
    words = [query[p:e].strip() for (p, _), e in zip(tokens, ends, strict=True)]
    i = 1  # words[0] is EXPLAIN
    if i < len(words) and words[i].casefold() == "analyze":
        i += 1
    if i < len(words) and words[i] == "(":
        close = next((j for j in range(i, len(words)) if words[j] == ")"), len(words))
        unknown = [w for w in words[i + 1 : close] if w.casefold() not in EXPLAIN_WORDS]
        if close == len(words) or unknown:
            raise SqlRefused(
                f"EXPLAIN takes here only ANALYZE and FORMAT text|json|html|graphviz "
                f"({' '.join(unknown) or 'an unclosed ('} refused)"
            )
        i = close + 1
    if i >= len(words):
        raise SqlRefused("EXPLAIN of what? Give a SELECT after it")
    return query[tokens[i][0] :]


def _bind(cursor: duckdb.DuckDBPyConnection, query: str) -> duckdb.DuckDBPyRelation:
    """The query as a relation; a binding error comes with the place it points at (DuckDB
    gives the place only when the query is executed, and binding fails before any work)."""
    try:
        return cursor.sql(query)
    except (duckdb.BinderException, duckdb.CatalogException, duckdb.ParserException):
        cursor.execute(query)
        raise


def _fit(batch: Any, room: int) -> Any:
    """The longest head of `batch` within `room` bytes (halving; Arrow sizes are per buffer)."""
    n = batch.num_rows
    while n > 0 and batch.slice(0, n).nbytes > room:
        n //= 2
    return batch.slice(0, n)


def _walk(node: Any, ctes: set[str], refs: list[dict[str, Any]]) -> None:
    """Collect WITH names and every table reference and function call of a parsed query."""
    if isinstance(node, dict):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map") or []:
                ctes.add(str(entry.get("key", "")).casefold())
        kind = node.get("type")
        if kind in ("BASE_TABLE", "TABLE_FUNCTION", "SHOW_REF") or node.get("class") == "FUNCTION":
            refs.append(node)
        for value in node.values():
            _walk(value, ctes, refs)
    elif isinstance(node, list):
        for value in node:
            _walk(value, ctes, refs)


def _error(exc: duckdb.Error) -> SqlError:
    """DuckDB's error as a SqlError with the line and column its caret points at."""
    message = str(exc)
    line = column = None
    match = _CARET.search(message)
    if match:
        line = int(match.group(1))
        column = len(match.group(3)) - len(f"LINE {line}: ") + 1
    first = message.split("\n\nLINE")[0].strip().replace("\n", " ")
    where = f" (line {line}, column {column})" if line is not None else ""
    return SqlError(first + where, line=line, column=column)
