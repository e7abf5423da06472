"""`get_table`'s answer: a window of a table's rows and columns within a size budget.

A client names the rows (a page: `offset` and `limit`, or explicit row ids) and the columns
(ids or flat names); the window keeps every header level and the merges that meet it
(`Table.sub_table` cuts them to the window). The rows are then cut again to `max_chars`:
rows are added while the serialized window stays within the budget, so one answer never
floods a client's context whatever the table's cell lengths. `next_offset` says where the
next page starts (None: nothing after it).

Choices (ours): the row cap is the server's `Limits.max_table_rows` (the cap of ``GET
/v1/tables/{id}``); the default budget is 40,000 characters (about 10k tokens), the largest
250,000; at least one row is returned when the table has one, even over the budget, so paging
always moves on. Markdown is the text the model reads (one header line of flattened paths,
as `tablequest.table.serialize` writes it, after a first column `ROW_ID_COLUMN` (``_row``,
as in the SQL relations) holding each body row's id — the server asks agents to cite cells
by row id, so every row carries its own); the structured part always holds the header rows,
paths and the window's merges (grid coordinates of the window, header rows first); JSON adds
the rows as lists, for clients that rebuild the structure. A markdown window that is not
the whole table ends with one line naming its row ids and the next page's offset (clients
often give the model only the text, and the prompt asks it to cite cells by row id); the
line counts against the budget.

Rows chosen by value (`get_table`'s sort and where: `tablequest.corpus.storage.browse.page`
runs them on the table's relation) come as a `Selection`: the page's row ids in its order,
how many rows match and where the page starts. The window renders those rows as any other
(`Table.take_rows` keeps the header, title and merges), `next_offset` pages through the matching
rows, and the markdown note names the filters and the sort with the row ids.

A streamed table (`tablequest.corpus.storage.streaming.streamed_rows`) is never read whole:
`get_table` reads only the rows `window_rows` names and passes `whole` (`Body`: the row
count and ids ``range(n)``), so the window, notes and `next_offset` are as for the whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tablequest.errors import UsageError
from tablequest.table import Rendered, Table, render

__all__ = [
    "DEFAULT_CHARS",
    "MAX_CHARS",
    "ROW_ID_COLUMN",
    "Body",
    "Selection",
    "Window",
    "WindowError",
    "table_window",
    "window_rows",
]

DEFAULT_CHARS = 40_000
MAX_CHARS = 250_000
ROW_ID_COLUMN = "_row"
"""The markdown window's first column: each body row's id (the SQL relations' name for it)."""
Format = Literal["markdown", "json"]


class WindowError(UsageError):
    """A row or column the table does not have; the message names the valid ones."""


@dataclass(frozen=True)
class Window:
    """The chosen window: `text` (what the model reads) and `data` (structured content)."""

    text: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Selection:
    """Body rows picked by value (`browse.page`): their ids in the page's order, how many
    rows match, where the page starts, and the sort and filters that chose them."""

    row_ids: tuple[int, ...]
    total: int
    offset: int
    sort: str | None = None
    descending: bool = False
    where: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total, "offset": self.offset, "sort": self.sort,
            "descending": self.descending, "where": list(self.where),
        }  # fmt: skip


@dataclass(frozen=True)
class Body:
    """A table's body rows, how many and their ids: the table's own, or for a table read a
    page at a time (a streamed one, `streamed_rows`) all of them (`range(n_rows)`) while
    the table given to `table_window` holds only the rows it shows."""

    n_rows: int
    row_ids: Sequence[int]


def window_rows(
    n_rows: int, rows: Sequence[int] | None, offset: int, limit: int, selection: Selection | None
) -> list[int]:
    """The body rows a window of a table with row ids ``0..n_rows-1`` can show: what to read
    of a streamed table (rows it does not have are left out: `table_window` names them)."""
    if selection is not None:
        return list(selection.row_ids)
    if rows is None:
        return list(range(n_rows)[offset : offset + limit])
    return [r for r in sorted(set(rows)) if 0 <= r < n_rows][:limit]


