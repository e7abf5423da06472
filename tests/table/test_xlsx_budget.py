"""xlsx within the reading budget (issue 40, items 2 and 3): the parts are streamed, every
`<c>` is a cell, every value's text is decoded bytes, inflated bytes are counted per member,
the clock is checked; and what the streaming reader reads is what openpyxl's load read."""

from __future__ import annotations

import datetime as dt
import io
import random
import time
import zipfile

import pytest
from openpyxl import Workbook
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.cell.text import InlineFont
from tests.testdata import workbook

from tablequest.table import UnreadableTable, read_tables
from tablequest.table.budget import Meter, OverBudget, ReadBudget
from tablequest.table.readers import ReadInput, xlsxparts
from tablequest.table.readers.xlsx import read_xlsx

SMALL = ReadBudget(free_cells=10_000, max_decoded_bytes=1_000_000)


def read(data: bytes, budget: ReadBudget = SMALL) -> list[list[list[str]]]:
    tables = read_xlsx(ReadInput("book.xlsx", data, budget=budget))
    return [[list(row) for row in t.cells] for t in tables]


def refused(data: bytes, budget: ReadBudget = SMALL) -> OverBudget:
    started = time.monotonic()
    with pytest.raises(OverBudget) as caught:
        read_xlsx(ReadInput("book.xlsx", data, budget=budget))
    assert time.monotonic() - started < 5
    return caught.value


def test_empty_cells_count_while_streaming() -> None:
    header = b'<row><c t="inlineStr"><is><t>a</t></is></c></row>'
    bomb = workbook(header + (b"<row>" + b"<c/>" * 1000 + b"</row>") * 50)  # 50,001 cells
    assert len(bomb) < 2_000
    exc = refused(bomb)
    assert exc.limit == "free_cells" and exc.setting == "TABLEQUEST_READ_FREE_CELLS"
    assert "cells from a file of" in str(exc) and "book.xlsx" in str(exc)
    # The same sheet with 5,000 empty cells reads: they count, within the budget.
    assert read(workbook(header + (b"<row>" + b"<c/>" * 1000 + b"</row>") * 5)) == [[["a"]]]


def test_merges_spend_the_cells_they_fill() -> None:
    # One value and 1,000 distinct merges over it: ~300,000 cells filled from a 6 KB file.
    rows = b'<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>'
    rows += b'<row r="101"><c r="K101"><v>1</v></c></row>'
    refs = [f"A1:{col}{row}" for col in "BCDEFGHIJK" for row in range(2, 102)]
    merges = "".join(f'<mergeCell ref="{ref}"/>' for ref in refs)
    bomb = workbook(rows, tail=f"<mergeCells>{merges}</mergeCells>".encode())
    assert refused(bomb).limit == "free_cells"
    # Copies of one merge are filled once.
    copies = b"<mergeCells>" + b'<mergeCell ref="A1:K101"/>' * 1000 + b"</mergeCells>"
    (table,) = read_tables("one.xlsx", data=workbook(rows, tail=copies), budget=SMALL)
    assert table.cells[0][0] == "x" and len(table.merges) == 1


def test_time_is_checked_while_streaming() -> None:
    data = workbook(b'<row><c t="inlineStr"><is><t>a</t></is></c></row>')
    assert refused(data, ReadBudget(max_seconds=1e-9)).limit == "max_seconds"
    assert read(data) == [[["a"]]]


def test_a_shared_string_is_spent_at_every_use() -> None:
    # One 100 KB string referenced by 200 cells: 20 MB of cell text from a 1 KB file.
    big = b"<si><t>" + b"x" * 100_000 + b"</t></si>"
    uses = b"<row>" + b'<c t="s"><v>0</v></c>' * 200 + b"</row>"
    data = workbook(b'<row><c t="s"><v>1</v></c></row>' + uses, big + b"<si><t>h</t></si>")
    assert len(data) < 2_000
    exc = refused(data)
    assert exc.limit == "max_decoded_bytes" and exc.setting == "TABLEQUEST_READ_MAX_BYTES"
    assert "decoded bytes exceeds max_decoded_bytes=1,000,000" in str(exc)
    five = b"<row>" + b'<c t="s"><v>0</v></c>' * 5 + b"</row>"
    assert [len(cell) for cell in read(workbook(five, big))[0][0]] == [100_000] * 5


def test_inline_text_counts_as_it_is_read() -> None:
    long = b'<row><c t="inlineStr"><is><t>' + b"y" * 1_200_000 + b"</t></is></c></row>"
    assert refused(workbook(long)).limit == "max_decoded_bytes"


def test_inflated_bytes_are_counted_per_member(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsxparts, "RATIO_CHECK_FLOOR", 64 * 1024)
    blank = workbook(b" " * 1_000_000)  # valid XML: an empty sheet, 1 MB from ~1 KB
    padded = io.BytesIO(blank)
    with zipfile.ZipFile(padded, "a") as zf:  # a stored random member dilutes the whole ratio
        pad = random.Random(3).randbytes(200_000)
        zf.writestr("xl/media/pad.bin", pad, compress_type=zipfile.ZIP_STORED)
    with zipfile.ZipFile(padded) as zf:
        infos = zf.infolist()
    assert sum(i.file_size for i in infos) < 100 * sum(i.compress_size for i in infos)
    with pytest.raises(UnreadableTable, match=r"ratio [\d,]+:1 exceeds 100:1 in member 'xl/wo"):
        read_tables("padded.xlsx", data=padded.getvalue())
    # The stream counts what comes out, not what the directory declares.
    with zipfile.ZipFile(io.BytesIO(blank)) as zf:
        parts = xlsxparts.Parts(zf, Meter(ReadBudget(), "padded.xlsx"))
        with pytest.raises(UnreadableTable, match=r"in member 'xl/worksheets/sheet1\.xml'"):
            for _ in parts.chunks("xl/worksheets/sheet1.xml"):
                pass
        assert 64 * 1024 < parts.inflated < 64 * 1024 + 2 * xlsxparts.CHUNK


