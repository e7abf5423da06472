"""Benchmark loaders on tiny fixtures that mimic each format (never the real data)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tablequest.eval.datasets import DATASETS, DatasetError, TableRef, load
from tablequest.eval.datasets.tabfact import parse_hash_csv
from tablequest.eval.datasets.wtq import tsv_unescape, tsv_unescape_list
from tablequest.eval.metrics import wtq_match

FIXTURES = Path(__file__).parent / "fixtures"


def test_registry_and_unknown_names() -> None:
    assert sorted(DATASETS) == [
        "aitqa",
        "arcadeqa",
        "birdqa",
        "fetaqa",
        "hitab",
        "realhitbench",
        "tabfact",
        "tabfact-synth",
        "tablebench",
        "tcrbench",
        "wtq",
    ]
    with pytest.raises(DatasetError, match="unknown dataset 'nope'; known: aitqa"):
        load("nope", FIXTURES)
    with pytest.raises(DatasetError, match="bad option"):
        load("tcrbench", FIXTURES / "tcrbench", split="x")
    with pytest.raises(DatasetError, match="TCR-Bench root: directory not found"):
        load("tcrbench", FIXTURES / "absent")


# -- WTQ --------------------------------------------------------------------------------------


def test_tsv_unescape() -> None:
    assert tsv_unescape(r"a\pb\nc\\d") == "a|b\nc\\d"
    assert tsv_unescape_list(r"x|y\pz") == ["x", "y|z"]


def test_wtq_unseen_with_target_canon() -> None:
    ds = load("wtq", FIXTURES / "wtq")
    assert [q.id for q in ds.questions] == ["nu-0", "nu-1", "nu-2"]
    q1 = ds.questions[1]
    assert q1.question == "list a|b teams\nplease"
    assert q1.answers == ["Alpha", "Beta"]
    assert q1.gold_table_ids == ["csv/204-csv/1.csv"] and q1.group == []
    q2 = ds.questions[2]
    assert q2.extra["target_canon"] == ["1000.0"]
    assert q2.extra["target_canon_type"] == "number"
    assert wtq_match(["1000"], q2.answers, q2.extra["target_canon"])
    assert list(ds.table_refs) == ["csv/203-csv/2.csv", "csv/204-csv/1.csv"]
    ref = ds.table_refs["csv/204-csv/1.csv"]
    assert ref.meta == {"html": "csv/204-csv/1.html", "markdown": "csv/204-csv/1.table"}
    table = ds.table("csv/204-csv/1.csv")
    assert table.columns == ("Year", "Team", "Fans")
    assert table.body[1] == ("2005", 'Beta "B"', "900")
    assert [key for key, _ in ds.tables()] == list(ds.table_refs)
    assert len(ds) == 3
    with pytest.raises(KeyError, match="no table 'x'"):
        ds.table("x")


def test_wtq_training_and_all(copy: Callable[[str], Path]) -> None:
    training = load("wtq", FIXTURES / "wtq", split="training")
    assert training.questions[0].question == "what is c:\\dir?"
    assert "target_canon" not in training.questions[0].extra
    assert any("no tagged file" in n for n in training.notes)
    both = load("wtq", FIXTURES / "wtq", split="all")
    assert len(both) == 4
    # the tagged file may also sit directly under tagged/ (layout of the shared copy)
    root = copy("wtq")
    (root / "tagged" / "data" / "pristine-unseen-tables.tagged").rename(
        root / "tagged" / "pristine-unseen-tables.tagged"
    )
    assert "target_canon" in load("wtq", root).questions[0].extra


def test_wtq_errors(copy: Callable[[str], Path]) -> None:
    with pytest.raises(DatasetError, match="unknown split 'dev'"):
        load("wtq", FIXTURES / "wtq", split="dev")
    root = copy("wtq")
    (root / "csv" / "203-csv" / "2.csv").unlink()
    with pytest.raises(DatasetError, match=r"1 gold table\(s\) missing .*csv/203-csv/2.csv"):
        load("wtq", root)
    (root / "data" / "pristine-unseen-tables.tsv").unlink()
    with pytest.raises(DatasetError, match="WTQ pristine-unseen-tables questions: file not found"):
        load("wtq", root)
    shutil.rmtree(root / "csv")
    with pytest.raises(DatasetError, match="WTQ tables: directory not found"):
        load("wtq", root)


def test_wtq_malformed_tsv(copy: Callable[[str], Path]) -> None:
    root = copy("wtq")
    tsv = root / "data" / "training.tsv"
    tsv.write_text("id\tutterance\tcontext\ttargetValue\nnt-0\tonly two\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"training\.tsv:2 has 2 fields"):
        load("wtq", root, split="training")
    tsv.write_text("id\tquestion\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="lacks column"):
        load("wtq", root, split="training")
    tagged = root / "tagged" / "data" / "pristine-unseen-tables.tagged"
    text = tagged.read_text(encoding="utf-8").replace("1000.0\tnumber", "1000.0|5\tnumber")
    tagged.write_text(text, encoding="utf-8")
    ds = load("wtq", root)
    assert "target_canon" not in ds.questions[2].extra
    assert any("differ in length" in n for n in ds.notes)
    for path in (root / "csv").glob("*/*.csv"):
        path.unlink()
    with pytest.raises(DatasetError, match="no tables matching"):
        load("wtq", root)


# -- TabFact ----------------------------------------------------------------------------------


def test_tabfact_claims_and_hash_tables() -> None:
    ds = load("tabfact", FIXTURES / "tabfact")
    assert [q.id for q in ds.questions] == [
        "2-100-1.html.csv#0",
        "2-100-1.html.csv#1",
        "1-200-3.html.csv#0",
    ]
    q = ds.questions[1]
    assert q.answers == ["false"] and q.extra["label"] == 0 and q.task == "fact_verification"
    assert q.gold_table_ids == ["data/all_csv/2-100-1.html.csv"]
    table = ds.table("data/all_csv/2-100-1.html.csv")
    assert table.columns == ("year", "team", "fans")
    assert table.body[0] == ("2004", "alpha", "1,000")
    assert table.title == "season results"
    small = load("tabfact", FIXTURES / "tabfact", subset="small_test")
    assert [q.id for q in small.questions] == ["1-200-3.html.csv#0"]
    assert len(small.table_refs) == 2  # the corpus keeps every test table


def test_tabfact_errors(copy: Callable[[str], Path]) -> None:
    root = copy("tabfact")
    with pytest.raises(DatasetError, match="TabFact complex_test ids: file not found"):
        load("tabfact", root, subset="complex_test")
    (root / "data" / "small_test_id.json").write_text("{}", encoding="utf-8")
    with pytest.raises(DatasetError, match="must be a list of table names"):
        load("tabfact", root, subset="small_test")
    (root / "data" / "all_csv" / "1-200-3.html.csv").unlink()
    with pytest.raises(DatasetError, match=r"1 table file\(s\) missing .*1-200-3"):
        load("tabfact", root)
    examples = root / "tokenized_data" / "test_examples.json"
    examples.write_text('{"t.csv": [["c"], [1]]}', encoding="utf-8")
    with pytest.raises(DatasetError, match="is not \\[claims, labels, caption\\]"):
        load("tabfact", root)
    examples.write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match="must map table names"):
        load("tabfact", root)
    examples.write_text("{broken", encoding="utf-8")
    with pytest.raises(DatasetError, match="is not valid JSON"):
        load("tabfact", root)


def test_tabfact_bad_label_and_empty_table(copy: Callable[[str], Path]) -> None:
    root = copy("tabfact")
    examples = root / "tokenized_data" / "test_examples.json"
    examples.write_text('{"1-200-3.html.csv": [["c"], [2], "cap"]}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"label 2 of 1-200-3\.html\.csv#0"):
        load("tabfact", root)
    with pytest.raises(DatasetError, match="empty table"):
        parse_hash_csv("\n\n", path="x.csv")
    ref = TableRef("k", root / "gone.csv", "tabfact_csv")
    with pytest.raises(DatasetError, match="cannot read table"):
        ref.load()
    with pytest.raises(DatasetError, match="no reader for table format 'weird'"):
        TableRef("k", root, "weird").load()


# -- TCR-Bench --------------------------------------------------------------------------------


def test_tcrbench_keeps_questions_with_tables() -> None:
    ds = load("tcrbench", FIXTURES / "tcrbench")
    assert [q.id for q in ds.questions] == ["Question_G0_Q0"]
    q = ds.questions[0]
    assert q.answers == ["35156", "B-2", "True"]
    assert q.extra["answer_raw"] == [35156.0, "B-2", True]
    assert q.gold_table_ids == ["tables/TCR_8k/shop/Sales Orders_T0.csv"]
    assert q.group == [
        "tables/TCR_8k/shop/Sales Orders_T0.csv",
        "tables/TCR_8k/shop/Sales Orders_T1.csv",
    ]
    assert ds.notes == ["1 of 2 questions kept (tables present)", "3 of 4 listed tables present"]
    ref = ds.table_refs["tables/TCR_8k/shop/Sales Orders_T1.csv"]
    assert ref.meta["render_format"] == "markdown"
    assert ds.table(ref.key).columns == ("order_id", "amount_div10")


def test_tcrbench_errors(copy: Callable[[str], Path]) -> None:
    root = copy("tcrbench")
    (root / "tables" / "TCR_8k" / "shop" / "Sales Orders_T1.csv").unlink()
    with pytest.raises(DatasetError, match="none of the 2 questions has its gold table"):
        load("tcrbench", root)
    (root / "data" / "TCR_Tables.json").write_text('[{"db_id": "x"}]', encoding="utf-8")
    with pytest.raises(DatasetError, match="entry 0: missing field\\(s\\) table_path"):
        load("tcrbench", root)
    (root / "data" / "TCR_Tables.json").write_text('["x"]', encoding="utf-8")
    with pytest.raises(DatasetError, match="expected a JSON object, got str"):
        load("tcrbench", root)
    (root / "data" / "TCR_Tables.json").write_text("{}", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"TCR_Tables\.json must be a list of tables"):
        load("tcrbench", root)
    (root / "data" / "TCR_Questions.json").unlink()
    with pytest.raises(DatasetError, match="TCR-Bench questions: file not found"):
        load("tcrbench", root)


# -- FeTaQA, TableBench, AIT-QA ---------------------------------------------------------------


def test_fetaqa_inline_tables() -> None:
    ds = load("fetaqa", FIXTURES / "fetaqa")
    assert [q.id for q in ds.questions] == ["7", "7#2"]
    q = ds.questions[0]
    assert q.task == "free_form" and q.answers == ["In 2019, A was in Show X."]
    assert q.extra["highlighted_cell_ids"] == [[1, 0], [1, 1]]
    table = ds.table(q.gold_table_ids[0])
    assert q.gold_table_ids == ["data/fetaQA-v1_test.jsonl#7"]
    assert table.title == "Page A — Career"
    assert table.body == (("2019", "Show X"), ("2020", ""))  # ragged row padded
    assert ds.table("data/fetaQA-v1_test.jsonl#7#2").title == "Page B"


def test_fetaqa_errors(copy: Callable[[str], Path]) -> None:
    root = copy("fetaqa")
    path = root / "data" / "fetaQA-v1_test.jsonl"
    path.write_text('{"feta_id": 1, "table_array": [], "question": "q", "answer": "a"}\n')
    with pytest.raises(DatasetError, match="record 1: table_array is not a list of rows"):
        load("fetaqa", root)
    path.write_text('{"feta_id": 1}\n')
    with pytest.raises(DatasetError, match="missing field\\(s\\) table_array, question, answer"):
        load("fetaqa", root)
    path.write_text("[1]\n")
    with pytest.raises(DatasetError, match=":1 is not a JSON object"):
        load("fetaqa", root)
    path.write_text("\n{oops\n")
    with pytest.raises(DatasetError, match=":2 is not valid JSON"):
        load("fetaqa", root)
    with pytest.raises(DatasetError, match="FeTaQA dev split: file not found"):
        load("fetaqa", root, split="dev")


def test_tablebench_tasks_metrics_and_duplicate_ids() -> None:
    ds = load("tablebench", FIXTURES / "tablebench")
    assert [q.id for q in ds.questions] == ["q1", "q1#2", "q2", "q3", "q4"]
    metrics = [q.extra["metric"] for q in ds.questions]
    assert metrics == ["em", "em_10pct", "rouge_l", "pass@1", "em"]
    tasks = [q.task for q in ds.questions]
    assert tasks == ["tableqa", "tableqa", "free_form", "visualization", "tableqa"]
    assert ds.questions[3].extra["chart_type"] == "bar"
    table = ds.table("TableBench.jsonl#q1")
    assert table.columns == ("season", "storms") and table.body[1] == ("1991", "")
    assert any("1 duplicate id" in n for n in ds.notes)


def test_tablebench_errors(copy: Callable[[str], Path]) -> None:
    root = copy("tablebench")
    path = root / "TableBench.jsonl"
    row = '{"id": "x", "qtype": "a", "qsubtype": "b", "question": "q", "answer": "a", '
    path.write_text(row + '"table": {"columns": "a", "data": []}}\n')
    with pytest.raises(DatasetError, match="table columns/data must be lists"):
        load("tablebench", root)
    path.write_text(row + '"table": {"columns": []}}\n')
    with pytest.raises(DatasetError, match="record 1 table: missing field\\(s\\) data"):
        load("tablebench", root)


def test_aitqa_hierarchical_headers() -> None:
    ds = load("aitqa", FIXTURES / "aitqa")
    assert [q.id for q in ds.questions] == ["q-0", "q-1"]
    q = ds.questions[0]
    assert q.gold_table_ids == ["raw_data/aitqa_tables.jsonl#tab-0"]
    assert q.extra["row_hierarchy_needed"] == "Yes"
    table = ds.table(q.gold_table_ids[0])
    assert (table.n_header_rows, table.n_header_cols) == (2, 2)
    assert table.header_path(2) == ("Year Ended", "2018")
    assert table.row_header_path(0) == ("Consolidated", "Passengers")
    assert table.source.path == "raw_data/aitqa_tables.jsonl#tab-0"
    flat = ds.table("raw_data/aitqa_tables.jsonl#tab-1")
    assert flat.columns == ("Year", "Fuel") and flat.body == (("2018", "$9,307"),)


def test_aitqa_errors(copy: Callable[[str], Path]) -> None:
    root = copy("aitqa")
    questions = root / "raw_data" / "aitqa_questions.jsonl"
    questions.write_text('{"id": "q", "table_id": "tab-9", "question": "?", "answers": ["1"]}\n')
    with pytest.raises(DatasetError, match=r"absent from raw_data/aitqa_tables\.jsonl: tab-9"):
        load("aitqa", root)
    questions.write_text('{"id": "q", "table_id": "tab-0", "question": "?", "answers": "1"}\n')
    with pytest.raises(DatasetError, match="'answers' is not a list"):
        load("aitqa", root)
    tables = root / "raw_data" / "aitqa_tables.jsonl"
    tables.write_text('{"id": "tab-0", "column_header": 3, "data": 4}\n')
    with pytest.raises(DatasetError, match=r"unreadable table raw_data/aitqa_tables\.jsonl#tab-0"):
        load("aitqa", root)


# -- HiTab ------------------------------------------------------------------------------------


def test_hitab_merged_headers_and_answers() -> None:
    ds = load("hitab", FIXTURES / "hitab")
    assert [q.id for q in ds.questions] == ["h1", "h2"]
    assert ds.questions[1].answers == ["other workers", "55"]
    assert ds.questions[1].extra["answer_raw"] == ["other workers", 55.0]
    assert ds.questions[0].gold_table_ids == ["data/tables/raw/100.json"]
    assert len(ds.table_refs) == 1
    table = ds.table("data/tables/raw/100.json")
    assert (table.n_header_rows, table.n_header_cols) == (3, 1)
    assert table.header_path(1) == ("eastern ontario", "french-language workers", "percent")
    assert table.body[1] == ("food service", "52.1", "60.6")
    assert table.title == "agri-food sub-groups"
    checked = load("hitab", FIXTURES / "hitab", quality_checked=True)
    assert checked.questions[0].question == "what percent worked in food service?"


def test_hitab_missing_table(copy: Callable[[str], Path]) -> None:
    root = copy("hitab")
    (root / "data" / "tables" / "raw" / "100.json").unlink()
    with pytest.raises(DatasetError, match=r"1 table file\(s\) missing .*raw/100.json"):
        load("hitab", root)


# -- RealHiTBench -----------------------------------------------------------------------------


def test_realhitbench_xlsx_and_skipped_questions(
    copy: Callable[[str], Path], realhitbench_tables: Callable[[Path], Path]
) -> None:
    root = realhitbench_tables(copy("realhitbench"))
    ds = load("realhitbench", root)
    assert [q.id for q in ds.questions] == ["1", "2", "3"]
    assert [q.task for q in ds.questions] == ["tableqa", "free_form", "tableqa"]
    assert ds.questions[0].answers == ["1955"]
    assert ds.questions[2].answers == []  # Structure Comprehending has no reference answer
    assert ds.questions[0].extra["structure"] == "ColumnHeaderMerge"
    assert any(
        "skipped 1 questions on 1 tables without xlsx: health-table09" in n for n in ds.notes
    )
    table = ds.table("data/tables/employment-table01.xlsx")
    assert table.n_rows == 2
    assert "1955" in table.body[0]


def test_realhitbench_errors(copy: Callable[[str], Path]) -> None:
    root = copy("realhitbench")
    (root / "data" / "tables").mkdir(exist_ok=True)  # git keeps no empty directory
    with pytest.raises(DatasetError, match="no question has its xlsx"):
        load("realhitbench", root)
    (root / "data" / "QA_final.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match='must be \\{"queries"'):
        load("realhitbench", root)
    shutil.rmtree(root / "data" / "tables")
    (root / "data" / "QA_final.json").write_text('{"queries": []}', encoding="utf-8")
    with pytest.raises(DatasetError, match="RealHiTBench tables: directory not found"):
        load("realhitbench", root)
    (root / "data" / "tables").mkdir()
    bad = root / "data" / "tables" / "t.xlsx"
    bad.write_text("not a zip", encoding="utf-8")
    with pytest.raises(DatasetError, match="unreadable table"):
        TableRef("data/tables/t.xlsx", bad, "xlsx").load()
