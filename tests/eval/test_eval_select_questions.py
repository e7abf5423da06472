"""`select_questions` with `--questions FILE`: an id list, or the benchmark's own question file
(reloaded by the dataset's loader), or a clear error for anything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import DatasetError, load, parse_id_list, reload_questions
from tablequest.eval.runner import RunnerError, select_questions
from tablequest.eval.siblings import with_siblings

FIXTURES = Path(__file__).parent / "fixtures"
WTQ_HEADER = "id\tutterance\tcontext\ttargetValue\n"


def test_parse_id_list_tells_ids_from_question_files() -> None:
    assert parse_id_list("# picked\nnu-3\n\n nu-1 \n") == ["nu-3", "nu-1"]
    assert parse_id_list('\ufeff["a", 7, 1.5]') == ["a", "7", "1.5"]
    assert parse_id_list("") == []
    assert parse_id_list(WTQ_HEADER + "nu-0\tq\tcsv/1.csv\ta\n") is None  # TSV header
    assert parse_id_list("# made by hand\n" + WTQ_HEADER) is None
    assert parse_id_list('{"t.csv": [["c"], [1], "x"]}') is None  # a JSON object
    assert parse_id_list('{"id": 1}\n{"id": 2}\n') is None  # JSON lines
    assert parse_id_list('[{"question_id": "q"}]') is None  # a JSON list of objects
    with pytest.raises(ValueError, match="not a JSON list"):
        parse_id_list("[oops")
    with pytest.raises(ValueError, match="neither ids nor question objects"):
        parse_id_list('["a", {"id": 1}]')
    with pytest.raises(ValueError, match="neither ids nor question objects"):
        parse_id_list("[true]")


def test_id_list_path_unchanged(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    refs = dict(ds.table_refs)
    ids = tmp_path / "ids.txt"
    ids.write_text("nu-4\n# skip\nnu-2\n", encoding="utf-8")
    chosen = select_questions(ds, ids_file=ids)
    assert chosen == [ds.questions[4], ds.questions[2]]
    ids.write_text('["nu-11"]', encoding="utf-8")
    assert select_questions(ds, ids_file=ids) == [ds.questions[11]]
    assert ds.table_refs == refs and len(ds.notes) == 2  # the dataset is left alone


def test_wtq_question_file(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    tsv = tmp_path / "custom.tsv"
    tsv.write_text(
        WTQ_HEADER
        + "nu-5\thow high is the eiger?\tcsv/201-csv/2.csv\t3,967\n"
        + "nt-1\twhen was solaris released?\tcsv/201-csv/0.csv\t1972\n"
        + "my-0\twho directed ran?\tcsv/201-csv/0.csv\tAkira Kurosawa\n",
        encoding="utf-8",
    )
    chosen = select_questions(ds, ids_file=tsv)
    assert [q.id for q in chosen] == ["nu-5", "nt-1", "my-0"]
    assert chosen[0].answers == ds.questions[5].answers
    assert chosen[0].gold_table_ids == ds.questions[5].gold_table_ids
    assert chosen[2].answers == ["Akira Kurosawa"]
    assert [q.id for q in select_questions(ds, ids_file=tsv, limit=2)] == ["nu-5", "nt-1"]
    assert "3 questions from" in ds.notes[-1] and "added" not in ds.notes[-1]


def test_reload_uses_the_dataset_options(tmp_path: Path) -> None:
    root = tmp_path / "tablebench"
    root.mkdir()
    lines = (FIXTURES / "tablebench" / "TableBench.jsonl").read_text(encoding="utf-8")
    (root / "TableBench.jsonl").write_text(lines, encoding="utf-8")
    (root / "Other.jsonl").write_text(lines, encoding="utf-8")
    ds = load("tablebench", root, file="Other.jsonl")
    custom = tmp_path / "tb.jsonl"
    custom.write_text(lines.split("\n")[2] + "\n", encoding="utf-8")
    chosen = select_questions(ds, ids_file=custom)
    assert chosen[0].gold_table_ids == ["Other.jsonl#q2"]  # not TableBench.jsonl#q2
    assert len(ds.table_refs) == 5


def test_tcrbench_json_list_of_questions(tmp_path: Path) -> None:
    ds = load("tcrbench", FIXTURES / "tcrbench")
    raw = json.loads((FIXTURES / "tcrbench" / "data" / "TCR_Questions.json").read_text())
    custom = tmp_path / "tcr.json"
    custom.write_text(json.dumps([{**raw[0], "question_id": "mine"}]), encoding="utf-8")
    chosen = select_questions(ds, ids_file=custom)
    assert [q.id for q in chosen] == ["mine"]
    assert chosen[0].group == ds.questions[0].group


def test_new_inline_tables_join_the_dataset_corpus(tmp_path: Path) -> None:
    ds = load("tablebench", FIXTURES / "tablebench")
    before = len(ds.table_refs)
    row = {
        "id": "mine",
        "qtype": "FactChecking",
        "qsubtype": "MatchBased",
        "table": {"columns": ["city", "pop"], "data": [["Oslo", "709037"]]},
        "question": "Population of Oslo?",
        "answer": "709037",
    }
    custom = tmp_path / "tb.jsonl"
    custom.write_text(json.dumps(row) + "\n", encoding="utf-8")
    chosen = select_questions(ds, ids_file=custom)
    assert len(ds.table_refs) == before + 1
    assert "1 of their tables added to the corpus" in ds.notes[-1]
    corpus = build_corpus(ds, "csv", in_memory=True)
    with corpus.store:
        assert corpus.table_ids(chosen[0].gold_table_ids)  # the scorer finds the gold table


def test_files_that_are_neither_give_clear_errors(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    bad = tmp_path / "bad.txt"
    bad.write_text("lorem ipsum\ndolor sit amet\n", encoding="utf-8")
    with pytest.raises(RunnerError, match=r"2 id\(s\) not in wtq: .*nor is it a question file"):
        select_questions(ds, ids_file=bad)
    bad.write_text('{"queries": []}', encoding="utf-8")
    with pytest.raises(
        RunnerError, match=r"not an id list, and cannot be read as wtq questions \(a TSV"
    ):
        select_questions(ds, ids_file=bad)
    bad.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(RunnerError, match=r"as wtq questions .*lacks column\(s\) id"):
        select_questions(ds, ids_file=bad)
    bad.write_text('[1, {"id": 2}]', encoding="utf-8")
    with pytest.raises(RunnerError, match="is a JSON list of neither ids nor question objects"):
        select_questions(ds, ids_file=bad)
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(RunnerError, match="cannot read --questions"):
        select_questions(ds, ids_file=bad)
    tabfact = load("tabfact", FIXTURES / "tabfact")
    bad.write_text(WTQ_HEADER, encoding="utf-8")
    with pytest.raises(RunnerError, match=r"as tabfact questions .*is not valid JSON"):
        select_questions(tabfact, ids_file=bad)


def test_derived_datasets_cannot_reload(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = with_siblings(load("wtq", evalrun_wtq), n=1, seed=0)
    tsv = tmp_path / "q.tsv"
    tsv.write_text(WTQ_HEADER, encoding="utf-8")
    with pytest.raises(DatasetError, match=r"wtq\+siblings1: not a benchmark loaded by `load`"):
        reload_questions(ds, tsv)
