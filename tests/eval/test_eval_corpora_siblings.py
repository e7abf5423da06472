"""Sibling hard negatives: seeded, look-alike, and exactly one answerable table per group."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import load
from tablequest.eval.siblings import (
    SiblingError,
    answer_rows,
    make_siblings,
    number_words,
    with_siblings,
)
from tablequest.table import Table

GOLD = Table.from_rows(
    [
        ["order_id", "customer", "amount", "order date"],
        *[
            [str(100 + i), f"Customer {i}", str(1000 + 37 * i), f"2006-02-{i + 1:02d}"]
            for i in range(20)
        ],
    ]
)


def test_number_words() -> None:
    assert number_words(0) == "zero"
    assert number_words(42) == "forty-two"
    assert number_words(100) == "one hundred"
    assert number_words(7169) == "seven thousand, one hundred and sixty-nine"
    assert number_words(2006) == "two thousand and six"
    assert number_words(3_000_000) == "three million"
    with pytest.raises(ValueError, match=r"0\.\.999,999,999"):
        number_words(-1)


def test_answer_rows_match_normalized_cells() -> None:
    assert answer_rows(GOLD, ["customer 3"]) == [3]
    assert answer_rows(GOLD, ["1,111"]) == [3]  # thousands separators ignored
    assert answer_rows(GOLD, ["nobody"]) == []


def test_siblings_are_seeded_and_deterministic() -> None:
    a = make_siblings(GOLD, [3], n=4, seed=1)
    b = make_siblings(GOLD, [3], n=4, seed=1)
    c = make_siblings(GOLD, [3], n=4, seed=2)
    assert [s.table for s in a] == [s.table for s in b]
    assert [s.table for s in a] != [s.table for s in c]
    assert len(a) == 4 and all(s.kinds for s in a)


def test_exactly_one_table_stays_answerable() -> None:
    siblings = make_siblings(GOLD, [3], n=6, seed=0)
    gold_text = "\n".join(" ".join(r) for r in GOLD.cells)
    assert "Customer 3" in gold_text
    for sib in siblings:
        assert 3 not in sib.table.row_ids and sib.removed_rows == (3,)
        assert all(cell != "Customer 3" for row in sib.table.cells for cell in row)
        assert set(sib.table.row_ids) <= set(GOLD.row_ids)  # provenance is kept
        assert sib.table.n_rows >= 17  # look-alike: most rows survive
        assert sib.table != GOLD


@pytest.mark.parametrize("kind", ["rename", "reformat", "resample"])
def test_each_perturbation(kind: str) -> None:
    for sib in make_siblings(GOLD, [0], n=3, seed=5, kinds=[kind]):
        assert sib.kinds == (kind,)
        if kind == "rename":
            assert sib.renamed and sib.table.cells[0] != GOLD.cells[0]
            assert all(GOLD.cells[0][GOLD.cells[0].index(old)] == old for old in sib.renamed)
        elif kind == "reformat":
            assert sib.table.cells[0] == GOLD.cells[0]
            assert sib.reformatted
            changed = [c for c in GOLD.columns if c in sib.reformatted]
            assert changed
            j = GOLD.columns.index(changed[0])
            before = {GOLD.body[GOLD.row_ids.index(r)][j] for r in sib.table.row_ids}
            after = {row[j] for row in sib.table.body}
            assert before.isdisjoint(after)
        else:
            assert list(sib.table.row_ids) != sorted(sib.table.row_ids) or (
                sib.table.n_rows < GOLD.n_rows - 1
            )


def test_value_formats_cover_numbers_and_dates() -> None:
    seen: set[str] = set()
    for seed in range(12):
        for sib in make_siblings(GOLD, [0], n=2, seed=seed, kinds=["reformat"]):
            seen.update(sib.table.body[0])
    text = " ".join(seen)
    assert "×10^+03" in text  # scientific
    assert "thousand" in text  # words
    assert "MMVI-II-" in text  # roman dates
    assert any("/02/2006" in v for v in seen)
    assert any(v.startswith("Feb.") for v in seen)


def test_bad_requests() -> None:
    with pytest.raises(SiblingError, match="no answer rows"):
        make_siblings(GOLD, [])
    with pytest.raises(SiblingError, match="not body row ids"):
        make_siblings(GOLD, [99])
    with pytest.raises(SiblingError, match="unknown sibling kinds"):
        make_siblings(GOLD, [1], kinds=["shuffle"])
    with pytest.raises(SiblingError, match="n must be"):
        make_siblings(GOLD, [1], n=0)


def test_with_siblings_builds_groups(evalrun_wtq: Path, evalrun_tcr: Path) -> None:
    wtq = load("wtq", evalrun_wtq)
    grown = with_siblings(wtq, n=2, seed=0)
    assert grown.name == "wtq+siblings2"
    kept = {q.id for q in grown.questions}
    assert "nu-1" in kept and len(kept) < len(wtq.questions)  # unlocatable answers left out
    assert any("left out" in note for note in grown.notes)
    q = next(q for q in grown.questions if q.id == "nu-1")
    assert q.group[0] == "csv/200-csv/1.csv" and len(q.group) == 3
    sib = grown.table(q.group[1])
    assert all("415,367" not in row for row in sib.cells)
    # siblings are per gold table: nu-7 (Oslo) shares them, and they lack its answer too
    q7 = next(q for q in grown.questions if q.id == "nu-7")
    assert q7.group == q.group
    for key in q.group[1:]:
        assert not any(cell in ("Zurich", "Oslo") for row in grown.table(key).cells for cell in row)
    golds = {q.gold_table_ids[0] for q in grown.questions}
    corpus = build_corpus(grown, "mixed", in_memory=True)
    assert len(corpus.store) == 6 + 2 * len(golds) and len(golds) < len(kept)

    tcr = load("tcrbench", evalrun_tcr)
    grown_tcr = with_siblings(tcr, n=1, questions=tcr.questions[:1])
    (q0,) = grown_tcr.questions
    assert q0.group[:3] == tcr.questions[0].group and len(q0.group) == 4
    assert 0 not in grown_tcr.table(q0.group[-1]).row_ids  # answer_index row removed


def test_with_siblings_leaves_out_questions_that_would_empty_the_siblings(
    evalrun_wtq: Path,
) -> None:
    both = load("wtq", evalrun_wtq, split="all")  # nu-1, nu-7 and nt-2 ask about all 3 cities
    on_cities = [q for q in both.questions if q.gold_table_ids == ["csv/200-csv/1.csv"]]
    assert [q.id for q in on_cities] == ["nu-1", "nu-7", "nt-2"]
    grown = with_siblings(both, n=1, questions=on_cities)
    assert [q.id for q in grown.questions] == ["nu-1", "nu-7"]
    assert "1 left out" in grown.notes[-1]
    (sibling,) = grown.questions[0].group[1:]
    assert [row[0] for row in grown.table(sibling).body] == ["Utrecht"]
