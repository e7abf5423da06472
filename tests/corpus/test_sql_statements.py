"""Issue 37, what `sql` runs beyond a plain SELECT: PIVOT with its values listed, UNPIVOT,
EXPLAIN and EXPLAIN ANALYZE of a checked SELECT (bounded like any query), PIVOT without IN
refused with the reason, and a query past its time limit as its own error (`sql_timeout`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tablequest.corpus import Store, ingest
from tablequest.corpus.storage.sql import SqlError, SqlRefused, SqlRunner, SqlTimeout
from tablequest.errors import http_status

SLOW = "SELECT count(*) FROM range(100000000) a, range(100000000) b"


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlRunner]:
    folder = tmp_path_factory.mktemp("statements")
    (folder / "sales.csv").write_text(
        "item,region,units\nbread,north,3\nbread,south,5\ncake,north,2\n", encoding="utf-8"
    )
    path = folder / "store.duckdb"
    with Store(path) as store:
        ingest(store, [folder / "sales.csv"], index=False)
    with SqlRunner(path) as opened:
        yield opened


def test_pivot_with_its_values_and_unpivot_run(runner: SqlRunner) -> None:
    query = (
        "PIVOT sales ON region IN ('north', 'south') USING sum(units) GROUP BY item ORDER BY item"
    )
    result = runner.run(query)
    assert [c for c, _ in result.columns] == ["item", "north", "south"]
    assert [(r[0], r[1], r[2] and int(r[2])) for r in result.rows] == [
        ("bread", 3, 5),
        ("cake", 2, None),
    ]
    long = runner.run("UNPIVOT (SELECT item, units FROM sales) ON units INTO NAME k VALUE v")
    assert [r[1:] for r in long.rows] == [("units", 3), ("units", 5), ("units", 2)]


def test_pivot_without_values_is_refused_with_the_reason(runner: SqlRunner) -> None:
    for query in (
        "PIVOT sales ON region USING sum(units)",
        "SELECT * FROM (PIVOT sales ON region USING sum(units))",
    ):
        with pytest.raises(SqlRefused, match=r"PIVOT needs its values listed.*ENUM type"):
            runner.run(query)


def test_explain_and_explain_analyze_of_a_checked_select(runner: SqlRunner) -> None:
    plan = runner.run("/* why slow? */ EXPLAIN SELECT item FROM sales WHERE units > 2")
    assert plan.columns == [("explain_key", "VARCHAR"), ("explain_value", "VARCHAR")]
    # a small table's relation is a view over the store's `tq_small`: its plan scans that
    assert plan.rows[0][0] == "physical_plan" and "TQ_SMALL" in plan.rows[0][1].upper()
    analyzed = runner.run("explain analyze SELECT sum(units) FROM sales")
    assert analyzed.rows[0][0] == "analyzed_plan" and "Total Time" in analyzed.rows[0][1]
    as_json = runner.run("EXPLAIN (FORMAT json) SELECT * FROM sales")
    assert as_json.rows[0][1].lstrip().startswith("[")


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("EXPLAIN ANALYZE DELETE FROM sales", "EXPLAIN runs here only on a SELECT (DELETE"),
        ("EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1", "only on a SELECT (CREATE"),
        ("EXPLAIN SELECT * FROM tables", "no table 'tables' here"),
        ("EXPLAIN SELECT * FROM read_csv('/etc/passwd')", "read_csv() is not available"),
        ("EXPLAIN PIVOT sales ON region USING sum(units)", "PIVOT needs its values"),
    ],
)
def test_explain_refuses_what_a_query_may_not_do(runner: SqlRunner, query: str, says: str) -> None:
    before = hashlib.sha256(runner.path.read_bytes()).hexdigest()
    with pytest.raises(SqlRefused) as refused:
        runner.run(query)
    assert says in str(refused.value)
    assert hashlib.sha256(runner.path.read_bytes()).hexdigest() == before
    assert runner.run("SELECT count(*) FROM sales").rows == [(3,)]


def test_a_query_past_its_time_limit_is_a_timeout_of_its_own(runner: SqlRunner) -> None:
    for query in (SLOW, f"EXPLAIN ANALYZE {SLOW}"):  # EXPLAIN ANALYZE runs it: bounded too
        with pytest.raises(SqlTimeout, match=r"time limit of 0\.2 s") as timed_out:
            runner.run(query, timeout=0.2)
        assert timed_out.value.code == "sql_timeout" and http_status(timed_out.value) == 422
        assert isinstance(timed_out.value, SqlError)  # `except SqlError` still catches it


def test_integer_sums_stay_integers_with_every_digit(runner: SqlRunner) -> None:
    """``sum`` of an integer column is a HUGEINT, which comes through Arrow as DECIMAL(38,0):
    JSON, CSV and xlsx gave 10.0 and 1.2345678901234568e+22 (a review found it)."""
    import io

    import openpyxl

    from tablequest.corpus.storage.browse import encode

    big = "12345678901234567890123"
    result = runner.run(
        f"SELECT sum(units) AS s, {big}::HUGEINT AS h, 12.50::DECIMAL(10,2) AS d FROM sales"
    )
    assert [t for _, t in result.columns] == ["HUGEINT", "HUGEINT", "DECIMAL(10,2)"]
    assert result.to_json()["rows"] == [[10, int(big), 12.5]]
    assert encode(result.arrow, "csv").decode() == f"s,h,d\n10,{big},12.5\n"
    sheet = openpyxl.load_workbook(io.BytesIO(encode(result.arrow, "xlsx"))).active
    assert sheet is not None
    assert [c.value for c in sheet[2]] == [10, big, 12.5]  # past 2**53 a number would round
