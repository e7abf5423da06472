"""Table readers: one module per format, registered through `register_reader`.

Built-in readers register through the same API a plugin uses.
"""

from tablequest.table.readers._base import Reader, ReadInput
from tablequest.table.readers._registry import (
    ReadReport,
    detect_format,
    format_for_extension,
    read_tables,
    read_tables_report,
    register_reader,
    registered_formats,
    sniff_format,
)
from tablequest.table.readers.delimited import read_csv, read_tsv
from tablequest.table.readers.html import read_html
from tablequest.table.readers.jsonfmt import read_json
from tablequest.table.readers.markdown import read_markdown
from tablequest.table.readers.parquet import read_parquet
from tablequest.table.readers.sqlite import read_sqlite
from tablequest.table.readers.xlsx import read_xlsx

__all__ = [
    "ReadInput",
    "ReadReport",
    "Reader",
    "detect_format",
    "format_for_extension",
    "read_tables",
    "read_tables_report",
    "register_reader",
    "registered_formats",
    "sniff_format",
]

register_reader("csv", read_csv, (".csv",))
register_reader("tsv", read_tsv, (".tsv", ".tab"))
register_reader("markdown", read_markdown, (".md", ".markdown", ".table"))
register_reader("html", read_html, (".html", ".htm", ".xhtml"))
register_reader("json", read_json, (".json", ".jsonl", ".ndjson"))
register_reader("xlsx", read_xlsx, (".xlsx", ".xlsm"))
register_reader("parquet", read_parquet, (".parquet", ".pq"))
register_reader("sqlite", read_sqlite, (".sqlite", ".sqlite3", ".db"))
