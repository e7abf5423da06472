"""Cell lineage (issue 36 Must 1): which cells a value was computed from, and the host's
re-run of it (`methods.evidence`). The child's modules run here in-process (fast); one test
goes through a real sandbox session."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from tablequest.methods.evidence import code_evidence, evidence_of
from tablequest.methods.lineage import Binding, traced_items
from tablequest.sandbox import Sandbox, SandboxUnavailable, _lineage_setup, _repl
from tablequest.table import Table

# West's Q3 revenue and South's H2 total are both 205: a value search would find both
REVENUE = Table(
    cells=(
        ("Region", "Q1", "Q2", "Q3", "Q4", "H2"),
        ("North", "100", "110", "120", "130", "250"),
        ("South", "120", "130", "140", "150", "205"),
        ("East", "90", "95", "100", "110", "210"),
        ("West", "50", "60", "205", "70", "275"),
    )
)
COLS = {"Region": 0, "Q1": 1, "Q2": 2, "Q3": 3, "Q4": 4, "H2": 5}


class Cell:
    """One in-process cell run: the value's text and its evidence as (row, column, how)."""

    def __init__(self, reply: dict[str, Any], answer: str | None) -> None:
        self.reply = reply
        lineage = json.loads(reply["lineage"]) if reply.get("lineage") else None
        items = traced_items(lineage)
        bindings = {"df": Binding.of("df", "T", REVENUE)}
        text = answer if answer is not None else (items[0].text if items else "")
        found = evidence_of(text, [items], bindings) if items else None
        names = {v: k for k, v in COLS.items()}
        self.cells = [(c.row, names[c.col], c.how) for c in found[0]] if found else []
        self.verified = found[1].verified if found else None
        self.why = found[1].why if found else None


@pytest.fixture
def run() -> Any:
    _lineage_setup.install()
    df = REVENUE.to_dataframe()
    _lineage_setup.bind({"df": df})
    namespace = {"__name__": "__main__", "df": df, "pd": pd, "__tq__": _lineage_setup.Builtins}

    def cell(code: str, answer: str | None = None) -> Cell:
        reply = _repl.run_cell(code, namespace, max_output=10_000, max_value=10_000)
        assert reply["ok"], reply["error"]
        return Cell(reply, answer)

    cell.namespace = namespace  # type: ignore[attr-defined]
    return cell


def test_a_lookup_is_its_cell_never_an_equal_one_elsewhere(run: Any) -> None:
    got = run('df.loc[df.Region == "West", "Q3"].iloc[0]')
    assert got.reply["value"] == "np.int64(205)"  # the tag never shows
    assert got.cells == [(3, "Q3", "computed")] and got.verified == "verified"
    assert run('df.at[3, "Q3"]').cells == [(3, "Q3", "computed")]
    assert run('df[df.Region == "West"]["Q3"].item()').cells == [(3, "Q3", "computed")]


def test_selections_keep_their_rows(run: Any) -> None:
    got = run("df.query('Q3 > 110').nlargest(1, 'Q3')['Region'].iloc[0]")
    # the row picked by position after nlargest was picked by its Q3: that cell is evidence too
    assert got.cells == [(3, "Region", "computed"), (3, "Q3", "computed")]
    assert got.verified == "verified"
    top = run("df.sort_values('Q1').head(2)['Q1'].sum()")  # East 90 + West 50
    assert top.cells == [(2, "Q1", "computed"), (3, "Q1", "computed")]
    assert top.verified == "verified"


@pytest.mark.parametrize(
    "code",
    [
        "df.iloc[3]['Q3']",
        "df.sort_values('Q3', ascending=False).iloc[0]['Q3']",
        "df.loc[df.Q3.idxmax()]['Q3']",
        "df.set_index('Region').loc['West', 'Q3']",
        "df.set_index('Region')['Q3']['West']",
    ],
)
def test_rows_read_whole_and_reindexed_frames(run: Any, code: str) -> None:
    got = run(code)
    assert (3, "Q3", "computed") in got.cells and got.verified == "verified"
    assert {c[0] for c in got.cells} == {3}
    top = run("df.sort_values('Q3').iloc[-1]['Region']")  # picked by the sort's key
    assert top.cells == [(3, "Region", "computed"), (3, "Q3", "computed")]


