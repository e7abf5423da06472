"""`tablequest sql` and `tablequest migrate`: read-only SQL over a store's relations, and
bringing a store written before them up to date.

`sql "SELECT …"` runs one checked, read-only query (`tablequest.corpus.storage.sql`) on the
store named by the store rule (`--store/-s`, see `_options`): the relations are the store's
tables by their `sql_name` (`tablequest tables` lists them). `--format table` (default) prints
a readable table, then the row count and, when `--limit` or the byte limit cut the result, a
line saying so; `csv`, `tsv` and `json` (records) go to stdout, `parquet` and `xlsx` to
`--output FILE` or a pipe (never a terminal); `--json` prints the result as the API
answers it. A refused statement, a syntax error (with its line and column), an unknown name
and a time limit end with one ``error:`` line and exit 2 (``--json``: codes ``sql_refused``,
``sql`` and ``sql_timeout``); a missing store and a sharded corpus's manifest (query a shard
file) exit 2, a store of format 1 (`tablequest migrate`) exits 1, with the library's message.

`migrate [STORE]` opens the store for writing, which rewrites a store of format 1 into the
current format (every table kept, each gets its relation), and says which happened; a
sharded corpus's manifest migrates every shard. A missing store exits 2 and is not created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli._defaults import SQL_LIMIT, SQL_TIMEOUT
from tablequest.cli._exit import USAGE
from tablequest.cli._options import (
    JsonOpt,
    OutputOpt,
    StoreOpt,
    default_store_path,
    require_store,
)
from tablequest.cli._output import emit_file, fail, fail_on, print_json, wide_console

if TYPE_CHECKING:
    from rich.text import Text

    from tablequest.corpus import SqlResult

__all__ = ["migrate_command", "register", "sql_command"]

SQL_FORMATS = ("table", "csv", "tsv", "json", "parquet", "xlsx")


def sql_command(
    query: Annotated[
        str,
        typer.Argument(
            metavar="QUERY",
            help="One SELECT over the store's tables, named by their sql_name "
            "(`tablequest tables` lists them).",
        ),
    ],
    store: StoreOpt = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-F", help="table (readable) | csv | tsv | json | parquet | xlsx."
        ),
    ] = "table",
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="At most this many rows come back.")
    ] = SQL_LIMIT,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.01, help="Seconds before the query is stopped.")
    ] = SQL_TIMEOUT,
    output: OutputOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run one read-only SQL query over the store's tables (each a typed relation)."""
    if fmt not in SQL_FORMATS:
        fail(f"--format takes {' | '.join(SQL_FORMATS)}, got {fmt!r}", json_out=json_out)
    if output is not None and (json_out or fmt == "table"):
        fail("--output takes an export: add --format csv | tsv | json | parquet | xlsx",
             json_out=json_out)  # fmt: skip
    path = require_store(
        store.expanduser() if store is not None else default_store_path(), json_out=json_out
    )
    from tablequest.corpus import SqlError, SqlRunner, StoreError, browse

    try:
        with SqlRunner(path) as runner:
            result = runner.run(query, limit=limit, timeout=timeout)
    except (StoreError, SqlError) as exc:
        fail_on(exc, json_out=json_out)
    if json_out:
        print_json(result.to_json())
        return
    if fmt == "table":
        _print_result(result, limit)
        return
    try:
        data = browse.encode(result.arrow, fmt)
    except Exception as exc:  # pyarrow's CSV writer: nested types (lists, structs)
        kinds = ", ".join(f"{n} {t}" for n, t in result.columns)
        fail(f"{fmt} cannot hold this result ({kinds}): use --format json or parquet ({exc})",
             status=USAGE)  # fmt: skip
    emit_file(data, fmt, output)
    if result.truncated:
        from tablequest.cli._output import err_console

        err_console.print(
            f"note: {_cut_note(result, limit)}", markup=False, highlight=False, soft_wrap=True
        )


def _cell(value: Any) -> Text:
    from rich.text import Text

    from tablequest.corpus import json_value

    if value is None:
        return Text("NULL", style="dim")
    shown = json_value(value)
    if isinstance(shown, (list, dict)):
        return Text(json.dumps(shown, ensure_ascii=False))
    return Text(str(shown))


_NUMERIC = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"}
)
_NUMERIC |= {"U" + name for name in _NUMERIC if name.endswith("INT")}


def _print_result(result: SqlResult, limit: int) -> None:
    """The rows as a readable table (each column's name over its type), then the count."""
    from rich.table import Table as RichTable
    from rich.text import Text

    from tablequest.cli._output import console

    view = RichTable()
    for name, kind in result.columns:
        numeric = kind.upper().split("(")[0] in _NUMERIC
        header = Text(name, style="bold")
        header.append(f"\n{kind.lower()}", style="dim")
        view.add_column(header, justify="right" if numeric else "left", overflow="fold")
    for row in result.rows:
        view.add_row(*(_cell(v) for v in row))
    if result.columns:
        wide_console().print(view)
    count = len(result.rows)
    line = f"{count:,} row{'s' if count != 1 else ''} ({result.seconds:.3f} s)"
    console.print(line, markup=False, highlight=False, soft_wrap=True)
    if result.truncated:
        console.print(f"note: {_cut_note(result, limit)}", style="yellow", markup=False,
                      highlight=False, soft_wrap=True)  # fmt: skip


def _cut_note(result: SqlResult, limit: int) -> str:
    """Why the result stops where it does."""
    from tablequest.corpus import SQL_MAX_BYTES

    if result.truncated_by == "bytes":
        size = SQL_MAX_BYTES // (1024 * 1024)
        return (
            f"truncated: the result passed {size} MB, the first {len(result.rows):,} rows "
            "are shown (select fewer columns, or aggregate)"
        )
    return f"truncated at --limit {limit:,} rows (a larger --limit returns more)"


def migrate_command(
    store_arg: Annotated[
        Path | None,
        typer.Argument(
            metavar="STORE",
            show_default=False,
            help="The store (a DuckDB file or a sharded corpus's manifest); or --store.",
        ),
    ] = None,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Bring a store written by an older tablequest to the current format (keeps every table)."""
    if store_arg is not None and store is not None and store_arg != store:
        fail(f"two stores given ({store_arg} and --store {store}): name one", json_out=json_out)
    chosen = store_arg if store_arg is not None else store
    path = chosen.expanduser() if chosen is not None else default_store_path()
    require_store(path, json_out=json_out)
    from tablequest.cli._output import console
    from tablequest.corpus import RELATION_FORMAT_VERSION, StoreError, open_corpus

    try:
        opened = open_corpus(path, read_only=False)  # opening for writing migrates
    except StoreError as exc:
        fail_on(exc, json_out=json_out)
    with opened as st:
        notes = [note for shard in st.shards for note in shard.notes]
        version = min(shard.format_version for shard in st.shards)
    migrated = any("migrated" in note for note in notes)
    if json_out:
        print_json({"store": str(path), "format_version": version, "migrated": migrated,
                    "notes": notes})  # fmt: skip
        return
    for note in notes:
        console.print(note, markup=False, highlight=False, soft_wrap=True)
    if not migrated:
        now = "already" if version >= RELATION_FORMAT_VERSION else "still"
        console.print(f"store {str(path)!r} is {now} format {version}; nothing to do",
                      markup=False, highlight=False, soft_wrap=True)  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``sql`` and ``migrate`` to the application."""
    app.command("sql")(sql_command)
    app.command("migrate")(migrate_command)
