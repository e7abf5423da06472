"""The reader registry, format detection and `read_tables`.

Format detection: the extension first; the content decides when the extension is unknown or
lies (a text file named .xlsx, an xlsx named .csv, HTML saved as .csv). Sniffing only answers
when it is confident: a binary magic number, JSON that starts like JSON, an HTML document,
Markdown pipe lines, or delimited text with two or more lines and at least two consistent
columns. When the content overrides the extension and the content's reader fails, the
extension's reader is tried before giving up.

Repairs are not silent: `read_tables_report` returns, with the tables, one warning per repair
the reader made (NUL bytes removed, broken quoting read as text, nested tables kept as cell
text) and one per table left with no data rows (a header-only file; a layout table whose only
row held a nested table). `read_tables` is the same without the warnings.

Formats are open: a reader declares its format itself (`register_reader`: name, extensions,
magic numbers, binary or text, and the serialization its tables are stored and shown in), so
the format list, the magic numbers and the store's text formats all derive from this
registry. Installed distributions add readers under the entry-point group
``tablequest.readers`` (`tablequest.plugins`), loaded on the first lookup.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from tablequest.plugins import READERS_GROUP, Plugins
from tablequest.settings import SettingsError
from tablequest.table.budget import OverBudget, ReadBudget
from tablequest.table.errors import UnreadableTable
from tablequest.table.model import Format, Merge, Source, Table
from tablequest.table.readers._base import Reader, ReadInput
from tablequest.table.readers._text import binary_kind, count_control_bytes
from tablequest.table.readers.delimited import _consistency, sniff_delimiter
from tablequest.table.serialize import SERIAL_FORMATS, SerialFormat

__all__ = [
    "FormatSpec",
    "ReadReport",
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

MAX_FILE_BYTES = 1024**3
SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class FormatSpec:
    """A registered format: what its reader declares about it.

    Attributes:
        name: The format name (``Source.format``; lower-case letters, digits, ``-``, ``_``).
        reader: Its `Reader`.
        magic: Prefixes of the file content that identify the format for sure.
        binary: True when the content is not text (an extension that names a binary format
            never loses to text sniffing, and text never reads as this format).
        text_format: The serialization its tables are stored as in a corpus (what grep
            searches and previews show): one of `SERIAL_FORMATS`.
    """

    name: Format
    reader: Reader
    magic: tuple[bytes, ...] = ()
    binary: bool = False
    text_format: SerialFormat = "markdown"


_SPECS: dict[Format, FormatSpec] = {}
_EXTENSIONS: dict[str, Format] = {}
_PLUGINS = Plugins(READERS_GROUP)


def _valid_name(fmt: str) -> bool:
    return bool(fmt) and fmt == fmt.lower() and all(c.isalnum() or c in "-_" for c in fmt)


def register_reader(
    fmt: Format,
    func: Reader,
    extensions: Iterable[str] = (),
    *,
    magic: bytes | Iterable[bytes] = (),
    binary: bool | None = None,
    text_format: SerialFormat | None = None,
) -> None:
    """Register (or replace) the reader of `fmt` and the file extensions that select it.

    Replacing the reader of a registered format keeps what the format declared (magic,
    binary, text format) unless given again. A new format must declare its `text_format`.

    Raises:
        ValueError: a bad name, an unknown `text_format`, or a new format without one.
    """
    if not _valid_name(fmt):
        raise ValueError(f"bad format name {fmt!r}: use lower-case letters, digits, '-', '_'")
    old = _SPECS.get(fmt)
    if old is None and text_format is None:
        raise ValueError(
            f"unknown format {fmt!r}; a new format declares how its tables are stored: "
            f"register_reader({fmt!r}, reader, extensions, text_format=one of "
            f"{', '.join(SERIAL_FORMATS)})"
        )
    if text_format is not None and text_format not in SERIAL_FORMATS:
        raise ValueError(
            f"format {fmt!r}: unknown text_format {text_format!r}; one of "
            f"{', '.join(SERIAL_FORMATS)}"
        )
    magics = (magic,) if isinstance(magic, bytes) else tuple(magic)
    _SPECS[fmt] = FormatSpec(
        fmt,
        func,
        magics or (old.magic if old else ()),
        binary if binary is not None else (old.binary if old else False),
        text_format or (old.text_format if old else "markdown"),
    )
    for ext in extensions:
        ext = ext.lower()
        _EXTENSIONS[ext if ext.startswith(".") else "." + ext] = fmt


def _specs() -> dict[Format, FormatSpec]:
    _PLUGINS.load()
    return _SPECS


def registered_formats() -> dict[Format, tuple[str, ...]]:
    """Each registered format with its extensions (built-ins first, then plugins)."""
    specs = _specs()
    return {f: tuple(e for e, g in _EXTENSIONS.items() if g == f) for f in specs}


def format_spec(fmt: Format) -> FormatSpec | None:
    """What the reader of `fmt` declared, or None for a format no reader registered."""
    return _specs().get(fmt)


def text_format_for(fmt: Format | None) -> SerialFormat:
    """The serialization tables of `fmt` are stored and shown in (Markdown when unknown)."""
    spec = _specs().get(fmt) if fmt else None
    return spec.text_format if spec is not None else "markdown"


def format_for_extension(path: str | Path) -> Format | None:
    """The format registered for the file's extension, or None."""
    _specs()
    return _EXTENSIONS.get(Path(path).suffix.lower())