def test_long_lists_multi_line_items_and_items_with_commas() -> None:
    """A list too long for its text, items holding a newline or ", ", and "?" as an item."""
    rows = [("Name", "Date", "Score")]
    rows += [(f"name {i}\nline two", f"June {i % 28 + 1}, 2000", str(i)) for i in range(80)]
    rows += [("?", "?", "-1")]
    table = Table(cells=tuple(rows))
    _lineage_setup.install()
    df = table.to_dataframe()
    _lineage_setup.bind({"df": df})
    namespace = {"df": df, "pd": pd, "__tq__": _lineage_setup.Builtins}
    bindings = {"df": Binding.of("df", "T", table)}

    def found(code: str, answer: str) -> Any:
        reply = _repl.run_cell(code, namespace, max_output=10_000, max_value=10_000)
        return evidence_of(answer, [traced_items(json.loads(reply["lineage"]))], bindings)

    names = ", ".join(f"name {i}\nline two" for i in range(1, 80))
    got = found("df[df.Score > 0].Name.tolist()", names)
    assert got is not None and got[1].verified == "verified" and len(got[0]) == 79
    dates = ", ".join(f"June {i % 28 + 1}, 2000" for i in range(70, 80))
    got = found("df[df.Score >= 70].Date.tolist()", dates)
    assert got is not None and got[1].verified == "verified" and len(got[0]) == 10
    got = found("df.loc[df.Score.idxmin(), 'Name']", "?")
    assert got is not None and got[1].verified == "verified"


def test_a_row_sum_is_the_rows_cells(run: Any) -> None:
    got = run('df.loc[df.Region == "West", ["Q1", "Q2", "Q3", "Q4"]].sum(axis=1).iloc[0]')
    assert got.cells == [(3, q, "computed") for q in ("Q1", "Q2", "Q3", "Q4")]
    assert got.verified == "verified" and "385" in (got.why or "")


def test_a_column_mean_and_arithmetic_on_it(run: Any) -> None:
    got = run("round(float(df['Q3'].mean()) * 2, 1)")
    assert got.cells == [(r, "Q3", "computed") for r in range(4)]
    assert got.reply["value"] == "282.5" and got.verified == "verified"


def test_idxmax_names_the_winning_cell(run: Any) -> None:
    got = run('df.loc[df["Q3"].idxmax(), "Region"]')
    assert got.cells == [(3, "Region", "computed"), (3, "Q3", "computed")]
    assert got.verified == "verified"


@pytest.mark.parametrize(
    "code", ["(df.Q3 > 110).sum()", "len(df[df.Q3 > 110])", "df[df['Q3'] > 110].shape[0]"]
)
def test_a_count_with_a_predicate_is_the_counted_cells(run: Any, code: str) -> None:
    got = run(code)
    assert got.cells == [(0, "Q3", "computed"), (1, "Q3", "computed"), (3, "Q3", "computed")]
    assert got.verified == "verified"


def test_a_groupby_sum_is_its_groups_cells_not_an_equal_group(run: Any) -> None:
    got = run('df.groupby("Region")["Q3"].sum()["West"]')
    assert got.cells == [(3, "Q3", "computed")] and got.verified == "verified"
    best = run('df.groupby("Region")["H2"].sum().idxmax()')
    assert best.reply["value"] == "'West'" and best.verified == "verified"
    assert best.cells == [(3, "Region", "computed"), (3, "H2", "computed")]


def test_lists_and_printed_values(run: Any) -> None:
    got = run("df[df.Q3 > 110].Region.tolist()", "North, South, West")
    assert got.cells == [(r, "Region", "computed") for r in (0, 1, 3)]
    assert got.verified == "verified"
    printed = run("best = df.Q3.max()\nprint('the best is', best)", "205")
    assert printed.cells == [(3, "Q3", "computed")] and printed.verified == "verified"


