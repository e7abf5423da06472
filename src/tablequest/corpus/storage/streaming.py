"""Big plain CSV/TSV files go into the store through DuckDB's reader, never as Python cells;
big Parquet files through pyarrow, each distinct value rendered once by the Parquet reader's
own `text_columns` (same text, same budget checks); big SQLite databases through `sqlite3`
in batches into Arrow.

A file of at least `STREAM_MIN_BYTES` whose text is plain — UTF-8 without BOM or NUL, one
header row of at least two columns, every sampled row as wide, no title lines, no footer
notes, no blank lines, no backslash-escaped quotes (what the structure-aware reader in
`table/readers/delimited.py` would repair or frame) — is *streamed*: the ingest worker only
checks the head and tail of the file (`stream_spec`), and the writing process loads it with
DuckDB's `read_csv` (strict mode, every column as text; in parallel unless a quoted field
spans lines, `_quoted_line_break`) into Arrow, types that into the
table's relation (`relations.typed_arrow`, the same rule as every table) and writes the
`tables` row. The cells' text as read stays readable as the view `tq_raw."<table id>"`
(`_row`, the body row id; `c0`, `c1`, …: the cells exactly as the file holds them), each
column stored once (`_raw_text`: from the relation where DuckDB prints its values back as
the cells, else from `tq_raw."<table id>~text"`). When DuckDB refuses the file (ragged
rows, broken quoting, a line over its limit, a row with more fields than the header —
DuckDB would drop an empty one) the file is read by the structure-aware reader as any other
file, so the result never depends on which path read it (tested: a streamed table equals
the same file read the usual way, cell for cell).

An SQLite database of at least `STREAM_MIN_BYTES` (by its magic bytes, as the reader registry
picks it) is streamed too: the worker has SQLite count each user table's rows and columns
(`table.sqlite_shapes`, checked against the reading budget before any cell), and the writing
process fetches each table's rows in batches with the same read-only, budget-guarded
connection as the SQLite reader (`table.sqlite_text_tables`: the cells' text exactly as
`read_sqlite` renders it, strings and integers converted by Arrow a column at a time) into
Arrow, typed by the same rule, its text kept as above; every table of the file is stored in
one transaction (table ids by position, as the reader numbers them; sheet = the SQLite table
name). DuckDB's own SQLite scanner is an extension it would download, so it is not used. A
database the reader would refuse is read the usual way (which reports why); one past a
reading limit is skipped naming it.

A streamed table's `tables.data` holds its structure (the header row, ids, source) and
`"body": {"raw": …, "rows": N, "sample": the first rows}`; `Store.get` reads the body from
the raw relation and `Store.get_rows` only the rows asked for. Its index text is bounded
(ours): `text` (grep, previews) is the header and the first `SAMPLE_ROWS` rows; `plain`
(BM25, dense) adds one line per text column of its `TOP_VALUES` most frequent values — so a
300,000-row table costs the indexes a few kilobytes, not two whole text copies, and a value
in any row of a low-cardinality column is still found; each cell and value gives at most
`INDEX_CELL_CHARS` characters (`tablequest.table.indexcap`). `content_hash` is the file's
sha256 under a `stream:` prefix (and `:N` for the N-th table of an SQLite file, N ≥ 1).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.corpus.storage.storefile import sql_literal
from tablequest.corpus.storage.timebound import time_bound
from tablequest.table import (
    OverBudget,
    ReadBudget,
    Source,
    Table,
    has_title_or_notes,
    index_cell,
    parse_delimited_report,
    sniff_delimiter,
)

if TYPE_CHECKING:
    import duckdb

    from tablequest.corpus.storage.store import Store

__all__ = [
    "STREAM_MIN_BYTES",
    "StreamSpec",
    "announce_big",
    "put_stream",
    "stream_spec",
    "streamed_rows",
]

STREAM_MIN_BYTES = 4 * 1024 * 1024
SAMPLE_ROWS = 100
_CAST_BACK = ("BIGINT", "DOUBLE", "DATE")
TOP_VALUES = 200
_HEAD_BYTES = 64 * 1024
_TAIL_BYTES = 16 * 1024
_CHUNK_BYTES = 16 * 1024 * 1024
SQLITE_MAGIC = b"SQLite format 3\x00"
_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet"}


def streamed_rows(store: Store, table_id: str) -> int | None:
    """The body row count of a streamed table (its cells in `tq_raw`, its body row ids
    ``0..n-1``), None for any other table: a view of a streamed table reads only the rows it
    shows (`Store.get_rows`), never the table whole (`Store.get`)."""
    found = store.con.execute(
        "SELECT 1 FROM duckdb_views() WHERE schema_name = 'tq_raw' AND view_name = ? UNION ALL "
        "SELECT 1 FROM duckdb_tables() WHERE schema_name = 'tq_raw' AND table_name = ?",
        [table_id, table_id],
    ).fetchone()
    return None if found is None else store.shape(table_id)[0]


def announce_big(path: str, size: int | None = None) -> None:
    """Name the reading of `path` as a stage when it is big (at least `STREAM_MIN_BYTES`):
    its name and size, e.g. ``reading big.csv (25.3 MB)…`` (`corpus.progress_stages`: the
    CLI's ingest bar), so an ingest of one big file shows what it is doing."""
    try:
        size = os.path.getsize(path) if size is None else size
    except OSError:
        return
    if size >= STREAM_MIN_BYTES:
        _announce(f"reading {Path(path).name} ({size / 1e6:,.1f} MB)…")


def _announce(text: str) -> None:
    from tablequest.corpus.dense.encoder_base import announce_stage

    announce_stage(text)


@dataclass(frozen=True)
class StreamSpec:
    """How a streamed file is loaded (made by `stream_spec` in a worker): a plain delimited
    file by DuckDB, a Parquet file by pyarrow, an SQLite database by `sqlite3` in batches.

    `cells` is what the file describes (the ingest's `ingest_cells` total counts it before
    the load); `tables` names an SQLite database's tables (one stored table each)."""

    path: str
    file_hash: str
    format: str
    delimiter: str
    header: tuple[str, ...]
    n_lines: int
    cells: int = 0
    tables: tuple[str, ...] = ()
    parallel: bool = False


def stream_spec(
    path: str, data: bytes, digest: str, budget: ReadBudget | None = None
) -> StreamSpec | None:
    """The spec to stream `path` with, or None when it should be read the usual way."""
    if len(data) < STREAM_MIN_BYTES:
        return None
    if data.startswith(SQLITE_MAGIC):  # by content, as the reader registry picks it
        return _sqlite_spec(path, data, digest, budget)
    fmt = _FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        return None
    if fmt == "parquet":
        return _parquet_spec(path, data, digest, budget)
    if b"\x00" in data:
        return None
    if data.startswith(b"\xef\xbb\xbf") or b'\\"' in data:
        return None
    if b"\n\n" in data:
        return None
    # a file without CR (most) skips the two scans below (a copy of the file, 35 ms at 17 MB)
    if b"\r" in data and (b"\r\n\r\n" in data or b"\r" in data.replace(b"\r\n", b"")):
        return None
    try:
        head = data[:_HEAD_BYTES].decode("utf-8")
        tail = data[-_TAIL_BYTES:].decode("utf-8", errors="strict")
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    delimiter = sniff_delimiter(head, "," if fmt == "csv" else "\t")
    if f'{delimiter} "'.encode() in data:
        return None  # a quote after a space: the csv module reads it as text
    head_rows = _rows(head[: head.rfind("\n")] if len(data) > _HEAD_BYTES else head, delimiter)
    tail_rows = _rows(tail[tail.find("\n") + 1 :], delimiter)
    if head_rows is None or tail_rows is None or len(head_rows) < 2:
        return None
    width = len(head_rows[0])
    if width < 2 or any(len(r) != width for r in (*head_rows, *tail_rows)):
        return None
    if has_title_or_notes(head_rows, tail_rows, delimiter):
        return None
    n_lines = data.count(b"\n") + (not data.endswith(b"\n"))
    budget = budget or ReadBudget.from_env()
    cap, _ = budget.cell_limit(len(data))
    too_wide = budget.max_columns is not None and width > budget.max_columns
    if too_wide or (cap is not None and (n_lines - 1) * width > cap):
        return None  # the usual reader reports the limit with its setting
    cells = (n_lines - 1) * width
    parallel = not _quoted_line_break(data)
    return StreamSpec(
        path, digest, fmt, delimiter, tuple(head_rows[0]), n_lines, cells, (), parallel
    )


def _quoted_line_break(data: bytes) -> bool:
    """Whether a line break of the file lies inside quotes (a field spanning lines): an odd
    number of quotes before it (a quote inside a field is doubled). DuckDB's parallel reader
    refuses such a file with `null_padding` (and a refused statement would end the store's
    transaction), so it is read by one thread; any other is read in parallel (half the
    time of one thread at 17 MB, and less CPU)."""
    if b'"' not in data:
        return False
    import numpy as np

    parity = 0  # 1 inside quotes; 16 MiB at a time, so the masks stay small
    for start in range(0, len(data), _CHUNK_BYTES):
        count = min(_CHUNK_BYTES, len(data) - start)
        raw = np.frombuffer(data, dtype=np.uint8, count=count, offset=start)
        inside = np.bitwise_xor.accumulate((raw == ord('"')).view(np.uint8)) ^ parity
        if inside[raw == ord("\n")].any():
            return True
        parity = int(inside[-1])
    return False


def _parquet_spec(
    path: str, data: bytes, digest: str, budget: ReadBudget | None
) -> StreamSpec | None:
    """A Parquet file's spec when its footer is readable and within the budget."""
    from tablequest.table import ReadInput, parquet_header

    if not data.startswith(b"PAR1") or not data.endswith(b"PAR1"):
        return None
    try:
        names, n_rows = parquet_header(
            ReadInput(path, data, budget=budget or ReadBudget.from_env())
        )
    except Exception:  # over the budget or unreadable: the reader says which, as always
        return None
    if len(names) < 1:
        return None
    return StreamSpec(path, digest, "parquet", "", tuple(names), n_rows + 1, n_rows * len(names))


def _sqlite_spec(
    path: str, data: bytes, digest: str, budget: ReadBudget | None
) -> StreamSpec | None:
    """An SQLite database's spec when SQLite can count its tables within the budget."""
    from tablequest.table import ReadInput, sqlite_shapes

    budget = budget or ReadBudget.from_env()
    try:
        shapes = sqlite_shapes(ReadInput(path, data, file=Path(path), budget=budget))
    except Exception:  # unreadable or over the time budget: the reader says which
        return None
    cells = sum(width * rows for _, width, rows in shapes)
    cap, _ = budget.cell_limit(len(data))
    widest = max(width for _, width, _ in shapes)
    if (budget.max_columns is not None and widest > budget.max_columns) or (
        cap is not None and cells > cap
    ):
        return None  # the usual reader reports the limit with its setting
    names = tuple(name for name, _, _ in shapes)
    return StreamSpec(path, digest, "sqlite", "", (), 0, cells, names)


def _parquet_texts(spec: StreamSpec, budget: ReadBudget) -> Any:
    """The Parquet file's cells as text (as its reader renders them), within `budget`.

    Raises:
        duckdb.InvalidInputException: anything the reader would report (read it so).
    """
    import duckdb
    import pyarrow as pa

    from tablequest.table import ReadInput, text_columns

    try:
        data = Path(spec.path).read_bytes()
        names, arrays = text_columns(ReadInput(spec.path, data, budget=budget))
    except Exception as exc:  # the usual reader reports it with its words
        raise duckdb.InvalidInputException(f"not streamed: {exc}") from None
    return pa.Table.from_arrays(arrays, names=[f"c{j}" for j in range(len(names))])


def _rows(text: str, delimiter: str) -> list[list[str]] | None:
    rows, repair = parse_delimited_report(text, delimiter)
    if repair is not None:
        return None
    return [r for r in rows if r]


def put_stream(
    store: Store, spec: StreamSpec, *, replace: bool, budget: ReadBudget | None = None
) -> list[str]:
    """Load one streamed file as its tables (one transaction); their table ids.

    Raises:
        duckdb.Error: DuckDB refused the file (nothing written): read it the usual way.
        OverBudget: the load ran past the budget's `max_seconds`, or an SQLite database past
            another reading limit (nothing written).
    """
    con = store.con
    budget = budget or ReadBudget.from_env()
    ids = []
    with store.transaction(), time_bound(con, spec.path, budget.max_seconds) as in_time:
        keep = store._drop_paths([spec.path]) if replace else {}
        con.execute("CREATE SCHEMA IF NOT EXISTS tq_raw")
        for idx, (sheet, header, texts) in enumerate(_file_texts(con, spec, budget)):
            source = Source(spec.path, spec.format, sheet)
            ids.append(_put_table(con, spec, idx, source, header, texts, keep))
        in_time()  # before the commit: a load past its time is not kept
    return ids


def _file_texts(
    con: duckdb.DuckDBPyConnection, spec: StreamSpec, budget: ReadBudget
) -> Iterator[tuple[str | None, list[str], Any]]:
    """(sheet, header, the cells' text as Arrow columns c0, c1, …) of each table of the file.

    Raises:
        duckdb.InvalidInputException: what the usual reader would report (read it so).
    """
    if spec.format == "sqlite":
        yield from _sqlite_texts(spec, budget)
    elif spec.format == "parquet":
        yield None, list(spec.header), _parquet_texts(spec, budget)
    else:
        yield None, list(spec.header), _csv_texts(con, spec)


def _csv_texts(con: duckdb.DuckDBPyConnection, spec: StreamSpec) -> Any:
    """The delimited file's cells as text, read by DuckDB in strict mode."""
    import duckdb

    names = [f"c{j}" for j in range(len(spec.header))]
    extra = f"c{len(names)}"  # holds a field past the header's width: then not streamed
    columns = "{" + ", ".join(f"{sql_literal(n)}: 'VARCHAR'" for n in [*names, extra]) + "}"
    texts = ", ".join(f"coalesce({n}, '') AS {n}" for n in names)

    # Short rows are padded as the reader pads them (NULL, then ''); no text is NULL
    # (`nullstr` is a string no cell holds), so a non-NULL `extra` is a real extra field —
    # DuckDB would otherwise drop an empty one where the reader makes a column of it.
    # In parallel unless a quoted field spans lines (`StreamSpec.parallel`).
    reader = (
        f"read_csv({sql_literal(spec.path)}, delim={sql_literal(spec.delimiter)}, quote='\"', "
        f"escape='\"', header=false, skip=1, columns={columns}, auto_detect=false, "
        f"strict_mode=true, null_padding=true, parallel={str(spec.parallel).lower()}, "
        "nullstr='\x01tq-null\x01', max_line_size=33554432)"
    )
    # a scan's result keeps the file's order (DuckDB preserves insertion order, also when
    # it reads in parallel), so the body row id is the position (rowid is offset inside a
    # transaction)
    arrow = con.sql(f"SELECT {texts}, {extra} FROM {reader}").to_arrow_table()
    if arrow.column(extra).null_count != arrow.num_rows:
        raise duckdb.InvalidInputException("a row has more fields than the header")
    return arrow.drop_columns([extra])


def _sqlite_texts(
    spec: StreamSpec, budget: ReadBudget
) -> Iterator[tuple[str | None, list[str], Any]]:
    """Each table of an SQLite database, its cells' text fetched by `sqlite3` in batches
    into Arrow (`table.sqlite_text_tables`), within `budget`."""
    import duckdb

    from tablequest.table import ReadInput, UnreadableTable, sqlite_text_tables

    path = Path(spec.path)
    try:
        with path.open("rb") as fh:
            head = fh.read(100)
        yield from sqlite_text_tables(ReadInput(spec.path, head, file=path, budget=budget))
    except OverBudget:
        raise  # the usual reader would stop there too: the file is skipped naming the limit
    except (UnreadableTable, OSError) as exc:  # the usual reader reports it with its words
        raise duckdb.InvalidInputException(f"not streamed: {exc}") from None


def _put_table(
    con: duckdb.DuckDBPyConnection,
    spec: StreamSpec,
    idx: int,
    source: Source,
    header: list[str],
    texts: Any,
    keep: dict[str, str],
) -> str:
    """Store the `idx`-th table of a streamed file from its cells' text; its table id."""
    from tablequest.corpus.storage import relations as rel
    from tablequest.corpus.storage.tablerows import ROW_COLUMNS, table_id_for
    from tablequest.table import arrow_range

    table_id = table_id_for(spec.path, idx)
    n_rows = texts.num_rows
    name = Path(spec.path).name + ("" if source.sheet is None else f"#{source.sheet}")
    _announce(f"{name}: {n_rows:,} rows read; typing {len(header)} columns…")
    sample = [list(r.values()) for r in texts.slice(0, SAMPLE_ROWS).to_pylist()]
    head = Table.from_rows([header], source=source)
    row_ids = arrow_range(n_rows)  # not pa.array: it imports pandas (`dtypes_arrow`)
    typed, columns_meta = rel.typed_arrow(head, row_ids, texts.columns)
    _announce(f"{name}: {n_rows:,} rows; storing…")
    row = _row(spec, idx, table_id, head, sample, n_rows, _top_values(texts, columns_meta))
    placeholders = ", ".join(["?"] * len(row))
    con.execute(f"INSERT INTO tables ({ROW_COLUMNS}) VALUES ({placeholders})", list(row))
    rel.write_relations(con, [(*row, (typed, columns_meta))], keep)
    _raw_text(con, table_id, typed, texts, columns_meta)
    return table_id


def _raw_text(
    con: duckdb.DuckDBPyConnection, table_id: str, typed: Any, texts: Any, columns: list[Any]
) -> None:
    """`tq_raw."<table id>"`: a view of the cells' text as read. A column's text comes from
    the relation where the relation gives it back exactly (a text column; a BIGINT, DOUBLE
    or DATE column whose every value cast to text by DuckDB is its cell, checked here), so
    only the other columns are stored again, in `tq_raw."<table id>~text"`."""
    import pyarrow as pa

    from tablequest.corpus.storage import relations as rel

    ((sql_name,),) = con.execute(
        "SELECT sql_name FROM relations WHERE table_id = ?", [table_id]
    ).fetchall()
    back = _casting_back(con, typed, texts, columns)
    kept = {
        f"c{j}": texts.column(j)
        for j, column in enumerate(columns)
        if column.type != "VARCHAR" and j not in back
    }
    if kept:
        stored = pa.table({"_row": typed.column(0), **kept})
        text = f"tq_raw.{rel.quote(table_id + rel.RAW_SUFFIX)}"
        con.register("tq_raw_load", stored)
        try:
            con.execute(f"CREATE TABLE {text} AS SELECT * FROM tq_raw_load")
        finally:
            con.unregister("tq_raw_load")
    rel.create_raw_view(con, table_id, sql_name, columns, kept)


def _casting_back(
    con: duckdb.DuckDBPyConnection, typed: Any, texts: Any, columns: list[Any]
) -> set[int]:
    """The columns (by position) whose every typed value DuckDB prints back as its cell's
    text (BIGINT, DOUBLE or DATE, no NULL among them): one scan for all of them."""
    import pyarrow as pa

    picks = [
        j
        for j, column in enumerate(columns)
        if column.type in _CAST_BACK
        and len(typed.column(j + 1))
        and not typed.column(j + 1).null_count
    ]
    if not picks:
        return set()
    pairs = pa.table(
        {
            **{f"v{j}": typed.column(j + 1) for j in picks},
            **{f"t{j}": texts.column(j) for j in picks},
        }
    )
    checks = ", ".join(f"bool_and(v{j}::VARCHAR = t{j})" for j in picks)
    found = con.from_arrow(pairs).aggregate(checks).fetchall()
    return {j for j, same in zip(picks, found[0], strict=True) if same}


def _top_values(texts: Any, columns: list[Any]) -> list[str]:
    """The most frequent values of each text column (words for BM25 and dense), most
    frequent first, ties by value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = []
    for array, column in zip(texts.columns, columns, strict=True):
        if column.type != "VARCHAR":
            continue
        counts = pc.value_counts(array)
        found = pa.table({"v": counts.field("values"), "n": counts.field("counts")})
        top = found.sort_by([("n", "descending"), ("v", "ascending")]).slice(0, TOP_VALUES + 1)
        values = [v for v in top["v"].to_pylist() if v != ""][:TOP_VALUES]  # '' is no value
        lines.append(" ".join(" ".join(index_cell(str(v)).split()) for v in values))
    return [line for line in lines if line]


def _row(
    spec: StreamSpec, idx: int, table_id: str, head: Table, sample: list[list[str]],
    n_rows: int, top: list[str],
) -> tuple[Any, ...]:  # fmt: skip
    from tablequest.corpus.storage.tablerows import plain_text
    from tablequest.table import index_cells, serialize, text_format_for

    shown = Table.from_rows([list(head.cells[0]), *sample], source=head.source)
    data = head.to_dict()
    data["col_ids"] = list(range(head.n_cols))
    data["body"] = {"raw": table_id, "rows": n_rows, "sample": sample}
    key = f"stream:{spec.file_hash}" + (f":{idx}" if idx else "")
    content = hashlib.sha256(key.encode()).hexdigest()
    plain = "\n".join([plain_text(shown), *top])
    return (
        table_id, spec.path, spec.file_hash, idx, spec.format, head.source.sheet, None, content,
        n_rows, head.n_cols, json.dumps(data, ensure_ascii=False),
        serialize(index_cells(shown), text_format_for(spec.format)), plain,
    )  # fmt: skip
