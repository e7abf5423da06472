"""`corpus.rowmatch`: the fast whole-word route gives the rows of the line-by-line route."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablequest.corpus.lexical.rank import question_patterns
from tablequest.corpus.lexical.rowmatch import TableLines, rows_matching, table_lines
from tablequest.table import Table
from tablequest.table.patterns import PatternDropped, matching_lines

TABLES = [
    Table.from_rows(
        [["Name", "Notes"], ["Straße", "ſtraße | x"], ["İstanbul", "K-line (Kelvin)"],
         ["naïve café", "two\nlines"], ["a|b", "C++ and c#"], ["O'Brien", "3.14, 2,000"],
         ["ﬁsh", "STRASSE"], ["ǅemal", "ΣΊΣΥΦΟΣ σίσυφος"]]
    ),
    Table.from_rows([["Lake", "Depth"], ["Quillsee", "61"], ["quillsee-2", "61m"],
                     ["QUILLSEE", "—"], ["x", "quillseequillsee"],
                     ["depth_2020", "Depth 2020 (x_y)"], ["ΣΊΣΥΦΟΣ", "Straße"]]),
    Table.from_rows([["Only"]]),
]  # fmt: skip

WORDS = [
    "straße",
    "strasse",
    "istanbul",
    "i̇stanbul",
    "kelvin",
    "k",
    "line",
    "naïve",
    "café",
    "lines",
    "two",
    "b",
    "c",
    "brien",
    "o'brien",
    "3.14",
    "2,000",
    "quillsee",
    "61",
    "m",
    "2",
    "fish",
    "ﬁsh",
    "ǆemal",
    "σίσυφος",
    "sisyphus",
    "x",
    "depth",
    "2020",
    "depth_2020",
    "y",
]


def naive(table: Table, patterns: list[str]) -> dict[str, list[int]]:
    """Every pattern line by line through the bounded matcher (the reference)."""
    lines = [" | ".join(row) for row in table.body]
    out: dict[str, list[int]] = {}
    for p in dict.fromkeys(patterns):
        try:
            rows = [table.row_ids[i] for i in matching_lines(p, lines)]
        except PatternDropped:
            continue
        if rows:
            out[p] = rows
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=6), max_size=6))
def test_rows_matching_equals_the_line_by_line_route(words: list[str]) -> None:
    patterns = question_patterns(" ".join(words))
    for table in TABLES:
        data = table_lines(table)
        assert rows_matching(data, patterns) == naive(table, patterns)
        odd = [*patterns, r"\d{2}", "e\\s", "(", "quill+see"]  # other regexes, an invalid one
        assert rows_matching(data, odd) == naive(table, odd)


def test_known_rows_and_limit() -> None:
    data = table_lines(TABLES[1])
    got = rows_matching(data, [r"\bquillsee\b", r"\b61\b", r"\bnothing\b"])
    assert got == {r"\bquillsee\b": [0, 1, 2], r"\b61\b": [0]}
    assert rows_matching(data, [r"\bquillsee\b"], limit=2) == {r"\bquillsee\b": [0, 1]}
    assert rows_matching(table_lines(TABLES[2]), [r"\bonly\b"]) == {}


@pytest.mark.parametrize("word", ["straße", "ſtraße", "kelvin", "istanbul"])
def test_case_folding_traps(word: str) -> None:
    patterns = question_patterns(word)
    assert rows_matching(table_lines(TABLES[0]), patterns) == naive(TABLES[0], patterns)


class _HeldLines(list[str]):
    """Row lines whose iteration waits for `go`: a table whose lines take long to make."""

    def __init__(self, lines: list[str], started: threading.Event, go: threading.Event) -> None:
        super().__init__(lines)
        self.started, self.go = started, go

    def __iter__(self) -> Iterator[str]:
        self.started.set()
        assert self.go.wait(30)
        return super().__iter__()


def test_making_one_tables_lines_never_waits_for_anothers() -> None:
    """`functools.cached_property` on Python 3.11 computes under one lock for every instance
    of a class: a search on the server's event loop waited for a thread making a big table's
    lines (`corpus.lexical.lazyattr`)."""
    started, go = threading.Event(), threading.Event()
    held = TableLines(_HeldLines(["a big table"], started, go), (0,))
    small = table_lines(TABLES[1])
    worker = threading.Thread(target=lambda: held.word_rows("big", r"\bbig\b"))
    worker.start()
    try:
        assert started.wait(30)
        done = threading.Thread(target=lambda: small.word_rows("quillsee", r"\bquillsee\b"))
        done.start()
        done.join(10)
        assert not done.is_alive(), "the small table waited for the big one"
        assert list(small.word_rows("quillsee", r"\bquillsee\b")) == [0, 1, 2]
    finally:
        go.set()
        worker.join(30)
    assert list(held.word_rows("big", r"\bbig\b")) == [0]
