"""`questions_file=` on every loader: questions from a custom file in the benchmark's own
format, tables from the benchmark root (fixtures: tiny synthetic benchmarks, custom files
written here)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tablequest.eval.datasets import DATASETS, DatasetError, load

FIXTURES = Path(__file__).parent / "fixtures"


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_loader_takes_questions_file_and_records_it(tmp_path: Path) -> None:
    for name, loader in DATASETS.items():
        param = inspect.signature(loader).parameters.get("questions_file")
        assert param is not None and param.kind is param.KEYWORD_ONLY, name
        assert param.default is None, name
    ds = load("wtq", FIXTURES / "wtq", split="training")
    assert ds.options == {"split": "training"} and ds.questions_file is None


# -- WTQ --------------------------------------------------------------------------------------


def test_wtq_custom_tsv(tmp_path: Path) -> None:
    tsv = tmp_path / "my-split.tsv"
    tsv.write_text(
        "id\tutterance\tcontext\ttargetValue\n"
        "nu-2\thow many fans attended?\tcsv/203-csv/2.csv\t1,000\n"
        "nu-0\twhich team lost in 2004?\tcsv/204-csv/1.csv\tBeta\n"  # tagged, other value
        "my-1\twho \\p what?\tcsv/204-csv/1.csv\tA|B\n",
        encoding="utf-8",
    )
    base = load("wtq", FIXTURES / "wtq")
    ds = load("wtq", FIXTURES / "wtq", questions_file=tsv)
    assert [q.id for q in ds.questions] == ["nu-2", "nu-0", "my-1"]
    nu2, nu0, mine = ds.questions
    assert nu2.extra["target_canon"] == ["1000.0"] and nu2.extra["split"] == "my-split"
    assert nu2.answers == base.questions[2].answers
    assert nu2.gold_table_ids == base.questions[2].gold_table_ids
    assert "target_canon" not in nu0.extra  # same id, another targetValue: no canon
    assert mine.question == "who | what?" and mine.answers == ["A", "B"]
    assert "target_canon" not in mine.extra
    assert list(ds.table_refs) == list(base.table_refs)  # the corpus is unchanged
    assert ds.questions_file == tsv and ds.options == {"split": "pristine-unseen-tables"}
    assert any("targetCanon for 1 of 3" in n for n in ds.notes)


def test_wtq_custom_tsv_errors(tmp_path: Path) -> None:
    tsv = tmp_path / "mine.tsv"
    tsv.write_text(
        "id\tutterance\tcontext\ttargetValue\nx-1\tq?\tcsv/999-csv/0.csv\ta\n", encoding="utf-8"
    )
    with pytest.raises(DatasetError, match=r"1 gold table\(s\) missing .*mine\.tsv.*999-csv"):
        load("wtq", FIXTURES / "wtq", questions_file=tsv)
    tsv.write_text("id\tquestion\nx-1\tq?\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"mine\.tsv' lacks column\(s\) utterance"):
        load("wtq", FIXTURES / "wtq", questions_file=tsv)
    with pytest.raises(DatasetError, match="WTQ questions: file not found"):
        load("wtq", FIXTURES / "wtq", questions_file=tmp_path / "absent.tsv")


# -- TabFact ----------------------------------------------------------------------------------


def test_tabfact_custom_claims(copy: Callable[[str], Path], tmp_path: Path) -> None:
    root = copy("tabfact")
    (root / "data" / "all_csv" / "9-9-9.html.csv").write_text("a#b\n1#2\n", encoding="utf-8")
    custom = tmp_path / "claims.json"
    custom.write_text(
        json.dumps(
            {
                "1-200-3.html.csv": [["the final have 6 entry"], [0], "my caption"],
                "9-9-9.html.csv": [["a be 1", "b be 3"], [1, 0], "train table"],
            }
        ),
        encoding="utf-8",
    )
    ds = load("tabfact", root, subset="small_test", questions_file=custom)
    assert [q.id for q in ds.questions] == [
        "1-200-3.html.csv#0",
        "9-9-9.html.csv#0",
        "9-9-9.html.csv#1",
    ]
    assert [q.answers for q in ds.questions] == [["false"], ["true"], ["false"]]
    assert ds.questions[1].gold_table_ids == ["data/all_csv/9-9-9.html.csv"]
    # the test corpus stays (with its captions); the file's other table joins it
    assert list(ds.table_refs) == [
        "data/all_csv/2-100-1.html.csv",
        "data/all_csv/1-200-3.html.csv",
        "data/all_csv/9-9-9.html.csv",
    ]
    assert ds.table("data/all_csv/1-200-3.html.csv").title == "event counts"
    assert ds.table("data/all_csv/9-9-9.html.csv").columns == ("a", "b")
    assert ds.options == {"subset": "small_test"}


def test_tabfact_custom_claims_errors(tmp_path: Path) -> None:
    custom = tmp_path / "claims.json"
    custom.write_text(json.dumps({"0-0-0.html.csv": [["c"], [1], "x"]}), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"1 table file\(s\) missing .*claims\.json.*0-0-0"):
        load("tabfact", FIXTURES / "tabfact", questions_file=custom)
    custom.write_text('[{"claim": "c"}]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"claims\.json must map table names"):
        load("tabfact", FIXTURES / "tabfact", questions_file=custom)


# -- TCR-Bench --------------------------------------------------------------------------------


def _tcr_question(qid: str, gold: str, group: list[str]) -> dict[str, object]:
    return {
        "question_id": qid,
        "db_id": "shop",
        "highlighted_table": [gold],
        "all_tables_in_group": group,
        "question": f"question {qid}?",
        "answer": [7.0],
    }


def test_tcrbench_custom_questions(tmp_path: Path) -> None:
    custom = tmp_path / "tcr.json"
    rows = [
        _tcr_question("mine-0", "Sales Orders_T1", ["Sales Orders_T0", "Sales Orders_T1"]),
        _tcr_question("mine-1", "stock_T2", ["stock_T0", "stock_T2"]),  # T2 is not on disk
    ]
    custom.write_text(json.dumps(rows), encoding="utf-8")
    ds = load("tcrbench", FIXTURES / "tcrbench", questions_file=custom)
    assert [q.id for q in ds.questions] == ["mine-0"]
    q = ds.questions[0]
    assert q.answers == ["7"] and q.gold_table_ids == ["tables/TCR_8k/shop/Sales Orders_T1.csv"]
    assert len(q.group) == 2
    assert list(ds.table_refs) == list(load("tcrbench", FIXTURES / "tcrbench").table_refs)
    assert "1 of 2 questions kept (tables present)" in ds.notes
    custom.write_text(json.dumps(rows[1:]), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"none of the 1 questions .*\(questions: .*tcr\.json"):
        load("tcrbench", FIXTURES / "tcrbench", questions_file=custom)
    custom.write_text('{"questions": []}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"tcr\.json must be a list of questions"):
        load("tcrbench", FIXTURES / "tcrbench", questions_file=custom)


# -- HiTab, AIT-QA ----------------------------------------------------------------------------


def test_hitab_custom_questions(tmp_path: Path) -> None:
    row = {"id": "mine", "table_id": "100", "question": "total?", "answer": [3.0]}
    custom = write_jsonl(tmp_path / "hitab.jsonl", [row])
    ds = load("hitab", FIXTURES / "hitab", questions_file=custom)
    assert [(q.id, q.answers) for q in ds.questions] == [("mine", ["3"])]
    assert ds.questions[0].gold_table_ids == ["data/tables/raw/100.json"]
    assert list(ds.table_refs) == ["data/tables/raw/100.json"]
    write_jsonl(custom, [row, {**row, "id": "gone", "table_id": "404"}])
    with pytest.raises(DatasetError, match=r"1 table file\(s\) missing .*hitab\.jsonl.*404"):
        load("hitab", FIXTURES / "hitab", questions_file=custom)


def test_aitqa_custom_questions(tmp_path: Path) -> None:
    row = {"id": "m-0", "table_id": "tab-1", "question": "Fuel?", "answers": ["$9,307"]}
    custom = write_jsonl(tmp_path / "aitqa.jsonl", [row])
    ds = load("aitqa", FIXTURES / "aitqa", questions_file=custom)
    assert [q.id for q in ds.questions] == ["m-0"]
    assert ds.questions[0].gold_table_ids == ["raw_data/aitqa_tables.jsonl#tab-1"]
    assert len(ds.table_refs) == 2  # every released table stays in the corpus
    write_jsonl(custom, [{**row, "table_id": "tab-7"}])
    with pytest.raises(DatasetError, match=r"aitqa\.jsonl name 1 table id\(s\) absent .*tab-7"):
        load("aitqa", FIXTURES / "aitqa", questions_file=custom)


# -- RealHiTBench -----------------------------------------------------------------------------


def _write_xlsx(path: Path, rows: list[list[object]]) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    for row in rows:
        wb.active.append(row)
    wb.save(path)


def test_realhitbench_custom_queries(copy: Callable[[str], Path], tmp_path: Path) -> None:
    root = copy("realhitbench")
    (root / "data" / "tables").mkdir(exist_ok=True)
    _write_xlsx(root / "data" / "tables" / "employment-table01.xlsx", [["Year", "N"], [1955, 1]])
    _write_xlsx(root / "data" / "tables" / "prices-table02.xlsx", [["Item", "Price"], ["a", 2]])
    query = {"FileName": "prices-table02", "QuestionType": "Fact Checking", "Question": "?"}
    custom = tmp_path / "qa.json"
    queries = [  # scored against FinalAnswer, as upstream (ProcessedAnswer: charts only)
        {**query, "id": 10, "FinalAnswer": "2", "ProcessedAnswer": "3"},
        {**query, "id": 11, "FileName": "health-table09", "FinalAnswer": "x"},
    ]
    custom.write_text(json.dumps({"queries": queries}), encoding="utf-8")
    ds = load("realhitbench", root, questions_file=custom)
    assert [(q.id, q.answers) for q in ds.questions] == [("10", ["2"])]
    assert ds.questions[0].extra["processed_answer"] == "3"
    assert list(ds.table_refs) == [
        "data/tables/employment-table01.xlsx",
        "data/tables/prices-table02.xlsx",
    ]
    assert any(
        "skipped 1 questions on 1 tables without xlsx: health-table09" in n for n in ds.notes
    )
    custom.write_text(json.dumps({"queries": queries[1:]}), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"no question has its xlsx .*qa\.json"):
        load("realhitbench", root, questions_file=custom)
    custom.write_text(json.dumps(queries), encoding="utf-8")
    with pytest.raises(DatasetError, match=r'qa\.json must be \{"queries"'):
        load("realhitbench", root, questions_file=custom)
    chart = {**query, "id": 12, "QuestionType": "Visualization", "FinalAnswer": "plt.bar()"}
    custom.write_text(json.dumps({"queries": [chart]}), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"query 0: missing field\(s\) ProcessedAnswer"):
        load("realhitbench", root, questions_file=custom)


# -- inline tables: TableBench, FeTaQA --------------------------------------------------------


def test_tablebench_custom_file_reuses_equal_tables(tmp_path: Path) -> None:
    lines = (FIXTURES / "tablebench" / "TableBench.jsonl").read_text(encoding="utf-8").split("\n")
    same = json.loads(lines[2])  # q2, unchanged
    changed = {**json.loads(lines[4]), "table": {"columns": ["a"], "data": [["y"]]}}  # q4
    custom = write_jsonl(tmp_path / "tb.jsonl", [same, changed])
    base = load("tablebench", FIXTURES / "tablebench")
    ds = load("tablebench", FIXTURES / "tablebench", questions_file=custom)
    assert [q.id for q in ds.questions] == ["q2", "q4"]
    assert ds.questions[0] == base.questions[2]  # same question, the benchmark's table key
    new_key = f"{custom.resolve().as_posix()}#q4"
    assert ds.questions[1].gold_table_ids == [new_key]
    assert ds.table(new_key).body == (("y",),)
    assert list(ds.table_refs) == [*base.table_refs, new_key]
    assert ds.options == {"file": "TableBench.jsonl"}
    write_jsonl(custom, [{**same, "table": {"columns": ["a"]}}])
    with pytest.raises(DatasetError, match=r"tb\.jsonl record 1 table: missing field\(s\) data"):
        load("tablebench", FIXTURES / "tablebench", questions_file=custom)


def test_fetaqa_custom_file(tmp_path: Path) -> None:
    first = json.loads(
        (FIXTURES / "fetaqa" / "data" / "fetaQA-v1_test.jsonl").read_text().split("\n")[0]
    )
    retitled = {**first, "feta_id": 7, "table_page_title": "Page Z", "question": "Again?"}
    custom = write_jsonl(tmp_path / "feta.jsonl", [first, retitled])
    ds = load("fetaqa", FIXTURES / "fetaqa", questions_file=custom)
    assert [q.id for q in ds.questions] == ["7", "7#2"]
    assert ds.questions[0].gold_table_ids == ["data/fetaQA-v1_test.jsonl#7"]
    # same id as the benchmark's 7#2, but another table (the title differs): a new table
    key = f"{custom.resolve().as_posix()}#7#2"
    assert ds.questions[1].gold_table_ids == [key]
    assert ds.table(key).title == "Page Z — Career"
    assert len(ds.table_refs) == 3
    write_jsonl(custom, [{**first, "table_array": "nope"}])
    with pytest.raises(DatasetError, match=r"feta\.jsonl record 1: table_array is not a list"):
        load("fetaqa", FIXTURES / "fetaqa", questions_file=custom)
    with pytest.raises(DatasetError, match="FeTaQA questions: file not found"):
        load("fetaqa", FIXTURES / "fetaqa", questions_file=tmp_path / "absent.jsonl")
