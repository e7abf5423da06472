"""The `tables` row of a stored table: its id, index texts, JSON, and many rows as Arrow.

A row is computed where the table is read (ingest workers) and inserted by the store
(`tablequest.corpus.storage.store`); its typed relation (`relations.relation_arrow`) rides
along as a 14th item that the `tables` insert leaves out. `text` is the table serialized in
its corpus format (grep, previews), `plain` its header and cell words (BM25, dense): both read
at most `INDEX_CELL_CHARS` characters of each cell (`tablequest.table.indexcap`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from tablequest.corpus.storage import relations as rel
from tablequest.table import Table, index_cell, index_cells, serialize, text_format_for

__all__ = ["N_COLUMNS", "ROW_COLUMNS", "arrow_rows", "plain_text", "table_id_for", "table_row"]
__all__ += ["text_format", "with_body"]

ROW_COLUMNS = (
    "table_id, path, file_hash, idx, format, sheet, title, content_hash, "
    "n_rows, n_cols, data, text, plain"
)


_INT_COLUMNS = {"idx", "n_rows", "n_cols"}
N_COLUMNS = 13  # a row's `tables` columns; a 14th item, when there is one, is its relation


def arrow_rows(rows: Sequence[tuple[Any, ...]]) -> Any:
    """`rows` as an Arrow table of the `tables` columns (the relation item left out), for
    one bulk insert of many files."""
    import pyarrow as pa

    names = [c.strip() for c in ROW_COLUMNS.split(",")]
    columns = (
        list(zip(*(r[:N_COLUMNS] for r in rows), strict=True)) if rows else [() for _ in names]
    )
    arrays = [
        pa.array(col, type=pa.int64() if name in _INT_COLUMNS else pa.string())
        for name, col in zip(names, columns, strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def table_id_for(path: str, idx: int) -> str:
    """Opaque, stable id of the idx-th table of a file: reveals nothing of the name."""
    return "t" + hashlib.sha256(f"{path}\0{idx}".encode()).hexdigest()[:15]


def text_format(table: Table) -> str:
    """The serialization the table is stored and shown in (its reader's `text_format`)."""
    return text_format_for(table.source.format)


def plain_text(table: Table) -> str:
    """Title, then one line per grid row (header rows first), cells as whitespace-separated
    words (for BM25 / dense). A cell's own line breaks ("No. in\nseries") become spaces, so
    each line is one whole row (the phrase index and the header vector read lines). Each
    cell gives at most `INDEX_CELL_CHARS` characters (`tablequest.table.indexcap`)."""
    parts = [" ".join(index_cell(table.title or "").split())]
    parts.extend(
        " ".join(" ".join(index_cell(cell).split()) for cell in row) for row in table.cells
    )
    return "\n".join(p for p in parts if p)


def table_row(table: Table, *, path: str, file_hash: str, idx: int) -> tuple[Any, ...]:
    """The `tables` row for one table (computed in ingest workers, inserted by the store),
    then its typed relation (`relations.relation_arrow`, typed where the table was read, so
    the writing process only creates it) as a 14th item the `tables` insert leaves out."""
    return (
        table_id_for(path, idx),
        path,
        file_hash,
        idx,
        table.source.format,
        table.source.sheet,
        table.title,
        table.content_hash,
        table.n_rows,
        table.n_cols,
        json.dumps(table.to_dict(), ensure_ascii=False),
        serialize(index_cells(table), text_format_for(table.source.format)),
        plain_text(table),
        rel.relation_arrow(table),
    )


def with_body(data: dict[str, Any], rows: Sequence[Sequence[Any]]) -> Table:
    """A streamed table's stored structure (`data`) with body `rows`, each (row id, cells…)."""
    head = Table.from_dict(data)
    return Table(
        cells=(*head.cells, *(tuple(r[1:]) for r in rows)),
        n_header_rows=head.n_header_rows,
        source=head.source,
        row_ids=tuple(int(r[0]) for r in rows),
        col_ids=head.col_ids,
    )