def _column_ids(table: Table, columns: Sequence[int | str] | None) -> list[int] | None:
    """Column ids for `columns` (ids, or flat names as `Table.columns` spells them)."""
    if not columns:
        return None
    by_name = {name: cid for name, cid in zip(table.columns, table.col_ids, strict=True)}
    known = set(table.col_ids)
    out: list[int] = []
    for col in columns:
        cid = col if isinstance(col, int) else by_name.get(col)
        if cid is None or cid not in known:
            names = ", ".join(repr(n) for n in list(table.columns)[:20])
            raise WindowError(
                f"no column {col!r} in this table: give column ids 0..{table.n_cols - 1} or "
                f"names ({names}{', …' if table.n_cols > 20 else ''})"
            )
        out.append(cid)
    return sorted(set(out))


def _row_ids(body: Body, rows: Sequence[int] | None, offset: int, limit: int) -> list[int]:
    if rows is None:
        return list(body.row_ids[offset : offset + limit])
    known = body.row_ids if isinstance(body.row_ids, range) else set(body.row_ids)
    missing = [r for r in rows if r not in known]
    if missing:
        raise WindowError(
            f"no body row {missing[0]!r} in this table: its row ids are "
            f"{_id_range(body.row_ids)} (header rows are always returned)"
        )
    return sorted(set(rows))[:limit]


def _id_range(ids: Sequence[int]) -> str:
    if not ids:
        return "none (the table has no body rows)"
    if isinstance(ids, range) and ids.step == 1:
        return f"{ids[0]}..{ids[-1]}"
    return f"{ids[0]}..{ids[-1]}" if list(ids) == list(range(ids[0], ids[-1] + 1)) else "listed"


def _fit(lines: Sequence[str], head: int, budget: int) -> int:
    """How many of `lines` fit in `budget` characters after `head` of them (at least one)."""
    used = head
    for i, line in enumerate(lines):
        used += len(line) + 1
        if used > budget:
            return max(1, i)
    return len(lines)


def table_window(
    table: Table,
    table_id: str,
    *,
    offset: int = 0,
    limit: int = 100,
    rows: Sequence[int] | None = None,
    columns: Sequence[int | str] | None = None,
    fmt: Format = "markdown",
    max_chars: int = DEFAULT_CHARS,
    selection: Selection | None = None,
    whole: Body | None = None,
) -> Window:
    """The window of `table` described in the module doc; with `selection`, its rows (in its
    order) instead of `offset`, `limit` and `rows`. With `whole`, `table` holds only the
    rows the window shows (`window_rows`) and `whole` says what the table's body is.

    Raises:
        WindowError: a row or column id (or name) the table does not have.
    """
    body = whole or Body(table.n_rows, table.row_ids)
    cols = _column_ids(table, columns)
    if selection is not None:
        part = table.take_rows(selection.row_ids).sub_table(cols=cols)
        rows, offset = None, selection.offset
    else:
        part = table.sub_table(rows=_row_ids(body, rows, offset, limit), cols=cols)
    title = f"### {part.title}\n\n" if part.title else ""
    if fmt == "markdown":
        rendered = _with_row_ids(render(part, "markdown"), part.row_ids)
        fixed = len(title) + sum(len(h) + 1 for h in rendered.head)
        keep = _fit(rendered.rows, fixed, max_chars) if rendered.rows else 0
        keep = _fit_note(
            body, part.row_ids, rendered.rows, keep, fixed, max_chars, rows, offset, selection
        )
    else:
        lines = [json.dumps(list(r), ensure_ascii=False) for r in part.body]
        head = json.dumps([list(r) for r in part.header_rows], ensure_ascii=False)
        keep = _fit(lines, len(head) + 200 * len(part.merges), max_chars) if lines else 0
    cut = keep < part.n_rows
    if cut:
        part = part.sub_table(rows=list(part.row_ids[:keep]))
    data: dict[str, Any] = {
        "table_id": table_id, "title": table.title, "n_rows": body.n_rows,
        "n_cols": table.n_cols, "n_header_rows": part.n_header_rows,
        "n_header_cols": part.n_header_cols,
        "header_paths": [list(part.header_path(j)) for j in range(part.n_cols)],
        "col_ids": list(part.col_ids), "row_ids": list(part.row_ids), "format": fmt,
        "cut_by_size": cut, "next_offset": _after(body, part.n_rows, rows, offset, selection),
    }  # fmt: skip
    if selection is not None:
        data.update(selection.to_json())
    data["header_rows"] = [list(r) for r in part.header_rows]
    data["merges"] = [
        {"top": m.top, "left": m.left, "bottom": m.bottom, "right": m.right} for m in part.merges
    ]
    if fmt == "json":
        data["rows"] = [list(r) for r in part.body]
        return Window(json.dumps(data, ensure_ascii=False), data)
    shown = Rendered(rendered.head, rendered.rows[:keep], ())
    note = _rows_note(body, part.row_ids, data["next_offset"], selection)
    return Window(title + shown.text + note, data)


