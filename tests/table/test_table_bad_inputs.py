"""Bad input is normal input: each case reads correctly or fails with a precise reason."""

from __future__ import annotations

import io
import random
import sqlite3
import zipfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openpyxl import Workbook

from tablequest.table import Table, UnreadableTable, read_tables, register_reader
from tablequest.table.readers import ReadInput, read_csv, xlsxparts
from tablequest.table.readers import xlsx as xlsx_reader
from tablequest.table.readers.html import parse_html

MB = 1024 * 1024


def junk(n: int = 4096, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


def xlsx_bytes(fill: Callable[[Workbook], None] | None = None) -> bytes:
    wb = Workbook()
    if fill is not None:
        fill(wb)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), buf)
    return buf.getvalue()


def sqlite_file(tmp_path: Path, statements: list[str]) -> Path:
    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()
    return path


# (file name, content, expected reason substring) — every one must fail precisely.
FAILURES: list[tuple[str, bytes, str]] = [
    ("empty.csv", b"", "empty file"),
    ("empty.xlsx", b"", "empty file"),
    ("blank.csv", b"  \n\n\t\n", "empty file"),
    ("nuls.csv", b"\x00\x00\x00\x00", "empty file"),
    ("junk.csv", junk(), "binary file"),
    ("junk.bin", junk(), "unrecognised format (.bin"),
    ("junk", junk(), "unrecognised format (no extension"),
    ("image.csv", b"\x89PNG\r\n\x1a\n" + junk(200), "binary file (a PNG image)"),
    ("doc.html", b"%PDF-1.7\n" + junk(200), "binary file (a PDF document)"),
    ("data.json", b"\x1f\x8b\x08\x00" + junk(200), "binary file (a gzip archive)"),
    ("legacy.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + junk(200), "legacy OLE2"),
    ("prose.xlsx", b"Dear team, the numbers are attached.\n", "zip header missing"),
    ("page.html", b"<html><body><p>No tables here.</p></body></html>", "no table found in HTML"),
    ("empty_table.html", b"<table></table><table><tr></tr></table>", "no table found in HTML"),
    ("notes.md", b"# Notes\n\nJust some prose, no table.\n", "no Markdown table found"),
    ("bad.json", b'{"header": ["a", "b"], "rows": [[1, 2]', "invalid JSON"),
    ("scalar.json", b"42", "no table in JSON (a JSON int"),
    ("empty_list.json", b"[]", "an empty JSON list"),
    ("object.json", b'{"name": "x", "size": 3}', "no table in a JSON object"),
    ("mixed.json", b'[{"a": 1}, [1, 2], 3]', "mixing records"),
    ("rows_type.json", b'{"header": ["a"], "rows": "nope"}', '"rows" must be a list of lists'),
    ("lines.jsonl", b'{"a": 1}\n{"a": 2\n{"a": 3}\n', "invalid JSON Lines"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("bad_bom.csv", b"\xff\xfe" + b"a\x00,\x00" + b"\x00\xd8", "invalid utf-16 text after its BOM"),
    ("corrupt.parquet", b"PAR1" + junk(300) + b"PAR1", "corrupt Parquet file"),
    ("half.parquet", parquet_bytes()[:200], "not a valid Parquet file"),
    ("corrupt.sqlite", b"SQLite format 3\x00" + junk(4000), "corrupt SQLite database"),
    ("text.sqlite", b"this is not a database\n", "not a valid SQLite database"),
    ("corrupt.xlsx", b"PK\x03\x04" + junk(500), "corrupt zip"),
]


@pytest.mark.parametrize(("name", "data", "reason"), FAILURES, ids=[f[0] for f in FAILURES])
def test_unreadable_with_reason(name: str, data: bytes, reason: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnreadableTable) as info:
        read_tables(path)
    assert reason in info.value.reason
    assert info.value.path == str(path)
    assert str(info.value) == f"{path}: {info.value.reason}"


def test_data_argument_needs_no_file() -> None:
    with pytest.raises(UnreadableTable, match="empty file"):
        read_tables("in-memory.csv", data=b"")
    assert read_tables("in-memory.csv", data=b"a,b\n1,2\n")[0].body == (("1", "2"),)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(UnreadableTable, match="no such file"):
        read_tables(tmp_path / "nope.csv")
    with pytest.raises(UnreadableTable, match="is a directory"):
        read_tables(tmp_path)


def test_header_without_rows_is_a_table() -> None:
    for name, data in [
        ("h.csv", b"a,b,c\n"),
        ("h.md", b"| a | b | c |\n|---|---|---|\n"),
        ("h.html", b"<table><tr><th>a</th><th>b</th><th>c</th></tr></table>"),
        ("h.json", b'{"header": ["a", "b", "c"], "rows": []}'),
    ]:
        (t,) = read_tables(name, data=data)
        assert t.n_rows == 0 and t.columns == ("a", "b", "c"), name


def test_ragged_rows_are_padded_not_dropped() -> None:
    (t,) = read_tables("r.csv", data=b"a,b,c\n1,2\n3,4,5,6\n7\n")
    assert t.cells == (
        ("a", "b", "c", ""),
        ("1", "2", "", ""),
        ("3", "4", "5", "6"),
        ("7", "", "", ""),
    )
    (m,) = read_tables("r.md", data=b"| a | b |\n| 1 |\n| 2 | 3 | 4 |\n")
    assert m.body == (("1", "", ""), ("2", "3", "4"))


def test_unterminated_quote_is_recovered() -> None:
    data = b'name,city\n"Anna,Oslo\nBo,Rome\nCy,Lima\nDi,Kyiv\n'
    (t,) = read_tables("q.csv", data=data)
    assert t.n_cols == 2 and t.n_rows == 4
    assert t.body[1:] == (("Bo", "Rome"), ("Cy", "Lima"), ("Di", "Kyiv"))


def test_stray_quote_inside_field() -> None:
    (t,) = read_tables("q.csv", data=b'a,b\n5" pipe,x\n"ok" tail,y\n')
    assert t.body[0] == ('5" pipe', "x")
    assert t.body[1][1] == "y"


def test_backslash_escaped_quotes_as_in_wikitablequestions() -> None:
    data = b'"Year","Notes"\n"1981","Episode: \\"Long Before\\"\nWe Met"\n"1982","a \\\\ b"\n'
    (t,) = read_tables("wtq.csv", data=data)
    assert t.body == (("1981", 'Episode: "Long Before"\nWe Met'), ("1982", "a \\ b"))


def test_standard_doubled_quotes_keep_backslashes() -> None:
    (t,) = read_tables("s.csv", data=b'a,b\n"C:\\dir\\""x""",2\n')
    assert t.body == (('C:\\dir\\"x"', "2"),)


def test_nul_bytes_in_text_are_stripped() -> None:
    (t,) = read_tables("n.csv", data=b"a,b\n1\x00,2\n3,\x004\n")
    assert t.body == (("1", "2"), ("3", "4"))


def test_truncated_html_keeps_what_is_there() -> None:
    data = b"<table><tr><th>x</th><th>y</th></tr><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4"
    (t,) = read_tables("t.html", data=data)
    assert t.body == (("1", "2"), ("3", "4"))


def test_nested_tables_are_read_separately(tmp_path: Path) -> None:
    data = (
        b"<table><tr><th>outer</th><th>b</th></tr><tr><td>cell text"
        b"<table><tr><th>inner</th></tr><tr><td>deep</td></tr></table>"
        b"</td><td>2</td></tr></table>"
    )
    # by default the nested table's rows stay out of the parent grid, its text in the cell
    (outer,) = read_tables("n.html", data=data)
    assert outer.n_rows == 1 and outer.n_cols == 2
    assert outer.body[0][0].split() == ["cell", "text", "inner", "deep"]
    assert outer.body[0][1] == "2"
    # on request, nested tables are read as tables of their own
    outer2, inner = parse_html(data.decode(), nested=True)
    assert outer2.body == (("cell text", "2"),)
    assert inner.body == (("deep",),)


def test_html_spans_out_of_range_and_invalid() -> None:
    data = (
        b"<table><tr><th>a</th><th>b</th><th>c</th></tr>"
        b'<tr><td rowspan="0">x</td><td colspan="abc">y</td><td rowspan="99">z</td></tr>'
        b"<tr><td>q</td></tr></table>"
    )
    (t,) = read_tables("s.html", data=data)
    assert t.body == (("x", "y", "z"), ("x", "q", "z"))


def test_huge_colspan_is_capped() -> None:
    (t,) = read_tables("c.html", data=b'<table><tr><td colspan="999999">x</td></tr></table>')
    assert t.n_cols == 1000


def test_hidden_sortkeys_citations_and_breaks() -> None:
    data = (
        b"<table><tr><th>t</th></tr><tr><td>"
        b'<span class="sortkey" style="">Sense, The</span>The Sense<sup class="reference">[1]</sup>'
        b'<br/>second <span style="display: none">hidden</span>line<script>x=1</script>'
        b'<span style="color: red">!</span>'
        b"</td></tr></table>"
    )
    (t,) = read_tables("h.html", data=data)
    assert t.body[0][0] == "The Sense\nsecond line!"


def test_text_file_named_xlsx_is_sniffed(tmp_path: Path) -> None:
    path = tmp_path / "report.xlsx"
    path.write_text("name,score\nAda,3\nBo,5\n")
    (t,) = read_tables(path)
    assert t.source.format == "csv" and t.body == (("Ada", "3"), ("Bo", "5"))
    md = tmp_path / "other.xlsx"
    md.write_text("| a | b |\n| 1 | 2 |\n")
    assert read_tables(md)[0].source.format == "markdown"


def test_xlsx_named_csv_and_html_named_csv(tmp_path: Path) -> None:
    def fill(wb: Workbook) -> None:
        wb.active.append(["k", "v"])
        wb.active.append(["one", 1])

    path = tmp_path / "data.csv"
    path.write_bytes(xlsx_bytes(fill))
    assert read_tables(path)[0].source.format == "xlsx"
    page = tmp_path / "page.csv"
    page.write_text("<table><tr><th>k</th></tr><tr><td>v</td></tr></table>")
    assert read_tables(page)[0].source.format == "html"


def test_csv_whose_first_cell_looks_like_json_falls_back() -> None:
    (t,) = read_tables("odd.csv", data=b"{x},y\n1,2\n")
    assert t.source.format == "csv" and t.columns == ("{x}", "y")


def test_not_a_workbook_zip() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(UnreadableTable, match=r"without xl/workbook\.xml"):
        read_tables("x.xlsx", data=buf.getvalue())


def test_broken_workbook_xml() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.xml", "<not-really")
    with pytest.raises(UnreadableTable, match=r"not a valid xlsx file \("):
        read_tables("x.xlsx", data=buf.getvalue())


def bomb(size: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xl/workbook.xml", "<workbook/>")
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            chunk = b"\x00" * MB
            for _ in range(size // MB):
                member.write(chunk)
    return buf.getvalue()


def test_zip_bomb_ratio_is_refused() -> None:
    data = bomb(20 * MB)
    assert len(data) < 100_000  # small on disk, 20 MB inside
    with pytest.raises(UnreadableTable, match=r"compression ratio [\d,]+:1 exceeds 100:1"):
        read_tables("bomb.xlsx", data=data)


def test_zip_bomb_size_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsxparts, "MAX_UNCOMPRESSED", 2 * MB)
    with pytest.raises(UnreadableTable, match=r"uncompressed size 3 MB exceeds the 2 MB limit"):
        read_tables("bomb.xlsx", data=bomb(3 * MB))


def test_workbook_with_only_empty_sheets() -> None:
    with pytest.raises(UnreadableTable, match="no non-empty sheet"):
        read_tables("e.xlsx", data=xlsx_bytes())


def test_sheet_too_large_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx_reader, "MAX_SHEET_CELLS", 10)

    def fill(wb: Workbook) -> None:
        wb.active["A1"] = "a"
        wb.active["Z99"] = 1

    with pytest.raises(UnreadableTable, match="spans more than 10 cells"):
        read_tables("big.xlsx", data=xlsx_bytes(fill))


def test_sqlite_without_tables_and_read_only(tmp_path: Path) -> None:
    empty = sqlite_file(tmp_path, ["CREATE VIEW v AS SELECT 1 AS x"])
    with pytest.raises(UnreadableTable, match="has no tables"):
        read_tables(empty)
    db = tmp_path / "t.db"
    conn = sqlite3.connect(db)
    conn.execute('CREATE TABLE "odd ""name""" (a, b)')
    conn.execute('INSERT INTO "odd ""name""" VALUES (1, NULL), (2.5, x\'68690a\')')
    conn.commit()
    conn.close()
    before = db.read_bytes()
    (t,) = read_tables(db)
    assert t.source.sheet == 'odd "name"'
    assert t.body == (("1", ""), ("2.5", "hi\n"))
    assert db.read_bytes() == before
    (again,) = read_tables("copy.sqlite", data=before)  # from bytes: deserialized in memory
    assert again.cells == t.cells


def test_five_megabyte_cell_loads() -> None:
    big = "x" * (5 * MB)
    for name, data in [
        ("big.csv", f'a,b\n"{big}",1\n'),
        ("big.tsv", f"a\tb\n{big}\t1\n"),
        (
            "big.html",
            f"<table><tr><th>a</th><th>b</th></tr><tr><td>{big}</td><td>1</td></tr></table>",
        ),
        ("big.md", f"| a | b |\n| {big} | 1 |\n"),
        ("big.json", f'[{{"a": "{big}", "b": 1}}]'),
    ]:
        (t,) = read_tables(name, data=data.encode())
        assert len(t.body[0][0]) == 5 * MB, name


def test_duplicate_and_empty_headers() -> None:
    (t,) = read_tables("d.csv", data=b"a,a,,b,a\n1,2,3,4,5\n")
    assert t.header_rows[0] == ("a", "a", "", "b", "a")
    assert t.columns == ("a", "a_2", "column_3", "b", "a_3")
    assert list(t.to_dataframe().columns) == ["a", "a_2", "column_3", "b", "a_3"]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("utf16.csv", "\ufeffcity,temp\nZürich,21\n".encode("utf-16")),
        ("utf16be.csv", b"\xfe\xff" + "city,temp\nZürich,21\n".encode("utf-16-be")),
        ("utf16nobom.csv", "city,temp\nZürich,21\n".encode("utf-16-le")),
        ("utf8bom.csv", "\ufeffcity,temp\nZürich,21\n".encode()),
        ("utf32.csv", "city,temp\nZürich,21\n".encode("utf-32")),
        ("latin1.csv", "city,temp\nZürich,21\n".encode("latin-1")),
    ],
)
def test_encodings(name: str, data: bytes) -> None:
    (t,) = read_tables(name, data=data)
    assert t.columns == ("city", "temp") and t.body == (("Zürich", "21"),)