def test_code_that_defeats_tracking_says_untracked(run: Any) -> None:
    got = run('df.loc[df.Region == "West", ["Q1", "Q2"]].values.sum()')
    assert got.cells == [(3, "Q1", "untracked"), (3, "Q2", "untracked")]
    assert got.verified == "unverified" and "untracked" in (got.why or "")
    shifted = run("df.Q3.cumsum().iloc[-1]")  # a derivation whose cells are not traced
    assert shifted.cells == [] and shifted.verified == "unverified"
    looped = run("sum(v for v in df.Q3.to_dict().values())")
    assert looped.verified == "unverified"


def test_a_value_the_table_does_not_give_is_contradicted(run: Any) -> None:
    got = run('df.loc[3, "Q3"] = 999\ndf.loc[3, "Q3"]')  # the code changed the data
    assert got.cells == [(3, "Q3", "computed")] and got.verified == "contradicted"
    assert "205" in (got.why or "")


def test_through_a_real_sandbox() -> None:
    try:
        sandbox = Sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    with sandbox, sandbox.session({"df": REVENUE.to_dataframe()}) as session:
        result = session.run('df.loc[df.Region == "West", "Q3"].iloc[0]')
    assert result.ok and result.value == "np.int64(205)"
    items = traced_items(result.lineage)
    found = evidence_of("205", [items], {"df": Binding.of("df", "T", REVENUE)})
    assert found is not None and found[1].verified == "verified"
    assert [(c.row, c.col, c.value, c.how) for c in found[0]] == [(3, 3, "205", "computed")]


def test_a_merge_keeps_each_sides_rows(run: Any) -> None:
    code = (
        "targets = pd.DataFrame({'Region': ['West', 'South'], 'Target': [200, 150]})\n"
        "m = df.merge(targets, on='Region')\n"
        "m.loc[m.Region == 'West', 'Q3'].iloc[0]"
    )
    got = run(code)
    assert got.cells == [(3, "Q3", "computed")] and got.verified == "verified"
    total = run("df.merge(df[['Region', 'H2']], on='Region', suffixes=('', '_2'))['H2_2'].sum()")
    assert total.cells == [(r, "H2", "computed") for r in range(4)]
    assert total.verified == "verified"


def test_cleaning_keeps_the_cells(run: Any) -> None:
    money = "df['cash'] = '$' + df['Q3'].astype(str) + '.00'\n"
    got = run(
        money + "df['p'] = df['cash'].str.replace('$', '').astype(float)\n"
        "df.loc[df.Region == 'West', 'p'].iloc[0]"
    )
    # the cells of the cleaned column are West's Q3; text concatenation is not re-run
    assert got.cells == [(3, "Q3", "computed")] and got.verified == "unverified"
    got = run("pd.to_numeric(df['Q3'].astype(str).str.strip()).mean()")
    assert got.cells == [(r, "Q3", "computed") for r in range(4)] and got.verified == "verified"
    count = run("df.Region.str.contains('th').sum()")  # North, South
    assert count.cells == [(0, "Region", "computed"), (1, "Region", "computed")]
    assert count.verified == "verified"
    year = run("df.Region.str.len().max()")  # not a number the cells say: never contradicted
    assert year.verified == "unverified"


