"""Table model, readers, serializers and previews."""

from tablequest.table.errors import UnreadableTable
from tablequest.table.model import (
    FORMATS,
    HEADER_SEP,
    CellRef,
    EvidenceHow,
    Format,
    Merge,
    Source,
    Table,
)
from tablequest.table.patterns import compile_pattern
from tablequest.table.preview import Preview, preview
from tablequest.table.readers import (
    Reader,
    ReadInput,
    ReadReport,
    detect_format,
    read_tables,
    read_tables_report,
    register_reader,
)
from tablequest.table.serialize import SERIAL_FORMATS, SerialFormat, render, serialize

__all__ = [
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