def _with_row_ids(rendered: Rendered, row_ids: Sequence[int]) -> Rendered:
    """Markdown with a first column holding each body row's id (`ROW_ID_COLUMN`)."""
    if not rendered.head:
        return rendered
    header, rule, *rest = rendered.head
    head = (f"| {ROW_ID_COLUMN} {header}", f"| --- {rule}", *rest)
    rows = tuple(f"| {rid} {line}" for rid, line in zip(row_ids, rendered.rows, strict=True))
    return Rendered(head, rows, rendered.tail)


def _after(
    body: Body, kept: int, rows: Sequence[int] | None, offset: int, selection: Selection | None
) -> int | None:
    if rows is not None or not kept:
        return None
    after = offset + kept
    return after if after < (body.n_rows if selection is None else selection.total) else None


def _rows_note(
    body: Body, row_ids: Sequence[int], next_offset: int | None, selection: Selection | None
) -> str:
    """A line under a markdown window that is not the whole table: which body rows it shows
    (their ids, to cite cells by) and where the next page starts — the model reads the text,
    not always the structured part."""
    ids = list(row_ids)
    if len(ids) == body.n_rows and ids == list(body.row_ids):
        return ""
    if selection is not None and (selection.where or selection.sort):
        return _selection_note(body, ids, next_offset, selection)
    if not ids:
        return (
            f"\n\n_No body rows in this window: the table has {body.n_rows} "
            f"(row ids {_id_range(body.row_ids)})._"
        )
    more = f"; next page: offset {next_offset}" if next_offset is not None else ""
    return f"\n\n_{len(ids)} of {body.n_rows} body rows, row ids {_listed(ids)}{more}._"


def _selection_note(
    body: Body, ids: list[int], next_offset: int | None, selection: Selection
) -> str:
    """`_rows_note` for rows picked by value: the filters and the sort, and the row ids in
    the page's order (``_3 of 33 body rows where value > 2900 (of 1000), sorted by value
    descending, row ids 999..997 (descending); next page: offset 3._``)."""
    which = f"{selection.total} body rows"
    if selection.where:
        which += f" where {' and '.join(selection.where)} (of {body.n_rows})"
    if selection.sort:
        which += f", sorted by {selection.sort}{' descending' if selection.descending else ''}"
    if not ids:
        if not selection.total and selection.where:
            return f"\n\n_No body rows where {' and '.join(selection.where)} (of {body.n_rows})._"
        return f"\n\n_No body rows in this window: offset {selection.offset} is past the {which}._"
    more = f"; next page: offset {next_offset}" if next_offset is not None else ""
    return f"\n\n_{len(ids)} of {which}, row ids {_listed(ids)}{more}._"


def _listed(ids: Sequence[int]) -> str:
    """Row ids in their order: ``3..9`` or ``9..3 (descending)`` for a run, else each one."""
    if len(ids) == 1:
        return str(ids[0])
    if len(ids) > 2 and list(ids) == list(range(ids[0], ids[-1] - 1, -1)):
        return f"{ids[0]}..{ids[-1]} (descending)"
    return _id_range(ids) if _id_range(ids) != "listed" else ", ".join(map(str, ids))


def _fit_note(
    body: Body, row_ids: Sequence[int], lines: Sequence[str], keep: int, fixed: int,
    budget: int, rows: Sequence[int] | None, offset: int, selection: Selection | None,
) -> int:  # fmt: skip
    """`keep`, less the rows that `_rows_note` needs room for (at least one row stays)."""
    used = fixed + sum(len(line) + 1 for line in lines[:keep])
    while keep > 1:
        after = _after(body, keep, rows, offset, selection)
        note = _rows_note(body, row_ids[:keep], after, selection)
        if used + len(note) <= budget:
            break
        keep -= 1
        used -= len(lines[keep]) + 1
    return keep
