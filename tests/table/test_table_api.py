"""The public API of tablequest.table is exactly what we intend to export."""

from __future__ import annotations

import tablequest.table as table_pkg
import tablequest.table.readers as readers_pkg


def test_table_all() -> None:
    assert sorted(table_pkg.__all__) == sorted(
        [
            "FORMATS",
            "HEADER_SEP",
            "SERIAL_FORMATS",
            "CellRef",
            "EvidenceHow",
            "Format",
            "Merge",
            "Preview",
            "ReadInput",
            "ReadReport",
            "Reader",
            "SerialFormat",
            "Source",
            "Table",
            "UnreadableTable",
            "compile_pattern",
            "detect_format",
            "preview",
            "read_tables",
            "read_tables_report",
            "register_reader",
            "render",
            "serialize",
            # the bounded displays of a table (notebook HTML, answer cards, docs/library.md)
            "clip",
            "cut",
            "grid_rows",
            "left_out",
            # what the corpus, the methods and the surfaces use (docs/architecture.md, "Packages")
            "INDEX_CELL_CHARS",
            "PATTERN_BUDGET",
            "READ_BUDGET_ENV",
            "BoundedPattern",
            "DroppedPattern",
            "Grid",
            "OverBudget",
            "PatternBudget",
            "PatternDropped",
            "ReadBudget",
            "Rendered",
            "bounded",
            "cell_text",
            "esc",
            "fold_text",
            "format_for_extension",
            "grid_html",
            "has_title_or_notes",
            "index_cell",
            "index_cells",
            "is_certain",
            "matching_lines",
            "parquet_header",
            "parse_delimited_report",
            "sniff_delimiter",
            "source_name",
            "span_map",
            "sqlite_shapes",
            "sqlite_text_tables",
            "text_columns",
            "text_format_for",
            "type_string_columns",
            "arrow_range",  # typed Arrow arrays without pa.array, which imports pandas
            "fixed_array",
            "unique_names",
            "window",
        ]
    )
    for name in table_pkg.__all__:
        assert hasattr(table_pkg, name), name


def test_readers_all() -> None:
    for name in readers_pkg.__all__:
        assert hasattr(readers_pkg, name), name
    assert "read_tables" in readers_pkg.__all__