def test_a_doctype_is_refused() -> None:
    entities = b'<!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
    data = workbook(b'<row><c t="inlineStr"><is><t>&b;</t></is></c></row>', head=entities)
    with pytest.raises(UnreadableTable, match=r"not a valid xlsx file .*DOCTYPE"):
        read(data)


def test_cell_kinds_as_written_by_other_tools() -> None:
    rows = (
        b'<row><c t="inlineStr"><is><r><t>bo</t></r><r><t>ld</t></r>'
        b'<rPh><t>PHONETIC</t></rPh></is></c><c t="b"><v>1</v></c>'
        b'<c t="e"><v>#DIV/0!</v></c><c t="str"><f>A1</f><v>text</v></c>'
        b'<c t="d"><v>2024-03-01T00:00:00</v></c><c><f>1+1</f></c></row>'
        b'<row><c><v>7</v></c><c r="C2"><v>2.50</v></c><c><v>1E3</v></c></row>'
    )
    assert read(workbook(rows)) == [  # a formula without a saved value shows its formula
        [
            ["bold", "true", "#DIV/0!", "text", "2024-03-01", "=1+1"],
            ["7", "", "2.5", "1000", "", ""],
        ]
    ]


def test_values_match_what_openpyxl_read() -> None:
    wb = Workbook()
    ws = wb.active
    ws.title = "Data"
    ws.append(["Name", "When", "Time", "Amount", "Flag", "Formula"])
    ws.append(["a", dt.datetime(2024, 3, 1), dt.time(9, 30), 12.5, True, "=D2*2"])
    ws.append(["b", dt.datetime(2024, 3, 1, 9, 30), None, 0.1 + 0.2, False, None])
    ws.append(["  c  ", dt.timedelta(hours=30), None, 2**40, None, None])
    ws["B4"].number_format = "[h]:mm:ss"
    ws.merge_cells("A5:B6")
    ws["A5"] = "merged"
    hidden = wb.create_sheet("Hidden")
    hidden.sheet_state = "hidden"
    hidden.append(["h"])
    hidden.append([1])
    wb.create_sheet("Empty")
    rich = wb.create_sheet("Rich")
    rich["A1"] = CellRichText(["plain ", TextBlock(InlineFont(b=True), "bold")])
    rich["A2"] = 5
    mac = Workbook()
    mac.epoch = dt.datetime(1904, 1, 1)
    mac.active.append(["d"])
    mac.active.append([dt.datetime(2020, 5, 6, 12)])
    books = []
    for book in (wb, mac):
        buf = io.BytesIO()
        book.save(buf)
        books.append(read_tables("b.xlsx", data=buf.getvalue()))
    data, hid, rich_t = books[0]
    assert [data.source.sheet, hid.source.sheet, rich_t.source.sheet] == ["Data", "Hidden", "Rich"]
    assert data.body[:3] == (
        ("a", "2024-03-01", "09:30:00", "12.5", "true", "=D2*2"),  # not calculated: marked
        ("b", "2024-03-01 09:30:00", "", "0.3", "false", ""),
        ("c", "1 day, 6:00:00", "", "1099511627776", "", ""),
    )
    assert data.body[3] == ("merged", "merged", "", "", "", "")  # clipped to the data's rows
    assert rich_t.cells == (("plain bold",), ("5",))
    assert books[1][0].body == (("2020-05-06 12:00:00",),)


def test_formulas_without_saved_values_show_their_formula_and_are_counted() -> None:
    rows = (
        b'<row r="1"><c r="A1"><v>1</v></c><c r="B1"><f t="shared" ref="B1:B3" si="0">A1*2'
        b'</f></c><c r="C1" t="str"><f>""</f><v></v></c><c r="D1"><f>A1+1</f><v>2</v></c></row>'
        b'<row r="2"><c r="A2"><v>2</v></c><c r="B2"><f t="shared" si="0"/><v></v></c></row>'
        b'<row r="3"><c r="A3"><v>3</v></c><c r="B3"><f t="shared" si="0"/></c></row>'
    )
    inp = ReadInput("book.xlsx", workbook(rows), budget=SMALL)
    (table,) = read_xlsx(inp)
    # a shared formula is translated to each cell; a saved "" and a saved 2 stay as saved
    assert [list(r) for r in table.cells] == [
        ["1", "=A1*2", "2"], ["2", "=A2*2", ""], ["3", "=A3*2", ""]
    ]  # fmt: skip
    assert inp.warnings == [f"sheet 'S': {table.notes[0]}"]
    assert table.notes[0].startswith("3 formula cell(s) had no saved value")