def _magic_of(fmt: Format, head: bytes) -> bool:
    spec = _SPECS.get(fmt)
    return spec is not None and any(head.startswith(m) for m in spec.magic)


def _binary(fmt: Format | None) -> bool:
    spec = _SPECS.get(fmt) if fmt else None
    return spec is not None and spec.binary


def _head_text(head: bytes) -> str | None:
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if head.startswith(bom):
            return head[len(bom) :].decode(codec, errors="ignore")
    if b"\x00" in head[:1024]:
        return None
    if count_control_bytes(head[:4096]) > 0.02 * max(1, min(len(head), 4096)):
        return None
    return head.decode("utf-8", errors="ignore")


def sniff_format(head: bytes) -> Format | None:
    """The format the content looks like, or None when it is not confidently a table format."""
    for fmt in _specs():
        if _magic_of(fmt, head):
            return fmt
    if binary_kind(head) is not None:
        return None
    text = _head_text(head)
    if text is None:
        return None
    s = text.lstrip()
    if s.startswith("{") or (
        s.startswith("[") and s[1:].lstrip()[:1] in tuple('{["-0123456789tfn]')
    ):
        return "json"
    low = s[:8192].lower()
    if s.startswith("<") and any(
        t in low for t in ("<table", "<html", "<!doctype", "<tr", "<body")
    ):
        return "html"
    lines = [ln.strip() for ln in s.splitlines()[:40] if ln.strip()]
    if lines and sum(ln.startswith("|") for ln in lines) * 2 >= len(lines):
        return "markdown"
    if len(lines) < 2:
        return None
    delimiter = sniff_delimiter(s, ",")
    share, width = _consistency(s, delimiter)
    if width >= 2 and share >= 0.8:
        return "tsv" if delimiter == "\t" else "csv"
    return None


def detect_format(path: str | Path, head: bytes) -> Format | None:
    """The format to read `path` with, from its extension and its first bytes."""
    by_ext = format_for_extension(path)
    if by_ext is not None and _magic_of(by_ext, head):
        return by_ext
    sniffed = sniff_format(head)
    if by_ext is None or sniffed is None or sniffed == by_ext:
        return sniffed or by_ext
    if _binary(by_ext) or _binary(sniffed) or _magic_of(sniffed, head):  # sure of the content
        return sniffed
    if {by_ext, sniffed} == {"csv", "tsv"}:
        return by_ext
    if sniffed in ("csv", "tsv") and by_ext in ("markdown", "json", "html"):
        return sniffed
    return sniffed if sniffed in ("html", "json", "markdown") else by_ext


