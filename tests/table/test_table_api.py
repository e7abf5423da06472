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
        ]
    )
    for name in table_pkg.__all__:
        assert hasattr(table_pkg, name), name


def test_readers_all() -> None:
    for name in readers_pkg.__all__:
        assert hasattr(readers_pkg, name), name
    assert "read_tables" in readers_pkg.__all__
