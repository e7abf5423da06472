"""JSON and JSON Lines tables.

Shapes understood (a file may hold one, a list of them, or {"tables": [...]}):
- records: `[{"a": 1, "b": 2}, ...]` (header = keys in first-seen order) or a JSON Lines file;
- rows: `[["a", "b"], [1, 2]]` (first row = header);
- `{"header": [...] | [[level 1], [level 2]], "rows": [[...]], "merges": [...], "title": ...}`
  (what `serialize(table, "json")` writes; `n_header_cols`, `notes`, `row_ids`, `col_ids`
  optional);
- pandas "split" `{"columns": [...], "data": [[...]]}` and column lists `{"a": [..], "b": [..]}`;
- HiTab `{"texts", "merged_regions", "top_header_rows_num", "left_header_columns_num", "title"}`;
- AIT-QA `{"column_header": [[path]], "row_header": [[path]], "data": [[...]]}`.

Choices (ours): HiTab's `top_header_rows_num` is one more than the header rows in most tables
and exact in others (unit rows such as "percent"), so the header rows are the first row plus
following rows up to that number that a merge from above reaches or that hold text, years
("2013", "2006-16") but no other number. The header trees (`top_root`, `left_root`) are not
read: they are the answer key of benchmarks/dtr_header_paths.py. Merged regions in HiTab hold
their text in the top-left cell only; it is copied into the covered cells. AIT-QA paths
shorter than the deepest one repeat their last level downwards (a vertical merge).

Reading budget (table/budget.py): records with many different keys would make a grid of
records × keys mostly empty cells (5,000 records, each with its own key: 25M cells from
64 KB), so every grid's size is spent before it is built — records × keys (and the key
count) for records, rows × widest row before ragged rows are padded. Reading stays linear
in the input until the budget says no.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tablequest.errors import UsageError
from tablequest.table.budget import Meter, ReadBudget
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Merge, Table
from tablequest.table.readers._base import ReadInput, number_tables
from tablequest.table.readers._cells import looks_numeric, value_text
from tablequest.table.readers._text import decode_text

__all__ = ["parse_json_value", "read_json"]


class _Shape(UsageError):
    """The JSON value is valid but not a table shape we know."""


def _str_rows(rows: Any, what: str, meter: Meter) -> list[list[str]]:
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise _Shape(f"{what} must be a list of lists")
    meter.grid(rows)
    return [[value_text(v) for v in r] for r in rows]


def _title(obj: dict[str, Any]) -> str | None:
    for key in ("title", "caption", "table_title"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _notes(obj: dict[str, Any]) -> list[str]:
    notes = obj.get("notes")
    if not isinstance(notes, list):
        return []
    return [value_text(n) for n in notes if value_text(n).strip()]


def _records(records: Sequence[dict[str, Any]], meter: Meter, title: str | None = None) -> Table:
    keys: dict[str, None] = {}
    for rec in records:
        keys.update(dict.fromkeys(rec))
    header = list(keys)
    meter.columns(len(header))
    meter.spend(cells=(len(records) + 1) * len(header))
    rows = [[value_text(rec.get(k)) for k in header] for rec in records]
    return Table.from_rows([header, *rows], title=title)


def _merge(m: Any) -> Merge:
    if isinstance(m, dict):
        keys = ("top", "left", "bottom", "right")
        if not all(k in m for k in keys):
            keys = ("first_row", "first_column", "last_row", "last_column")
        return Merge(*(int(m[k]) for k in keys))
    if isinstance(m, list) and len(m) == 4:
        return Merge(*(int(v) for v in m))
    raise _Shape(f"a merge must be [top, left, bottom, right], got {m!r}")


def _header_rows(obj: dict[str, Any], meter: Meter) -> Table:
    header = obj["header"]
    if not isinstance(header, list):
        raise _Shape('"header" must be a list')
    nested = bool(header) and isinstance(header[0], list)
    levels = _str_rows(header, '"header"', meter) if nested else None
    head = levels if levels is not None else [[value_text(v) for v in header]]
    body = _str_rows(obj["rows"], '"rows"', meter)
    height, width = len(head) + len(body), max((len(r) for r in [*head, *body]), default=0)
    merges = [_merge(m) for m in obj.get("merges") or []]
    merges = [
        m for m in merges if 0 <= m.top <= m.bottom < height and 0 <= m.left <= m.right < width
    ]
    table = Table.from_rows(
        [*head, *body],
        n_header_rows=len(head),
        n_header_cols=int(obj.get("n_header_cols") or 0),
        merges=merges,
        title=_title(obj),
        notes=_notes(obj),
    )
    row_ids, col_ids = obj.get("row_ids"), obj.get("col_ids")
    if isinstance(row_ids, list) and len(row_ids) == table.n_rows:
        table = replace(table, row_ids=tuple(int(i) for i in row_ids))
    if isinstance(col_ids, list) and len(col_ids) == table.n_cols:
        table = replace(table, col_ids=tuple(int(i) for i in col_ids))
    return table


def _fill_merges(rows: list[list[str]], merges: list[Merge], meter: Meter) -> None:
    height, width = len(rows), max((len(r) for r in rows), default=0)
    meter.spend(cells=height * width - sum(map(len, rows)))  # the padding
    for row in rows:
        row.extend([""] * (width - len(row)))
    for m in merges:
        if not (0 <= m.top < height and 0 <= m.left < width):
            continue
        value = rows[m.top][m.left]
        for r in range(m.top, min(m.bottom, height - 1) + 1):
            for c in range(m.left, min(m.right, width - 1) + 1):
                if not rows[r][c]:
                    rows[r][c] = value


_YEAR = re.compile(r"^(?:18|19|20)\d{2}(?:\s*[-/]\s*(?:\d{2}|\d{4}))?[a-z*]?$")


def _data_value(text: str) -> bool:
    """A number that is not a year label (header rows of HiTab tables hold years)."""
    return looks_numeric(text) and not _YEAR.match(text.strip())


def _hitab(obj: dict[str, Any], meter: Meter) -> Table:
    rows = _str_rows(obj["texts"], '"texts"', meter)
    merges = [_merge(m) for m in obj.get("merged_regions") or []]
    _fill_merges(rows, merges, meter)
    width = len(rows[0]) if rows else 0
    n_left = max(0, min(int(obj.get("left_header_columns_num") or 0), max(0, width - 1)))
    declared = int(obj.get("top_header_rows_num") or 1)
    n_head = 1
    while n_head < min(declared, len(rows)):
        values = [v for v in rows[n_head][n_left:] if v.strip()]
        reached = any(m.top < n_head <= m.bottom for m in merges)
        if not reached and (not values or any(_data_value(v) for v in values)):
            break
        n_head += 1
    merges = [m for m in merges if m.top < len(rows) and m.left < width]
    return Table.from_rows(
        rows, n_header_rows=n_head, n_header_cols=n_left, merges=merges, title=_title(obj)
    )


def _aitqa(obj: dict[str, Any], meter: Meter) -> Table:
    col_paths = _str_rows(obj["column_header"], '"column_header"', meter)
    row_paths = _str_rows(obj.get("row_header") or [], '"row_header"', meter)
    data = _str_rows(obj["data"], '"data"', meter)
    meter.columns(len(col_paths))
    levels = max((len(p) for p in col_paths), default=1) or 1
    n_left = max((len(p) for p in row_paths), default=0)
    merges: list[Merge] = []
    head = [[""] * n_left for _ in range(levels)]
    for j, path in enumerate(col_paths):
        for i in range(levels):
            head[i].append(path[min(i, len(path) - 1)] if path else "")
        if 0 < len(path) < levels:
            merges.append(Merge(len(path) - 1, n_left + j, levels - 1, n_left + j))
    for i in range(levels):
        j = 0
        while j < len(col_paths):
            k = j
            while k + 1 < len(col_paths) and col_paths[k + 1][: i + 1] == col_paths[j][: i + 1]:
                k += 1
            if k > j and len(col_paths[j]) > i + 1:
                merges.append(Merge(i, n_left + j, i, n_left + k))
            j = k + 1
    body = []
    for r, row in enumerate(data):
        path = row_paths[r] if r < len(row_paths) else []
        body.append(path + [""] * (n_left - len(path)) + row)
    return Table.from_rows(
        [*head, *body], n_header_rows=levels, n_header_cols=n_left, merges=merges
    )


def _is_table_object(value: Any) -> bool:
    return isinstance(value, dict) and (
        ("header" in value and "rows" in value)
        or "texts" in value
        or ("column_header" in value and "data" in value)
        or ("columns" in value and "data" in value)
    )


def _object(obj: dict[str, Any], meter: Meter) -> list[Table]:
    if "header" in obj and "rows" in obj:
        return [_header_rows(obj, meter)]
    if "texts" in obj:
        return [_hitab(obj, meter)]
    if "column_header" in obj and "data" in obj:
        return [_aitqa(obj, meter)]
    if "columns" in obj and "data" in obj:
        data = obj["data"]
        if not isinstance(data, list) or not all(isinstance(r, list) for r in data):
            raise _Shape('"data" must be a list of lists')
        meter.grid([obj["columns"], *data])
        rows = [[value_text(v) for v in r] for r in [obj["columns"], *data]]
        return [Table.from_rows(rows, title=_title(obj))]
    if isinstance(obj.get("tables"), list):
        return [t for item in obj["tables"] for t in parse_json_value(item, meter)]
    lists = {k: v for k, v in obj.items() if isinstance(v, list)}
    for value in lists.values():
        if value and all(isinstance(r, dict) for r in value):
            return [_records(value, meter, _title(obj))]
    if lists and len(lists) == len(obj) and len({len(v) for v in lists.values()}) == 1:
        columns = list(lists.values())
        meter.columns(len(columns))
        meter.spend(cells=(len(columns[0]) + 1) * len(columns))
        rows = [list(lists), *([c[i] for c in columns] for i in range(len(columns[0])))]
        return [Table.from_rows([[value_text(v) for v in r] for r in rows])]
    raise _Shape(f"no table in a JSON object with keys {sorted(obj)[:8]}")


def parse_json_value(value: Any, meter: Meter | None = None) -> list[Table]:
    """Tables in a parsed JSON value; raises ValueError for shapes that hold none.

    `meter` spends the reading budget (default: a fresh one of `ReadBudget()`).
    """
    if meter is None:
        meter = ReadBudget().meter("<json>")
    if isinstance(value, dict):
        return _object(value, meter)
    if isinstance(value, list):
        if not value:
            raise _Shape("an empty JSON list")
        if all(_is_table_object(v) for v in value):
            return [t for v in value for t in _object(v, meter)]
        if all(isinstance(v, dict) for v in value):
            return [_records(value, meter)]
        if all(isinstance(v, list) for v in value):
            return [Table.from_rows(_str_rows(value, "rows", meter))]
        raise _Shape("a JSON list mixing records, rows and scalars")
    raise _Shape(f"a JSON {type(value).__name__}, not a table")


def _load(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if exc.msg != "Extra data" or len(lines) < 2:
            raise UnreadableTable(
                path, f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
    values = []
    for n, line in enumerate(lines, start=1):
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise UnreadableTable(path, f"invalid JSON Lines ({exc.msg} on line {n})") from None
    return values


def read_json(inp: ReadInput) -> list[Table]:
    """Read a JSON or JSON Lines file."""
    value = _load(decode_text(inp.data, inp.path, inp.warn).lstrip("\ufeff"), inp.path)
    try:
        tables = parse_json_value(value, inp.meter)
    except (_Shape, ValueError, TypeError, KeyError) as exc:
        raise UnreadableTable(inp.path, f"no table in JSON ({exc})") from None
    if not tables:
        raise UnreadableTable(inp.path, "no table in JSON")
    tables = number_tables(tables)
    for t in tables:  # merges are cleaned by Table itself (table/merges.py); say so
        if t.merge_repair:
            inp.warn(f"{t.source.sheet}: " * bool(t.source.sheet) + t.merge_repair.describe())
    return tables
