"""`tablequest show` paging, sorting, filters and typed exports through the CLI runner: only
the page is printed ("rows A–B of TOTAL"), exports are typed from the table's relation
(numbers unquoted in csv; parquet and xlsx keep types) or the cells' text with --raw, bad
columns and filters exit 2 naming the columns or the form, and a store of format 1 still
shows while sorting asks for `tablequest migrate`."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.sqlstores import downgrade, make_store
from typer.testing import CliRunner, Result

from tablequest.cli import app
from tablequest.corpus import Store

runner = CliRunner()


def _id(path: Path, file_name: str) -> str:
    with Store(path, read_only=True) as st:
        (table_id,) = st.ids_for_path(file_name)
    return table_id


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = make_store(tmp_path_factory.mktemp("show") / "shop.duckdb")
    return path, _id(path, "prices.csv")


def show(shop: tuple[Path, str], *args: str) -> Result:
    path, table_id = shop
    return runner.invoke(app, ["show", table_id, "-s", str(path), *args], env={"COLUMNS": "200"})


def test_a_page_prints_only_its_rows(shop: tuple[Path, str]) -> None:
    result = show(shop, "--offset", "10", "--rows", "3")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "bread 10" in out and "bun 11" in out and "cake 12" in out
    assert "pie 9" not in out and "tart 13" not in out
    assert "30 rows × 4 columns · rows 11–13 of 30 (--offset 13: the next rows" in out
    first = show(shop).stdout  # the readable view: 50 rows at most, here all 30
    assert "pie 29" in first and first.splitlines()[-1] == "30 rows × 4 columns"
    past = show(shop, "--offset", "40").stdout
    assert "no rows past --offset 40 (30 rows)" in past and "bread" not in past


def test_sort_and_filters(shop: tuple[Path, str]) -> None:
    args = ["--sort", "qty", "--desc", "--where", "qty >= 5", "--where", "item ~ BU"]
    out = show(shop, *args).stdout
    assert out.index("bun 6") < out.index("bun 26")  # qty 6, then qty 5
    assert "bun 1 " not in out and "bread" not in out
    assert "rows 1–2 of 2 matching 'qty >= 5' and 'item ~ BU', sorted by qty descending" in out
    cheapest = show(shop, "-F", "markdown", "--sort", "price", "--desc", "--rows", "1").stdout
    assert cheapest.splitlines()[2].startswith("| pie 29 | 1,072.5 |")
    assert len(cheapest.splitlines()) == 3


def test_typed_csv_of_a_page_is_exactly_its_rows(shop: tuple[Path, str]) -> None:
    result = show(shop, "--offset", "27", "--rows", "3", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "item,price,qty,day",
        "cake 27,1067.5,6,2024-03-28",
        "tart 28,1070,0,2024-03-29",
        "pie 29,1072.5,1,2024-03-30",
    ]
    raw = show(shop, "-F", "csv", "--raw", "--rows", "1").stdout.splitlines()
    assert raw == ["item,price,qty,day", 'bread 0,"1,000.0",0,2024-03-01']  # as stored
    tsv = show(shop, "-F", "tsv", "--where", "qty = 0").stdout.splitlines()
    assert tsv[0] == "item\tprice\tqty\tday" and len(tsv) == 1 + 5
    records = json.loads(show(shop, "-F", "json", "--sort", "day", "--rows", "1").stdout)
    assert records == [{"item": "bread 0", "price": 1000.0, "qty": 0, "day": "2024-03-01"}]


def test_parquet_and_xlsx_keep_types(shop: tuple[Path, str], tmp_path: Path) -> None:
    out = tmp_path / "prices.parquet"
    done = show(shop, "-F", "parquet", "--output", str(out), "--where", "qty > 4")
    assert done.exit_code == 0 and "wrote" in done.stderr
    table = pq.read_table(out)
    assert table.num_rows == 8 and table.column_names == ["item", "price", "qty", "day"]
    assert [f.type for f in table.schema] == [pa.string(), pa.float64(), pa.int64(), pa.date32()]
    piped = show(shop, "-F", "parquet", "--rows", "2")
    assert pq.read_table(io.BytesIO(piped.stdout_bytes)).num_rows == 2
    book = tmp_path / "prices.xlsx"
    assert show(shop, "-F", "xlsx", "-O", str(book), "--rows", "2").exit_code == 0
    sheet = openpyxl.load_workbook(book).active
    assert sheet is not None
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("item", "price", "qty", "day") and len(rows) == 3
    assert rows[1][:3] == ("bread 0", 1000, 0) and isinstance(rows[1][3], dt.datetime)
    raw_parquet = show(shop, "-F", "parquet", "--raw", "-O", str(tmp_path / "x.parquet"))
    assert raw_parquet.exit_code == 2 and "--raw gives the cells' text" in raw_parquet.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sort", "nope"], "no column 'nope' in prices; columns: item, price, qty, day"),
        (["--where", "colour = red"], "no column 'colour' in prices; columns: item, price"),
        (["--where", "qty > many"], "'many' is not a bigint value, which column 'qty' holds"),
        (["--where", "qty"], "write COLUMN OP VALUE"),
        (["--desc"], "--desc needs --sort COLUMN"),
        (["--raw"], "--raw applies to --format csv"),
        (["--output", "x.txt"], "--output takes an export"),
        (["-F", "html"], "--format takes table | markdown | csv"),
    ],
)
def test_bad_columns_and_filters_exit_2(shop: tuple[Path, str], args: list[str], says: str) -> None:
    result = show(shop, *args)
    assert result.exit_code == 2 and says in result.stderr
    assert "Traceback" not in result.output


def test_a_store_of_format_1_shows_and_asks_for_migrate_to_sort(tmp_path: Path) -> None:
    path = make_store(tmp_path / "old.duckdb")
    downgrade(path)
    shop = (path, _id(path, "prices.csv"))
    plain = show(shop, "--rows", "2")
    assert plain.exit_code == 0 and "bun 1" in plain.stdout and "rows 1–2 of 30" in plain.stdout
    sorted_ = show(shop, "--sort", "qty")
    assert sorted_.exit_code == 1 and "tablequest migrate" in sorted_.stderr
    listing = runner.invoke(app, ["tables", "-s", str(path)], env={"COLUMNS": "250"})
    assert "sql name" in listing.stdout and "—" in listing.stdout
