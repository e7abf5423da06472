"""TableRAG's benchmarks: ArcadeQA / BirdQA (upstream JSON-lines layout), their exact-match
rule, and synthetic TabFact (tables expanded to N×N). Fixtures: tests/eval/fixtures/<name>."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tablequest.eval.datasets import (
    DATASETS,
    QUESTION_FORMATS,
    DatasetError,
    load,
    reload_questions,
)
from tablequest.eval.datasets.tabfact_synth import expand_table, parse_size
from tablequest.eval.datasets.tablerag_eval import tablerag_answer_key, tablerag_match
from tablequest.eval.runner import answer_metrics

FIXTURES = Path(__file__).parent / "fixtures"
ARCADE = "data/arcade/test.jsonl"
ORDERS = f"{ARCADE}#amazon_seller_order_status_prediction_orders_data"


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_registered_with_question_formats() -> None:
    for name in ("arcadeqa", "birdqa", "tabfact-synth"):
        assert name in DATASETS and name in QUESTION_FORMATS
        assert (FIXTURES / name).is_dir()


# -- ArcadeQA / BirdQA -----------------------------------------------------------------------


def test_arcadeqa_questions_and_lazy_inline_tables() -> None:
    ds = load("arcadeqa", FIXTURES / "arcadeqa")
    assert ds.name == "arcadeqa" and ds.options == {"split": "test"}
    assert [q.id for q in ds.questions] == ["test-0", "test-1", "test-2", "test-3"]
    avg, city, count, north = ds.questions
    assert avg.question == "What is the average price for leather wallets?"
    assert city.answers == ["Sao Paulo"] and city.task == "tableqa"
    assert north.answers == ["Canada", "Norway"]  # a label holding a Python list
    assert north.extra["label"] == "['Canada', 'Norway']"
    assert avg.gold_table_ids == city.gold_table_ids == [ORDERS]  # table_id from the caption
    assert len(ds.table_refs) == 2 and ds.table_refs[ORDERS].table is None  # read lazily
    table = ds.table(ORDERS)
    assert table.title == "amazon seller order status prediction orders data"
    assert table.cells[0][:3] == ("order_id", "country", "payment_method")
    assert len(table.cells) == 6 and table.cells[5][3] == "Sao Paulo"
    countries = ds.table(count.gold_table_ids[0])
    assert countries.cells[1] == ("Brazil", "-14.2", "South America")  # numbers become text


def test_birdqa_table_ids_orig_ids_and_null_cells() -> None:
    ds = load("birdqa", FIXTURES / "birdqa")
    assert [q.extra["orig_id"] for q in ds.questions] == [17, 42, 903]
    assert ds.questions[0].gold_table_ids == ["data/bird/test.jsonl#california_schools-schools"]
    assert ds.questions[1].answers == ["Fresno High", "Roosevelt High"]
    schools = ds.table(ds.questions[0].gold_table_ids[0])
    assert schools.cells[4] == ("01611190130229", "Fresno", "Roosevelt High", "0", "")
    assert [k for k, _ in ds.tables()] == list(ds.table_refs)


def test_tablerag_repeated_table_id_with_another_table(tmp_path: Path) -> None:
    rows = [
        {"table_id": "t", "question": "q1", "label": 1, "table_text": [["a"], ["1"]]},
        {"table_id": "t", "question": "q2", "label": 2, "table_text": [["a"], ["1"]]},
        {"table_id": "t", "question": "q3", "label": 3, "table_text": [["b"], ["2"]]},
        {"statement": "s4", "question": "ignored", "label": 4, "table_caption": "my t",
         "table_text": [["c"], ["3"], ["4"]]},
    ]  # fmt: skip
    (tmp_path / "data" / "bird").mkdir(parents=True)
    write_jsonl(tmp_path / "data" / "bird" / "dev.jsonl", rows)
    ds = load("birdqa", tmp_path, split="dev")
    keys = [q.gold_table_ids[0] for q in ds.questions]
    prefix = "data/bird/dev.jsonl#"
    assert keys == [f"{prefix}t", f"{prefix}t", f"{prefix}t@3", f"{prefix}my_t"]
    assert ds.table(keys[2]).cells == (("b",), ("2",))
    assert ds.questions[3].question == "s4"  # upstream prefers `statement`
    assert [q.id for q in ds.questions] == ["dev-0", "dev-1", "dev-2", "dev-3"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"question": "q", "label": 1}', "expected an object with table_text"),
        ('{"question": "q", "label": 1, "table_text": [["a"]]}', "neither table_id nor"),
        ('{"table_id": "t", "label": 1, "table_text": [["a"]]}', r"missing field\(s\) question"),
        ('{"table_id": "t", "question": "q", "table_text": [["a"]]}', r"field\(s\) label"),
    ],
)
def test_tablerag_malformed_lines(copy: Callable[[str], Path], line: str, message: str) -> None:
    root = copy("arcadeqa")
    path = root / ARCADE
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"ArcadeQA test questions: .*test\.jsonl:5.*{message}"):
        load("arcadeqa", root)


def test_tablerag_missing_and_empty_files(copy: Callable[[str], Path]) -> None:
    with pytest.raises(DatasetError, match="BirdQA root: directory not found"):
        load("birdqa", FIXTURES / "absent")
    with pytest.raises(DatasetError, match=r"ArcadeQA dev questions: file not found.*dev\.jsonl"):
        load("arcadeqa", FIXTURES / "arcadeqa", split="dev")
    root = copy("birdqa")
    (root / "data/bird/test.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no questions"):
        load("birdqa", root)


def test_tablerag_table_file_changed_after_loading(copy: Callable[[str], Path]) -> None:
    root = copy("arcadeqa")
    ds = load("arcadeqa", root)
    (root / ARCADE).write_text('{"table_text": 3}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="table_text is not a list of rows"):
        ds.table(ORDERS)


def test_tablerag_custom_questions_file(tmp_path: Path) -> None:
    base = load("arcadeqa", FIXTURES / "arcadeqa")
    orders = json.loads(
        (FIXTURES / "arcadeqa" / ARCADE).read_text(encoding="utf-8").splitlines()[0]
    )
    mine = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {**orders, "question": "How many orders?", "label": 5},
            {"table_id": "new", "question": "q", "label": "x", "table_text": [["h"], ["x"]]},
        ],
    )
    ds = load("arcadeqa", FIXTURES / "arcadeqa", questions_file=mine)
    same, new = ds.questions
    assert same.gold_table_ids == [ORDERS] and same.id == "mine-0"
    assert new.gold_table_ids == [f"{mine.resolve().as_posix()}#new"]
    assert set(ds.table_refs) == set(base.table_refs) | {new.gold_table_ids[0]}
    assert ds.table(new.gold_table_ids[0]).cells == (("h",), ("x",))
    assert ds.questions_file == mine and "questions from" in ds.notes[0]
    assert [q.id for q in reload_questions(base, mine)] == ["mine-0", "mine-1"]
    assert new.gold_table_ids[0] in base.table_refs  # its table joined the loaded corpus


# -- TableRAG's exact match ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "label"),
    [
        ("3", 3),
        ("3.0", "3"),
        ("$12", 12),
        ("Norway, Canada", "['Canada', 'Norway']"),
        ("canada and norway", ["Canada", "Norway"]),
        (["Norway", "Canada", "Norway"], ["Canada", "Norway"]),
        ("2009-04-05", "2009-4-5"),
        ("Sao Paulo (SP)", "são paulo"),
        ("11.666666666666666", 11.666666666666666),
        ("2009", "2009-xx-xx"),
    ],
)
def test_tablerag_match_equal(prediction: str | list[str], label: object) -> None:
    assert tablerag_match(prediction, label)


@pytest.mark.parametrize(
    ("prediction", "label"),
    [
        ("11.67", 11.666666666666666),
        ("Canada", ["Canada", "Norway"]),
        ("1,000", 1000),  # a thousands separator is text, as upstream
        ("2009-04-06", "2009-04-05"),
        ("", "x"),
    ],
)
def test_tablerag_match_unequal(prediction: str, label: object) -> None:
    assert not tablerag_match(prediction, label)


def test_tablerag_answer_key_is_upstream_normalize_answer() -> None:
    assert tablerag_answer_key("B and a, a") == "a|b"
    assert tablerag_answer_key([3.0, "2020-01-05"]) == "2020,1,5|3"
    assert tablerag_answer_key("[not, python]") == "not|python"  # literal fails: inner text


def test_runner_scores_arcadeqa_with_tablerag_rule() -> None:
    north = load("arcadeqa", FIXTURES / "arcadeqa").questions[3]
    assert answer_metrics("arcadeqa", north, "Norway, Canada") == {"acc": 1.0}
    assert answer_metrics("arcadeqa", north, "Norway | Canada", ["Norway", "Canada"]) == {
        "acc": 1.0
    }
    assert answer_metrics("arcadeqa+siblings3", north, "Norway") == {"acc": 0.0}
    assert answer_metrics("birdqa", north, None) == {"acc": 0.0}


# -- Synthetic TabFact -----------------------------------------------------------------------


def test_parse_size() -> None:
    assert parse_size("50x50") == (50, 50) and parse_size("1kx1k") == (1000, 1000)
    assert parse_size("original") is None and parse_size("20x7") == (20, 7)
    for bad in ("50", "0x5", "big"):
        with pytest.raises(DatasetError, match="tabfact-synth: unknown split"):
            parse_size(bad)


def test_tabfact_synth_expands_and_keeps_original_content() -> None:
    ds = load("tabfact-synth", FIXTURES / "tabfact-synth", split="50x50", subset="test")
    assert [q.id for q in ds.questions] == ["2-100-1.html.csv#1", "1-200-3.html.csv#0"]
    q = ds.questions[0]
    assert q.gold_table_ids == ["data/all_csv/2-100-1.html.csv@50x50"]
    assert q.task == "fact_verification" and q.answers == ["false"]
    assert q.extra["synth_size"] == "50x50" and q.extra["label"] == 0
    table = ds.table(q.gold_table_ids[0])
    assert len(table.cells) == 51 and {len(r) for r in table.cells} == {50}
    assert table.cells[0][:3] == ("year", "team", "fans") and table.title == "season results"
    assert [r[:3] for r in table.cells[1:3]] == [
        ("2004", "alpha", "1,000"),
        ("2005", "beta", "900"),
    ]
    assert all(r[:3] == ("", "", "") for r in table.cells[3:])  # fill="blank"
    header = [h.lower() for h in table.cells[0]]
    assert len(set(header)) == 50 and "count 2" in header  # donor names, made unique
    donor_values = {"open", "final", "1000", "5"}
    assert {c for r in table.cells[1:] for c in r[3:]} <= donor_values


def test_tabfact_synth_is_deterministic_per_seed() -> None:
    def grid(seed: int) -> tuple[tuple[str, ...], ...]:
        ds = load("tabfact-synth", FIXTURES / "tabfact-synth", split="20x12", seed=seed)
        return ds.table(ds.questions[0].gold_table_ids[0]).cells

    assert grid(0) == grid(0)
    assert grid(0) != grid(1)


def test_tabfact_synth_sample_fill_and_original_split() -> None:
    ds = load("tabfact-synth", FIXTURES / "tabfact-synth", split="30x4", fill="sample")
    table = ds.table(ds.questions[0].gold_table_ids[0])
    assert table.cells[1:3] == (("open", "1000", *table.cells[1][2:]),
                                ("final", "5", *table.cells[2][2:]))  # fmt: skip
    assert {r[0] for r in table.cells[3:]} <= {"open", "final"}
    assert {r[1] for r in table.cells[3:]} <= {"1000", "5"}
    original = load("tabfact-synth", FIXTURES / "tabfact-synth", split="original")
    ref = original.table_refs[original.questions[0].gold_table_ids[0]]
    assert ref.key == "data/all_csv/1-200-3.html.csv" and ref.format == "tabfact_csv"
    assert original.table(ref.key).cells[1] == ("open", "1000")


def test_tabfact_synth_claims_per_table(copy: Callable[[str], Path]) -> None:
    one = load("tabfact-synth", FIXTURES / "tabfact-synth", subset="test")
    every = load("tabfact-synth", FIXTURES / "tabfact-synth", subset="test", claims_per_table=0)
    assert len(one.questions) == 2 and len(every.questions) == 3
    assert len({q.gold_table_ids[0] for q in one.questions}) == 2
    assert set(one.table_refs) == {q.gold_table_ids[0] for q in one.questions}
    with pytest.raises(DatasetError, match="claims_per_table must be >= 0"):
        load("tabfact-synth", FIXTURES / "tabfact-synth", claims_per_table=-1)
    with pytest.raises(DatasetError, match="fill must be"):
        load("tabfact-synth", FIXTURES / "tabfact-synth", fill="zeros")


def test_expand_table_edge_cases() -> None:
    rows = [["a", "b"], ["1", "2"], ["3"]]  # ragged row padded
    donors = (("other.csv", "a", ("x",)), ("self.csv", "z", ("y",)))
    grid = expand_table(rows, size=(1, 1), donors=donors, rng=random.Random(0))
    assert grid == [["a", "b"], ["1", "2"], ["3", ""]]  # larger than the target: kept
    grid = expand_table(rows, size=(3, 4), donors=donors, rng=random.Random(0), exclude="self.csv")
    assert grid[0] == ["a", "b", "a 2", "a 3"] and grid[3] == ["", "", "x", "x"]
    with pytest.raises(DatasetError, match=r"no donor columns outside 'other\.csv'"):
        expand_table(rows, size=(2, 3), donors=donors[:1], rng=random.Random(0),
                     exclude="other.csv")  # fmt: skip


def test_tabfact_synth_questions_file_and_cli_split(tmp_path: Path) -> None:
    from tablequest.cli.eval_run import load_dataset

    claims = {"2-100-1.html.csv": [["beta win in 2005"], [1], "season results"]}
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(claims), encoding="utf-8")
    ds = load("tabfact-synth", FIXTURES / "tabfact-synth", split="10x10", questions_file=path)
    assert [q.question for q in ds.questions] == ["beta win in 2005"]
    assert ds.questions_file == path and ds.options["split"] == "10x10"
    cli = load_dataset("tabfact-synth", FIXTURES / "tabfact-synth", "100x100")
    assert cli.options["split"] == "100x100"
    assert cli.questions[0].gold_table_ids == ["data/all_csv/1-200-3.html.csv@100x100"]
