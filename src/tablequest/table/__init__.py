"""Table model, readers, serializers and previews.

This module is the package's public surface: code outside `tablequest.table` imports from
here, never from its modules (tests/test_layers.py). Everything it names is light: importing
it loads no model client, DuckDB, pandas or ML runtime (tests/test_startup.py).
"""

from tablequest.table.budget import ENV as READ_BUDGET_ENV
from tablequest.table.budget import OverBudget, ReadBudget
from tablequest.table.display import (
    Grid,
    clip,
    cut,
    esc,
    grid_html,
    grid_rows,
    is_certain,
    left_out,
    source_name,
    window,
)
from tablequest.table.dtypes_arrow import arrow_range, fixed_array, type_string_columns
from tablequest.table.errors import UnreadableTable
from tablequest.table.indexcap import INDEX_CELL_CHARS, index_cell, index_cells
from tablequest.table.merges import span_map
from tablequest.table.model import (
    FORMATS,
    HEADER_SEP,
    CellRef,
    EvidenceHow,
    Format,
    Merge,
    Source,
    Table,
    cell_text,
    unique_names,
)
from tablequest.table.patterns import (
    PATTERN_BUDGET,
    BoundedPattern,
    DroppedPattern,
    PatternBudget,
    PatternDropped,
    bounded,
    compile_pattern,
    fold_text,
    matching_lines,
)
from tablequest.table.preview import Preview, preview
from tablequest.table.readers import (
    Reader,
    ReadInput,
    ReadReport,
    detect_format,
    format_for_extension,
    read_tables,
    read_tables_report,
    register_reader,
    text_format_for,
)
from tablequest.table.readers._notes import has_title_or_notes
from tablequest.table.readers.delimited import parse_delimited_report, sniff_delimiter
from tablequest.table.readers.parquet import parquet_header, text_columns
from tablequest.table.readers.sqlite import sqlite_shapes, sqlite_text_tables
from tablequest.table.serialize import (
    SERIAL_FORMATS,
    Rendered,
    SerialFormat,
    render,
    serialize,
)

__all__ = [
    "FORMATS",
    "HEADER_SEP",
    "INDEX_CELL_CHARS",
    "PATTERN_BUDGET",
    "READ_BUDGET_ENV",
    "SERIAL_FORMATS",
    "BoundedPattern",
    "CellRef",
    "DroppedPattern",
    "EvidenceHow",
    "Format",
    "Grid",
    "Merge",
    "OverBudget",
    "PatternBudget",
    "PatternDropped",
    "Preview",
    "ReadBudget",
    "ReadInput",
    "ReadReport",
    "Reader",
    "Rendered",
    "SerialFormat",
    "Source",
    "Table",
    "UnreadableTable",
    "arrow_range",
    "bounded",
    "cell_text",
    "clip",
    "compile_pattern",
    "cut",
    "detect_format",
    "esc",
    "fixed_array",
    "fold_text",
    "format_for_extension",
    "grid_html",
    "grid_rows",
    "has_title_or_notes",
    "index_cell",
    "index_cells",
    "is_certain",
    "left_out",
    "matching_lines",
    "parquet_header",
    "parse_delimited_report",
    "preview",
    "read_tables",
    "read_tables_report",
    "register_reader",
    "render",
    "serialize",
    "sniff_delimiter",
    "source_name",
    "span_map",
    "sqlite_shapes",
    "sqlite_text_tables",
    "text_columns",
    "text_format_for",
    "type_string_columns",
    "unique_names",
    "window",
]
