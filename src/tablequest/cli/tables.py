"""`tablequest tables` and `tablequest show`: what a store holds, and one table.

`tables` lists id, name, rows × cols, format and source (`tablequest.corpus.storage.catalog`);
`show ID` prints one table readably (header levels as bold rows above a rule, row headers
bold, a merged range's value once in its first cell, the body-row ids in a dim first column),
or exports it with `--format csv|tsv|json|markdown` through `tablequest.table.serialize`.
HTML is not offered: a terminal never gets table markup.

Both read the store named by the store rule (`--store/-s`, see `_options`), refuse a missing
one (exit 2) and never create it. Choices (ours): the readable view shows the first 50 body
rows unless `--rows N` (0: all); exports always carry the whole table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from tablequest.cli._exit import USAGE
from tablequest.cli._options import JsonOpt, StoreOpt, require_store, store_and_words
from tablequest.cli._output import console, fail, fail_on, print_json
from tablequest.corpus.storage.catalog import catalog
from tablequest.corpus.storage.shards import ShardedStore, is_manifest
from tablequest.corpus.storage.store import Store, StoreError
from tablequest.table import Table, serialize

__all__ = ["register", "show_command", "table_notes", "table_view", "tables_command"]

ExportFormat = Literal["table", "csv", "tsv", "json", "markdown"]
_EXPORTS: tuple[ExportFormat, ...] = ("table", "csv", "tsv", "json", "markdown")
_HIDDEN_STORE = typer.Argument(hidden=True, show_default=False)


def _open(path: Path, *, json_out: bool) -> Store:
    """The store at `path` read-only (a store or a sharded corpus's manifest); exit 2 when
    it does not exist or is not a store."""
    require_store(path, json_out=json_out)
    try:
        return (
            ShardedStore(path, read_only=True) if is_manifest(path) else Store(path, read_only=True)
        )
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
    """List the store's tables: id, name, rows × cols, format and source."""
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
    for column in ("id", "name", "rows × cols", "format", "source"):
        view.add_column(column, no_wrap=column == "id", overflow="fold")
    for e in entries:
        size = f"{e.n_rows} × {e.n_cols}"
        view.add_row(e.table_id, Text(e.name), size, e.format or "", Text(e.source))
    _wide().print(view)


def _wide() -> Console:
    """The console on a terminal (its width); else one without a width limit, so piped
    output (`show ID | less`, a file) keeps every row on one line whatever COLUMNS says."""
    return console if console.is_terminal else Console(width=100_000)


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
        typer.Option("--format", "-F", help="table (readable) | csv | tsv | json | markdown."),
    ] = "table",
    rows: Annotated[
        int, typer.Option("--rows", "-n", min=0, help="Body rows in the readable view (0: all).")
    ] = 50,
) -> None:
    """Print one table readably (header levels, merges, row ids) or export it."""
    path, (wanted,) = store_and_words("show", [table_id, *(extra or [])], store, names=("ID",))
    if fmt not in _EXPORTS:
        fail(f"--format takes {' | '.join(_EXPORTS)}, got {fmt!r}", status=USAGE)
    with _open(path, json_out=False) as st:
        try:
            table = st.get(wanted)
            source = st.source(wanted)
        except KeyError:
            fail(
                f"no table {wanted!r} in {str(path)!r}; `tablequest tables --store {path}` "
                "lists ids",
                code="no_table",
            )
    if fmt != "table":
        print(serialize(table, fmt))
        return
    origin = source.path if source.sheet is None else f"{source.path}#{source.sheet}"
    _line(f"{wanted} · {origin}", "bold")
    if table.title:
        _line(table.title)
    _wide().print(table_view(table, max_rows=rows))
    for note in table.notes:  # footer lines a reader kept apart from the rows
        _line(f"note: {note}")
    _line(table_notes(table, table.n_rows if rows == 0 else min(rows, table.n_rows)), "dim")


def _line(text: str, style: str = "") -> None:
    """One line of plain text (no markup, no highlighting, not cut)."""
    console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def _covered(table: Table) -> set[tuple[int, int]]:
    """Grid cells inside a merged range other than its first (top-left) cell."""
    out: set[tuple[int, int]] = set()
    for m in table.merges:
        out |= {(r, c) for r in range(m.top, m.bottom + 1) for c in range(m.left, m.right + 1)}
        out.discard((m.top, m.left))
    return out


def table_notes(table: Table, shown: int) -> str:
    """The line under a readable table: its size, header levels, merges, rows left out."""
    notes = [f"{table.n_rows} rows × {table.n_cols} columns"]
    if table.n_header_rows > 1:
        notes.append(f"{table.n_header_rows} header levels")
    if table.merges:
        notes.append(f"{len(table.merges)} merged ranges (value shown once)")
    if shown < table.n_rows:
        notes.append(f"first {shown} rows shown (--rows 0: all)")
    return " · ".join(notes)


def table_view(table: Table, *, max_rows: int = 50) -> RichTable:
    """A readable view of `table`: header rows bold above a rule, row-header columns bold,
    each merged value once, body-row ids dim on the left; `max_rows` 0 shows every row."""
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
    """Add ``tables`` and ``show`` to the application."""
    app.command("tables")(tables_command)
    app.command("show")(show_command)