@pytest.mark.parametrize(
    "recipe",
    [
        ["agg", "sum", ["bin"], 0],
        ["agg", "item", ["src", "df"], 0],
        ["agg", "mean", ["src", "df", "Q3"], 7],
        ["with", ["agg"], ["agg", "sum"]],
        ["bin", "+", ["const"], ["const", 1]],
        ["agg", "sum", ["at", 5, ["src", "df", "Q3"]], 0],
        ["list", "list", [[["src", "df", "Q3"]]], 0],
        ["opaque", [["agg", "sum", ["src", "nope", "Q3"], 0]]],
        "not a recipe",
        [[[[[[[[[[["agg", "sum", ["src", "df", "Q3"], 0]]]]]]]]]]],
    ],
)
def test_a_malformed_lineage_from_the_child_names_nothing_and_never_raises(recipe: Any) -> None:
    bindings = {"df": Binding.of("df", "T", REVENUE)}
    for rows in ([[0, 2_000_000_000]], [[0, 3]], [["x", None]], "rows"):
        lineage = {"value": {"text": "205", "recipe": recipe, "rows": rows, "at": [[None]]}}
        found = evidence_of("205", [traced_items(lineage)], bindings)
        assert found is not None and found[1].verified in ("unverified", "contradicted")
        assert all(c.value == REVENUE.body[c.row][c.col] for c in found[0])


def test_two_values_stating_the_answer_are_ambiguous(run: Any) -> None:
    got = run(
        "s = df.loc[df.Region == 'South', 'H2'].iloc[0]\n"
        "w = df.loc[df.Region == 'West', 'Q3'].iloc[0]\nprint(s)\nprint(w)",
        "205",
    )
    assert set(got.cells) == {(1, "H2", "ambiguous"), (3, "Q3", "ambiguous")}
    assert got.verified == "unverified" and "ambiguous" in (got.why or "")


def test_an_answer_the_code_did_not_compute_is_never_verified(run: Any) -> None:
    got = run("df[df.Region == 'West'].Q1.sum()", "60")  # the code said 50; Q2 holds 60
    assert got.verified is None  # no traced value states 60
    reply = _repl.run_cell(
        "df[df.Region == 'West'].Q2.sum()", run.namespace, max_output=100, max_value=100
    )
    cells, verdict = code_evidence(
        "61", [json.loads(reply["lineage"])], {"df": Binding.of("df", "T", REVENUE)}
    )
    assert cells == [] and verdict.verified == "unverified"


@pytest.mark.parametrize(
    "edit",
    [
        "df.columns = ['Region', 'Q1', 'Q2', 'H2', 'Q4', 'Q3']",
        "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
        "    df.rename(columns={'Q3': 'H2', 'H2': 'Q3'}, inplace=True)",
        "df.index = df.index[::-1]",
    ],
)
def test_relabelled_frames_are_untracked_not_misattributed(run: Any, edit: str) -> None:
    got = run(edit + "\ndf.loc[df.Region == 'West', 'Q3'].iloc[0]")
    assert got.cells == [] and got.verified == "unverified"


def test_code_that_edits_the_data_in_place_is_never_verified(run: Any) -> None:
    got = run("df.replace({'Q3': {205: 1}}, inplace=True)\ndf.Q3.max()")
    assert got.cells == [(1, "Q3", "computed")] and got.verified == "unverified"
    assert "changed the table" in (got.why or "")


def test_values_behave_as_plain_pandas_gives_them(run: Any) -> None:
    assert run("import json\njson.dumps({'t': sum(df.Q3)})").reply["value"] == "'{\"t\": 565}'"
    assert run("type(df.Q3.max()).__name__").reply["value"] == "'int64'"
    assert run("str(type(df.Q3.max()))").reply["value"] == "\"<class 'numpy.int64'>\""
    assert run("sum(df.Q3)").reply["value"] == "565"


@pytest.mark.parametrize(
    ("code", "rows"),
    [
        ("df.Q3.eq(205).sum()", [3]),
        ("df.Q3.isin([120, 205]).sum()", [0, 3]),
        ("df.Q3.between(130, 210).sum()", [1, 3]),
        ("df.loc[df.Region == 'West'].Q3.agg('sum')", [3]),
        ("df.loc[df.Q3.idxmax()].Q3", [3]),
    ],
)
def test_common_idioms_keep_their_cells(run: Any, code: str, rows: list[int]) -> None:
    got = run(code)
    assert sorted({c[0] for c in got.cells}) == rows and got.verified == "verified"
