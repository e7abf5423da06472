"""Table readers: one module per format, registered through `register_reader`.

Built-in readers register through the same API a plugin uses.
"""

from tablequest.table.readers._base import Reader, ReadInput
from tablequest.table.readers._registry import (
    FormatSpec,
    ReadReport,
    detect_format,
    format_for_extension,
    format_spec,
    read_tables,
    read_tables_report,
    register_reader,
    registered_formats,
    sniff_format,
    text_format_for,
)
from tablequest.table.readers.delimited import read_csv, read_tsv
from tablequest.table.readers.html import read_html
from tablequest.table.readers.jsonfmt import read_json
from tablequest.table.readers.markdown import read_markdown
from tablequest.table.readers.parquet import read_parquet
from tablequest.table.readers.sqlite import read_sqlite
from tablequest.table.readers.xlsx import read_xlsx

__all__ = [
    "FormatSpec",
    "ReadInput",
    "ReadReport",
    "Reader",
    "detect_format",
    "format_for_extension",
    "format_spec",
    "read_tables",
    "read_tables_report",
    "register_reader",
    "registered_formats",
    "sniff_format",
    "text_format_for",
]

# Each built-in declares its format as a plugin would: extensions, magic numbers, binary,
# and the serialization its tables are stored in (xlsx as HTML: keeps merged headers;
# parquet and sqlite as CSV; JSON as Markdown).
register_reader("csv", read_csv, (".csv",), text_format="csv")
register_reader("tsv", read_tsv, (".tsv", ".tab"), text_format="tsv")
register_reader("markdown", read_markdown, (".md", ".markdown", ".table"), text_format="markdown")
register_reader("html", read_html, (".html", ".htm", ".xhtml"), text_format="html")
register_reader("json", read_json, (".json", ".jsonl", ".ndjson"), text_format="markdown")
register_reader(
    "xlsx", read_xlsx, (".xlsx", ".xlsm"), magic=b"PK\x03\x04", binary=True, text_format="html"
)
register_reader(
    "parquet", read_parquet, (".parquet", ".pq"), magic=b"PAR1", binary=True, text_format="csv"
)
register_reader(
    "sqlite",
    read_sqlite,
    (".sqlite", ".sqlite3", ".db"),
    magic=b"SQLite format 3\x00",
    binary=True,
    text_format="csv",
)
