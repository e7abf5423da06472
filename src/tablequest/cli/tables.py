"""`tablequest tables` and `tablequest show`: what a store holds, and one table.

`tables` lists id, sql name (the table's relation, for `tablequest sql`), name, rows × cols,
format, source and ingest time (UTC, to the minute; `--json`: ISO 8601;
`tablequest.corpus.storage.catalog`); `show ID` prints one table readably
(header levels as bold rows above a rule, row headers bold, a merged range's value once in
its first cell, the body-row ids in a dim first column), or a page of it, or exports it.

Paging (`tablequest.corpus.storage.browse`): `--offset N --rows N` pick the rows, `--sort
COLUMN [--desc]` orders them (NULLs last, ties in row order), `--where "COL OP VALUE"`
(repeatable) keeps the rows where every condition holds; the readable view shows only the
page, rendered as the whole table is (`Table.take_rows`), and says "rows A–B of TOTAL".
Exports: `markdown` through `tablequest.table.serialize` (the cells' text), `csv`, `tsv`,
`json` (records), `parquet` and `xlsx` typed from the table's relation (numbers as numbers,
dates as dates; columns named by their header paths; `--raw`: the cells' source text, not
for parquet), `--output FILE` for any of them (parquet and xlsx are never written to a
terminal). HTML is not offered: a terminal never gets table markup.

Both read the store named by the store rule (`--store/-s`, see `_options`), refuse a missing
one (exit 2) and never create it. Choices (ours): the readable view shows the first 50 body
rows unless `--rows N` (0: all); exports carry every row unless `--rows N`. Without `--sort`
and `--where` the rows come from the stored table itself, so a store of format 1 still
shows; sorting, filters and typed exports need its relations (`tablequest migrate`, exit 1
otherwise). An unknown column or a malformed filter exits 2 naming the columns or the form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli._exit import USAGE
from tablequest.cli._options import (
    JsonOpt,
    OutputOpt,
    StoreOpt,
    require_store,
    store_and_words,
)
from tablequest.cli._output import emit_file, fail, fail_on, print_json, wide_console

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from tablequest.corpus import Corpus, Store, browse
    from tablequest.table import Table

__all__ = ["Paging", "register", "show_command", "table_notes", "table_view", "tables_command"]

EXPORT_FORMATS = ("csv", "tsv", "json", "parquet", "xlsx")
"""`tablequest.corpus.storage.browse.EXPORT_FORMATS` (tests/test_startup.py checks they agree)."""
_FORMATS = ("table", "markdown", *EXPORT_FORMATS)
_HIDDEN_STORE = typer.Argument(hidden=True, show_default=False)


def _open(path: Path, *, json_out: bool) -> Corpus:
    """The store at `path` read-only (a store or a sharded corpus's manifest); exit 2 when
    it does not exist or is not a store."""
    from tablequest.corpus import StoreError, open_corpus

    require_store(path, json_out=json_out)
    try:
        return open_corpus(path)
    except StoreError as exc:
        fail_on(exc, json_out=json_out)


def tables_command(
    old_store: Annotated[str | None, _HIDDEN_STORE] = None,
    store: StoreOpt = None,
    filter_text: Annotated[
        str | None,
        typer.Option(
            "--filter",
            "-f",
            metavar="TEXT",
            help="Only tables whose id, name or source contains TEXT (any case).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the store's tables: id, sql name, name, rows × cols, format, source and when
    each was ingested (UTC)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    from tablequest.cli._output import console
    from tablequest.corpus import catalog

    path, _ = store_and_words(
        "tables", [old_store] if old_store else [], store, names=(), json_out=json_out
    )
    with _open(path, json_out=json_out) as st:
        entries = catalog(st, contains=filter_text)
    if json_out:
        print_json([e.to_json() for e in entries])
        return
    if not entries:
        console.print(
            f"No table matches {filter_text!r}." if filter_text else f"{path} holds no tables.",
            markup=False, highlight=False,
        )  # fmt: skip
        return
    view = RichTable(title=f"{len(entries)} tables in {path}", title_justify="left")
    columns = ("id", "sql name", "name", "rows × cols", "format", "source", "ingested (UTC)")
    for column in columns:
        view.add_column(column, no_wrap=column in ("id", "ingested (UTC)"), overflow="fold")
    for e in entries:
        size = f"{e.n_rows} × {e.n_cols}"
        sql_name = Text(e.sql_name or "—", style="" if e.sql_name else "dim")
        when = e.ingested_at.replace("T", " ")[:16] if e.ingested_at else "—"
        view.add_row(e.table_id, sql_name, Text(e.name), size, e.format or "", Text(e.source), when)
    wide_console().print(view)


def show_command(
    table_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="A table id (`tablequest tables` lists them; `search` prints them)."
        ),
    ],
    extra: Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)] = None,
    store: StoreOpt = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-F",
            help="table (readable) | markdown | csv | tsv | json | parquet | xlsx (typed "
            "exports: numbers as numbers, dates as dates; --raw for the cells' text).",
        ),
    ] = "table",
    rows: Annotated[
        int | None,
        typer.Option(
            "--rows",
            "-n",
            min=0,
            show_default=False,
            help="Body rows to show or export (0: all; default: 50 in the readable view, all "
            "in exports).",
        ),
    ] = None,
    offset: Annotated[
        int, typer.Option("--offset", min=0, help="Skip this many rows first (after --sort).")
    ] = 0,
    sort: Annotated[
        str | None,
        typer.Option(
            "--sort",
            metavar="COLUMN",
            help="Sort by this column (its sql name or header as shown; NULLs last).",
        ),
    ] = None,
    desc: Annotated[bool, typer.Option("--desc", help="Sort descending.")] = False,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            metavar='"COL OP VALUE"',
            help="Only rows where COL OP VALUE holds (repeatable, all must hold); OP is one of "
            "= != < <= > >= ~ (contains) ^ (starts with), or COL null / COL notnull.",
        ),
    ] = None,
    raw: Annotated[
        bool, typer.Option("--raw", help="Exports carry the cells' source text, not typed values.")
    ] = False,
    output: OutputOpt = None,
) -> None:
    """Print one table readably (header levels, merges, row ids), a page of it, or export it."""
    from tablequest.corpus import browse
    from tablequest.errors import BadValue, TablequestError
    from tablequest.table import serialize

    path, (wanted,) = store_and_words("show", [table_id, *(extra or [])], store, names=("ID",))
    if fmt not in _FORMATS:
        fail(f"--format takes {' | '.join(_FORMATS)}, got {fmt!r}", status=USAGE)
    if raw and fmt not in EXPORT_FORMATS:
        fail("--raw applies to --format csv | tsv | json | xlsx (the readable view and "
             "markdown always show the cells' text)")  # fmt: skip
    if output is not None and fmt == "table":
        fail("--output takes an export: add --format csv | tsv | json | parquet | xlsx | markdown")
    if desc and sort is None:
        fail("--desc needs --sort COLUMN")
    try:
        filters = [browse.parse_filter(text) for text in where or ()]
    except BadValue as exc:
        fail_on(exc)
    limit = (50 if fmt == "table" else None) if rows is None else (rows or None)
    with _open(path, json_out=False) as st:
        try:
            source = st.source(wanted)
        except KeyError:
            fail(
                f"no table {wanted!r} in {str(path)!r}; `tablequest tables --store {path}` "
                "lists ids",
                code="no_table",
            )
        shard = st.locate(wanted)
        try:
            if fmt in EXPORT_FORMATS:
                data = browse.export(shard, wanted, fmt, raw=raw, offset=offset, limit=limit,
                              sort=sort, descending=desc, where=filters)  # fmt: skip
            elif limit is not None and shard.format_version >= 2:
                # a page of the relation: a streamed table reads only these rows
                total, ids = _page(shard, wanted, None, offset, limit, sort, desc, filters)
                table = shard.get_rows(wanted, ids)
                n_all = shard.shape(wanted)[0]
            else:
                table = st.get(wanted)
                n_all = table.n_rows
                total, ids = _page(shard, wanted, table, offset, limit, sort, desc, filters)
        except KeyError as exc:  # a column --sort or --where names
            fail(str(exc.args[0]) if exc.args else str(exc), code="no_column")
        except TablequestError as exc:  # a page or format not allowed (2), the store (1)
            fail_on(exc)
    if fmt in EXPORT_FORMATS:
        emit_file(data, fmt, output)
        return
    shown = table.take_rows(ids) if table.row_ids != tuple(ids) else table
    if fmt == "markdown":
        emit_file(serialize(shown, "markdown").encode(), fmt, output)
        return
    origin = source.path if source.sheet is None else f"{source.path}#{source.sheet}"
    _line(f"{wanted} · {origin}", "bold")
    if table.title:
        _line(table.title)
    wide_console().print(table_view(shown, max_rows=0))
    for note in table.notes:  # footer lines a reader kept apart from the rows
        _line(f"note: {note}")
    paged = Paging(offset, len(ids), total, sort=sort, descending=desc, where=filters)
    _line(table_notes(table, paged, n_rows=n_all), "dim")


def _page(
    store: Store,
    table_id: str,
    table: Table | None,
    offset: int,
    limit: int | None,
    sort: str | None,
    descending: bool,
    where: list[browse.Filter],
) -> tuple[int, list[int]]:
    """(rows matching, the body row ids of the page in order). Without --sort and --where
    the ids come from the table itself (a store of format 1 reads as before); else from
    `browse.page` over the table's relation, in pages of at most `MAX_LIMIT` rows."""
    from tablequest.corpus import browse

    if sort is None and not where and table is not None:
        end = None if limit is None else offset + limit
        return table.n_rows, list(table.row_ids[offset:end])
    ids: list[int] = []
    total = 0
    while True:
        want = browse.MAX_LIMIT if limit is None else min(browse.MAX_LIMIT, limit - len(ids))
        got = browse.page(store, table_id, offset=offset + len(ids), limit=want, sort=sort,
                   descending=descending, where=where)  # fmt: skip
        total = got.total
        ids += got.row_ids
        if len(got.row_ids) < want or (limit is not None and len(ids) >= limit):
            return total, ids


def _line(text: str, style: str = "") -> None:
    """One line of plain text (no markup, no highlighting, not cut)."""
    from tablequest.cli._output import console

    console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def _covered(table: Table) -> set[tuple[int, int]]:
    """Grid cells inside a merged range other than its first (top-left) cell."""
    out: set[tuple[int, int]] = set()
    for m in table.merges:
        out |= {(r, c) for r in range(m.top, m.bottom + 1) for c in range(m.left, m.right + 1)}
        out.discard((m.top, m.left))
    return out


@dataclass(frozen=True)
class Paging:
    """Which rows of a table a readable view shows: `count` from `offset` of `total` (the
    rows matching `where`), in `sort` order."""

    offset: int
    count: int
    total: int
    sort: str | None = None
    descending: bool = False
    where: list[browse.Filter] = field(default_factory=list)


def table_notes(table: Table, paging: Paging, *, n_rows: int | None = None) -> str:
    """The line under a readable table: its size (`n_rows` when `table` is a page of it),
    header levels, merges, the rows shown."""
    notes = [f"{table.n_rows if n_rows is None else n_rows} rows × {table.n_cols} columns"]
    if table.n_header_rows > 1:
        notes.append(f"{table.n_header_rows} header levels")
    if table.merges:
        notes.append(f"{len(table.merges)} merged ranges (value shown once)")
    p = paging
    matching = f" matching {' and '.join(repr(str(f)) for f in p.where)}" if p.where else ""
    order = f", sorted by {p.sort}{' descending' if p.descending else ''}" if p.sort else ""
    if p.count == 0:
        if p.total == 0:
            notes.append(f"no rows{matching}" if matching else "no rows")
        else:
            notes.append(f"no rows past --offset {p.offset} ({p.total} rows{matching})")
    elif p.count < p.total or p.where or p.sort:
        shown = f"rows {p.offset + 1}–{p.offset + p.count} of {p.total}{matching}{order}"
        if p.offset + p.count < p.total:
            shown += f" (--offset {p.offset + p.count}: the next rows, --rows 0: all)"
        notes.append(shown)
    return " · ".join(notes)


def table_view(table: Table, *, max_rows: int = 50) -> RichTable:
    """A readable view of `table`: header rows bold above a rule, row-header columns bold,
    each merged value once, body-row ids dim on the left; `max_rows` 0 shows every row."""
    from rich.table import Table as RichTable
    from rich.text import Text

    covered = _covered(table)
    h = table.n_header_rows
    shown = table.n_rows if max_rows == 0 else min(max_rows, table.n_rows)
    view = RichTable(show_header=False)
    view.add_column("row", style="dim", justify="right")
    for _ in range(table.n_cols):
        view.add_column(overflow="fold")

    def cells(grid_row: int, bold: bool) -> list[Text]:
        out = []
        for c, value in enumerate(table.cells[grid_row]):
            text = "" if (grid_row, c) in covered else value
            out.append(Text(text, style="bold" if bold or c < table.n_header_cols else ""))
        return out

    for r in range(h):
        view.add_row(Text(""), *cells(r, True), end_section=r == h - 1)
    for pos in range(shown):
        view.add_row(str(table.row_ids[pos]), *cells(h + pos, False))
    return view


def register(app: typer.Typer) -> None:
    """Add ``tables``, ``show`` and ``rm`` to the application."""
    from tablequest.cli.remove import rm_command

    app.command("tables")(tables_command)
    app.command("show")(show_command)
    app.command("rm")(rm_command)
