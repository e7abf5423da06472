"""A workbook's parts, read as a stream within the reading budget (issue 40).

openpyxl's full load made a Python object of every `<c>` element, empty ones included (a
22 KB workbook of 4M `<c/>` cells took 36–64 s of CPU and 1.6 GB) and never saw the budget.
Here each part is decompressed `CHUNK` bytes at a time and fed to lxml's event parser (a
target: no tree is built), and what a chunk described is spent on the file's `Meter` before
the next chunk is read:

- every `<c>` element is a cell, empty or not, and so is every `<mergeCell>` (the cells a
  merge covers are spent when `xlsx.sheet_table` fills them);
- every value's text is spent as decoded bytes (UTF-8) as its cell is made, a shared string
  at each use: one 5 MB string referenced by 200 cells is 1 GB of cell text, refused at
  `max_decoded_bytes`;
- the clock, at every chunk (`max_seconds`);
- decompressed bytes are counted as they come out of the archive, per member (more than
  `RATIO_CHECK_FLOOR` bytes at more than `MAX_COMPRESSION_RATIO` times the member's own
  compressed size is refused, so a stored random member cannot dilute a bomb) and for the
  archive (`MAX_UNCOMPRESSED`). `check_zip` applies the same limits to the declared sizes
  before anything is inflated.

Values are what openpyxl's `data_only` load gave: cached formula results, shared and inline
strings (phonetic runs left out), booleans, error codes as their text, ISO dates, and numbers
whose style has a date or duration format as datetimes / timedeltas (1900 or 1904 calendar).
One difference: a formula cell without a saved value (every workbook openpyxl or pandas
writes: nothing calculated it) is its formula text, `=SUM(A2:A3)` (a shared formula's is
translated to its cell), counted in `Sheet.uncomputed` so the reader warns, never a silent
blank. We mark rather than compute: the `formulas` package would pull in scipy, schedula and
numpy-financial and load the workbook through openpyxl's full load, unbounded by the budget
that this streaming read exists to keep. A formula whose saved value is an empty string
(`t="str"`, empty `<v>`) is blank, as saved.
The XML is parsed without network access or external entities, and a part with a DOCTYPE
(which OOXML never has; entities could multiply its text) is refused.
"""

from __future__ import annotations

import datetime as dt
import io
import posixpath
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from tablequest.table.budget import Meter
from tablequest.table.errors import UnreadableTable
from tablequest.table.readers._text import binary_kind

__all__ = ["Book", "Parts", "Sheet", "check_zip", "read_book", "read_sheet"]

MAX_UNCOMPRESSED = 200 * 1024**2
MAX_COMPRESSION_RATIO = 100
RATIO_CHECK_FLOOR = 16 * 1024**2
MAX_MEMBERS = 10_000
CHUNK = 64 * 1024
_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_C, _V, _IS, _T, _RPH, _ROW = (_NS + t for t in ("c", "v", "is", "t", "rPh", "row"))
_SI, _MERGE, _F = _NS + "si", _NS + "mergeCell", _NS + "f"
_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")