def _load(path: str | Path, name: str) -> tuple[bytes, Path]:
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise UnreadableTable(name, "is a directory")
        if size > MAX_FILE_BYTES:
            raise UnreadableTable(
                name, f"file size {size:,} bytes exceeds the {MAX_FILE_BYTES:,} limit"
            )
        return p.read_bytes(), p
    except FileNotFoundError:
        raise UnreadableTable(name, "no such file") from None
    except PermissionError:
        raise UnreadableTable(name, "permission denied") from None
    except OSError as exc:
        raise UnreadableTable(name, f"cannot read file ({exc.strerror or exc})") from None


def _reader(fmt: Format, name: str) -> Reader:
    spec = _specs().get(fmt)
    if spec is None:
        raise UnreadableTable(name, f"no reader registered for format {fmt!r}")
    return spec.reader


@dataclass(frozen=True)
class ReadReport:
    """The tables of one file and the repairs made reading it (one sentence each)."""

    tables: list[Table]
    warnings: list[str]


def read_tables(
    path: str | Path,
    *,
    format: Format | None = None,
    data: bytes | None = None,
    budget: ReadBudget | None = None,
) -> list[Table]:
    """Read every table in a file (or in `data`, named `path`).

    The format comes from `format`, else the extension, else the content. Every failure is
    an `UnreadableTable` naming the path and the reason; no other exception escapes. Merges
    are returned sorted (top, left, bottom, right) so equal content hashes to equal values.
    `read_tables_report` also says what was repaired.

    `budget` bounds the cells, decoded bytes, seconds and columns the file may cost
    (table/budget.py; default: `ReadBudget.from_env()`); over it, `OverBudget` (an
    `UnreadableTable`) names the limit and its setting.
    """
    return read_tables_report(path, format=format, data=data, budget=budget).tables


def read_tables_report(
    path: str | Path,
    *,
    format: Format | None = None,
    data: bytes | None = None,
    budget: ReadBudget | None = None,
) -> ReadReport:
    """`read_tables`, with the warnings of every repair (module docstring)."""
    name = str(path)
    try:
        if budget is None:
            try:
                budget = ReadBudget.from_env()
            except SettingsError as exc:
                raise UnreadableTable(name, f"bad reading budget: {exc}") from None
        file = None
        if data is None:
            data, file = _load(path, name)
        if not data:
            raise UnreadableTable(name, "empty file")
        fmt = format or detect_format(name, data[:SNIFF_BYTES])
        if fmt is None:
            ext = Path(name).suffix or "no extension"
            raise UnreadableTable(
                name, f"unrecognised format ({ext}; the content is not a table format we read)"
            )
        inp = ReadInput(path=name, data=data, file=file, budget=budget)
        by_ext = None if format else format_for_extension(name)
        try:
            tables = _reader(fmt, name)(inp)
        except OverBudget:
            raise  # the budget, not the format, stopped it: a second reader would too
        except UnreadableTable as first:
            # The content looked like another format than the extension says: the
            # extension's reader gets a second chance (a CSV whose first cell starts "{").
            if by_ext is None or by_ext == fmt:
                raise
            inp = ReadInput(path=name, data=data, file=file, budget=budget)
            try:
                tables = _reader(by_ext, name)(inp)
            except UnreadableTable:
                raise first from None
            fmt = by_ext
    except UnreadableTable:
        raise
    except RecursionError:
        raise UnreadableTable(name, "structure nested too deeply (RecursionError)") from None
    except Exception as exc:
        raise UnreadableTable(name, f"unexpected {type(exc).__name__}: {exc}") from exc
    if not tables:
        raise UnreadableTable(name, f"no table found ({fmt})")
    out = [
        replace(
            t,
            merges=tuple(sorted(t.merges, key=_merge_key)),
            source=Source(path=name, format=t.source.format or fmt, sheet=t.source.sheet),
        )
        for t in tables
    ]
    return ReadReport(out, list(inp.warnings) + _empty_table_warnings(out))


def _empty_table_warnings(tables: list[Table]) -> list[str]:
    warnings = []
    for t in tables:
        if t.n_rows == 0:
            which = f"{t.source.sheet}: " if t.source.sheet else ""
            warnings.append(f"{which}no data rows (only {t.n_header_rows} header row(s))")
    return warnings


def _merge_key(m: Merge) -> tuple[int, int, int, int]:
    return (m.top, m.left, m.bottom, m.right)