def test_cp1252_and_latin1_fallbacks() -> None:
    (t,) = read_tables("w.csv", data="item,price\n“Deluxe” kit,5 €\n".encode("cp1252"))
    assert t.body == (("“Deluxe” kit", "5 €"),)
    # 0x81 is undefined in cp1252, so this falls through to latin-1.
    (u,) = read_tables("l.csv", data=b"a,b\nx\x81y,\xe9\n")
    assert u.body == (("x\x81y", "é"),)


@pytest.mark.parametrize(
    ("data", "width"),
    [
        (b"a;b;c\n1;2;3\n4;5;6\n", 3),
        (b"a|b|c\n1|2|3\n4|5|6\n", 3),
        (b"a\tb\n1\t2\n", 2),
        (b"a,b;c\n1,2;3\n", 2),  # comma wins: consistent, and preferred for .csv
        (b"single\nvalue\n", 1),
    ],
)
def test_weird_delimiters(data: bytes, width: int) -> None:
    (t,) = read_tables("w.csv", data=data)
    assert t.n_cols == width


def test_crlf_line_endings() -> None:
    (t,) = read_tables("c.csv", data=b"a,b\r\n1,2\r\n")
    assert t.body == (("1", "2"),)


def test_unknown_extension_is_sniffed() -> None:
    assert read_tables("t.txt", data=b"a,b\n1,2\n")[0].source.format == "csv"
    assert read_tables("t.txt", data=b"a\tb\n1\t2\n")[0].source.format == "tsv"
    assert (
        read_tables("page", data=b"<table><tr><td>1</td></tr></table>")[0].source.format == "html"
    )
    assert read_tables("t.dat", data=b'[{"a": 1}]')[0].source.format == "json"
    with pytest.raises(UnreadableTable, match="unrecognised format"):
        read_tables("readme.txt", data=b"Just a sentence.\n")


def test_explicit_format_wins() -> None:
    (t,) = read_tables("odd.txt", data=b"a;b\n1;2\n", format="csv")
    assert t.columns == ("a", "b")


def test_unexpected_reader_errors_are_wrapped() -> None:
    def broken(inp: ReadInput) -> list[Table]:
        raise ZeroDivisionError("boom")

    register_reader("csv", broken)
    try:
        with pytest.raises(UnreadableTable, match="unexpected ZeroDivisionError: boom"):
            read_tables("x.csv", data=b"a,b\n")
    finally:
        register_reader("csv", read_csv, (".csv",))
    assert read_tables("x.csv", data=b"a,b\n1,2\n")[0].n_rows == 1


def test_register_reader_rejects_unknown_formats() -> None:
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        register_reader("pdf", read_csv)  # type: ignore[arg-type]


def test_unreadable_table_pickles() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(UnreadableTable("a.csv", "empty file")))
    assert (err.path, err.reason, str(err)) == ("a.csv", "empty file", "a.csv: empty file")