def _size(n: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def _check_member(path: str, name: str, size: int, packed: int) -> None:
    """Refuse a member that inflates past the ratio limit (above the floor)."""
    if size > RATIO_CHECK_FLOOR and size > MAX_COMPRESSION_RATIO * max(1, packed):
        raise UnreadableTable(
            path,
            f"compression ratio {size // max(1, packed):,}:1 exceeds {MAX_COMPRESSION_RATIO}:1 "
            f"in member {name!r} (zip bomb?)",
        )


def _check_total(path: str, total: int) -> None:
    if total > MAX_UNCOMPRESSED:
        raise UnreadableTable(
            path, f"uncompressed size {_size(total)} exceeds the {_size(MAX_UNCOMPRESSED)} limit"
        )


def check_zip(data: bytes, path: str) -> None:
    """Reject non-zip data, corrupt archives, zip bombs (declared sizes: in all, and each
    member's ratio), and zips that are not workbooks."""
    if not data.startswith(b"PK\x03\x04"):
        kind = binary_kind(data[:16])
        detail = f"it is {kind}" if kind else "zip header missing"
        raise UnreadableTable(path, f"not a valid xlsx file ({detail})")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableTable(path, f"not a valid xlsx file (corrupt zip: {exc})") from None
    if len(infos) > MAX_MEMBERS:
        raise UnreadableTable(path, f"{len(infos):,} zip members exceed the {MAX_MEMBERS:,} limit")
    _check_total(path, sum(i.file_size for i in infos))
    for info in infos:
        _check_member(path, info.filename, info.file_size, info.compress_size)
    if not any(i.filename == "xl/workbook.xml" for i in infos):
        raise UnreadableTable(path, "not a valid xlsx file (zip archive without xl/workbook.xml)")


class Parts:
    """The members of an open workbook archive, inflated in chunks and counted."""

    def __init__(self, zf: zipfile.ZipFile, meter: Meter) -> None:
        self.zf = zf
        self.meter = meter
        self.names = frozenset(zf.namelist())
        self.inflated = 0

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member `name` in chunks; refused once it or the archive inflates too far."""
        info = self.zf.getinfo(name)
        size = 0
        with self.zf.open(info) as member:
            while chunk := member.read(CHUNK):
                size += len(chunk)
                self.inflated += len(chunk)
                _check_member(self.meter.path, name, size, info.compress_size)
                _check_total(self.meter.path, self.inflated)
                self.meter.tick()
                yield chunk

    def parse(self, name: str, target: _Target) -> None:
        """Feed the member `name` to `target`, settling its spending after every chunk."""
        if name not in self.names:
            raise ValueError(f"the part {name!r} is missing")
        parser = etree.XMLParser(
            target=target, resolve_entities=False, no_network=True, load_dtd=False
        )
        for chunk in self.chunks(name):
            parser.feed(chunk)
            target.settle(self.meter)
        parser.close()
        target.settle(self.meter)


class _Target:
    """An lxml parser target that spends what it read at every `settle`."""

    def __init__(self) -> None:
        self.cells = 0
        self.nbytes = 0

    def settle(self, meter: Meter) -> None:
        cells, nbytes = self.cells, self.nbytes
        self.cells = self.nbytes = 0
        meter.spend(cells, nbytes)

    def doctype(self, *_: object) -> None:
        raise ValueError("a DOCTYPE in a workbook part")

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        """An element opened."""

    def end(self, tag: str) -> None:
        """An element closed."""

    def data(self, text: str) -> None:
        """Text of the element open now."""

    def close(self) -> None:
        """The part is over."""


class _Text(_Target):
    """Collects the text of `<t>` elements under a `container` (phonetic runs left out)."""

    container = _SI

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] | None = None  # inside a container
        self.collecting = False
        self.phonetic = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == self.container:
            self.parts = []
        elif tag == _T and self.parts is not None and not self.phonetic:
            self.collecting = True
        elif tag == _RPH:
            self.phonetic = True

    def data(self, text: str) -> None:
        if self.collecting and self.parts is not None:
            self.parts.append(text)
            self.nbytes += len(text) if text.isascii() else len(text.encode())

    def end(self, tag: str) -> None:
        if tag == _T:
            self.collecting = False
        elif tag == _RPH:
            self.phonetic = False
        elif tag == self.container and self.parts is not None:
            self.text_done("".join(self.parts))
            self.parts = None

    def text_done(self, text: str) -> None:
        """One container's text is complete."""


class _Strings(_Text):
    """The shared strings table, and each string's size in UTF-8 bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: list[str] = []
        self.sizes: list[int] = []

    def settle(self, meter: Meter) -> None:
        # The table itself is bounded by its member's size; each use is spent by the sheet.
        self.cells = self.nbytes = 0
        meter.tick()

    def text_done(self, text: str) -> None:
        text = text.replace("x005F_", "")  # as openpyxl reads shared strings
        self.strings.append(text)
        self.sizes.append(len(text) if text.isascii() else len(text.encode()))


@dataclass
class Book:
    """What every sheet needs: sheets (name, member) in order, shared strings, date styles."""

    sheets: list[tuple[str, str]] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    dates: frozenset[int] = frozenset()
    durations: frozenset[int] = frozenset()
    epoch: dt.datetime = dt.datetime(1899, 12, 30)


class _Workbook(_Target):
    def __init__(self) -> None:
        super().__init__()
        self.sheets: list[tuple[str, str]] = []
        self.mac = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _NS + "sheet":
            self.sheets.append((attrib.get("name", ""), attrib.get(_R + "id", "")))
        elif tag == _NS + "workbookPr":
            self.mac = attrib.get("date1904", "").lower() in ("1", "true")


class _Rels(_Target):
    def __init__(self) -> None:
        super().__init__()
        self.targets: dict[str, tuple[str, str]] = {}  # id → (type's last word, target)

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _PKG + "Relationship" and attrib.get("TargetMode") != "External":
            kind = attrib.get("Type", "").rsplit("/", 1)[-1]
            self.targets[attrib.get("Id", "")] = (kind, attrib.get("Target", ""))


class _Styles(_Target):
    """Number formats per cell style (`cellXfs`), custom format codes by id."""

    def __init__(self) -> None:
        super().__init__()
        self.codes: dict[int, str] = {}
        self.formats: list[int] = []
        self.in_xfs = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _NS + "numFmt":
            self.codes[int(attrib.get("numFmtId", "0"))] = attrib.get("formatCode", "")
        elif tag == _NS + "cellXfs":
            self.in_xfs = True
        elif tag == _NS + "xf" and self.in_xfs:
            self.formats.append(int(attrib.get("numFmtId", "0")))

    def end(self, tag: str) -> None:
        if tag == _NS + "cellXfs":
            self.in_xfs = False


def _part(target: str) -> str:
    """A relationship target of xl/workbook.xml as a member name."""
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join("xl", target))


def read_book(parts: Parts) -> Book:
    """The workbook's sheets, shared strings and date styles."""
    from openpyxl.styles.numbers import BUILTIN_FORMATS, is_date_format, is_timedelta_format

    workbook, rels = _Workbook(), _Rels()
    parts.parse("xl/workbook.xml", workbook)
    if "xl/_rels/workbook.xml.rels" in parts.names:
        parts.parse("xl/_rels/workbook.xml.rels", rels)
    by_kind = {kind: _part(target) for kind, target in rels.targets.values()}
    book = Book(epoch=dt.datetime(1904, 1, 1) if workbook.mac else dt.datetime(1899, 12, 30))
    for name, rel in workbook.sheets:
        kind, target = rels.targets.get(rel, ("", ""))
        if kind == "worksheet":  # chart and dialog sheets hold no cells
            book.sheets.append((name, _part(target)))
    strings = by_kind.get("sharedStrings", "xl/sharedStrings.xml")
    if strings in parts.names:
        table = _Strings()
        parts.parse(strings, table)
        book.strings, book.sizes = table.strings, table.sizes
    styles = by_kind.get("styles", "xl/styles.xml")
    if styles in parts.names:
        found = _Styles()
        parts.parse(styles, found)
        codes = [found.codes.get(n, BUILTIN_FORMATS.get(n)) for n in found.formats]
        book.dates = frozenset(i for i, code in enumerate(codes) if is_date_format(code))
        book.durations = frozenset(i for i, c in enumerate(codes) if is_timedelta_format(c))
    return book


def cell_ref(ref: str) -> tuple[int, int]:
    """(row, column), 1-based, of a reference such as "B7"."""
    match = _REF.fullmatch(ref)
    if match is None or int(match[2]) < 1:
        raise ValueError(f"bad cell reference {ref!r}")
    col = 0
    for ch in match[1].upper():
        col = col * 26 + ord(ch) - 64
    return int(match[2]), col


class Sheet(_Text):
    """One worksheet's non-empty values {(row, col): value} and merged ranges."""

    container = _IS

    def __init__(self, book: Book) -> None:
        super().__init__()
        self.book = book
        self.values: dict[tuple[int, int], Any] = {}
        self.boxes: list[tuple[int, int, int, int]] = []
        self.row = self.col = 0
        self.kind = "n"
        self.style = 0
        self.value: list[str] | None = None  # inside <v>
        self.text = ""  # the cell's <v>
        self.inline: str | None = None
        self.ref: str | None = None  # the cell's `r`
        self.formula: list[str] | None = None  # inside <f>
        self.formula_text: str | None = None  # the cell's <f>, "" for a shared one's follower
        self.shared_id: str | None = None  # the cell's shared formula (`si`)
        self.shared: dict[str, tuple[str, str]] = {}  # si → (formula, its cell)
        self.uncomputed = 0  # formula cells without a saved value
        self.first_uncomputed = ""

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _C:
            self.cells += 1
            self.text = ""
            self.inline = self.formula_text = self.shared_id = self.ref = None
            if not attrib:  # lxml's empty mapping is slow to query: a bomb's `<c/>`
                self.col += 1
                self.kind, self.style = "n", 0
                return
            ref = self.ref = attrib.get("r")
            if ref:
                self.row, self.col = cell_ref(ref)
            else:
                self.col += 1
            self.kind = attrib.get("t", "n")
            self.style = int(attrib.get("s") or 0)
        elif tag == _V:
            self.value = []
        elif tag == _F:
            self.formula = []
            self.shared_id = attrib.get("si") if attrib.get("t") == "shared" else None
        elif tag == _ROW:
            row = attrib.get("r")
            self.row = int(row) if row else self.row + 1
            self.col = 0
        elif tag == _MERGE:
            self.cells += 1
            first, _, last = attrib.get("ref", "").partition(":")
            (t, lft), (b, rgt) = cell_ref(first), cell_ref(last or first)
            self.boxes.append((min(t, b), min(lft, rgt), max(t, b), max(lft, rgt)))
        else:
            super().start(tag, attrib)

    def data(self, text: str) -> None:
        if self.value is not None:
            self.value.append(text)
            self.nbytes += len(text) if text.isascii() else len(text.encode())
        elif self.formula is not None:  # spent only if it becomes the value (`_uncomputed`)
            self.formula.append(text)
        else:
            super().data(text)

    def end(self, tag: str) -> None:
        if tag == _C:
            if self.text or self.inline is not None:  # else empty: nothing to convert
                value = self._cell_value()
                if value is not None:
                    self.values[(self.row, self.col)] = value
            elif self.formula_text is not None and self.kind != "str":
                self._uncomputed()
        elif tag == _V and self.value is not None:
            self.text, self.value = "".join(self.value), None
        elif tag == _F and self.formula is not None:
            self.formula_text, self.formula = "".join(self.formula), None
            if self.shared_id is not None and self.formula_text:
                self.shared[self.shared_id] = (self.formula_text, self._ref())
        else:
            super().end(tag)

    def text_done(self, text: str) -> None:
        self.inline = text

    def _ref(self) -> str:
        if self.ref:
            return self.ref
        from openpyxl.utils import get_column_letter

        return f"{get_column_letter(self.col)}{self.row}"

    def _uncomputed(self) -> None:
        """The open cell has a formula and no saved value: keep the formula as its text."""
        formula = self.formula_text
        if not formula and self.shared_id in self.shared:
            from openpyxl.formula.translate import Translator

            master, origin = self.shared[self.shared_id]
            try:
                formula = Translator(f"={master}", origin=origin).translate_formula(self._ref())
                formula = formula.removeprefix("=")
            except Exception:  # openpyxl's tokenizer and translator raise plain errors
                formula = master
        if not formula:
            return
        text = f"={formula}"
        self.nbytes += len(text.encode())
        self.values[(self.row, self.col)] = text
        self.uncomputed += 1
        self.first_uncomputed = self.first_uncomputed or text

    def _cell_value(self) -> Any:
        """The open cell's value as openpyxl's `data_only` load read it (None: empty)."""
        if self.kind == "inlineStr":
            return self.inline
        text = self.text
        if not text:
            return None
        if self.kind == "s":
            index = int(text)
            if not 0 <= index < len(self.book.strings):
                raise ValueError(f"shared string {index} is not in the workbook")
            self.nbytes += self.book.sizes[index]
            return self.book.strings[index]
        if self.kind == "n":
            return self._number(text)
        if self.kind == "b":
            return text.strip() not in ("0", "false")
        if self.kind == "d":
            from openpyxl.utils.datetime import from_ISO8601

            return from_ISO8601(text)
        return text  # "str" (a formula's text), "e" (an error code), or unknown

    def _number(self, text: str) -> Any:
        try:
            number = float(text) if any(ch in text for ch in ".eE") else int(text)
        except ValueError:
            return text
        if self.style not in self.book.dates:
            return number
        from openpyxl.utils.datetime import from_excel

        try:
            duration = self.style in self.book.durations
            return from_excel(number, self.book.epoch, timedelta=duration)
        except (OverflowError, ValueError):
            return "#VALUE!"  # as openpyxl: a date outside the calendar


def read_sheet(parts: Parts, member: str, book: Book) -> Sheet:
    """Stream one worksheet, spending its cells and text as they are read."""
    sheet = Sheet(book)
    parts.parse(member, sheet)
    return sheet
