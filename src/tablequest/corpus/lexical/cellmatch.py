"""Cell match: the question's phrases that are a whole cell of a table (``phrase-hybrid``).

A question names the row it is about in the words of one of its cells ("how many goals did
*Real Madrid* score"), and the cell is often a name that appears whole in few tables. So each
table's cells are normalized (`normalize`: lower case, every run of non-word characters one
space) and kept when they are names: not empty, at most `MAX_WORDS` words, and not a number
other than a four-digit one (a year names a row; "12" or "3.5" matches by chance). The
question's word n-grams (n = 1 … `MAX_WORDS`, normalized the same way) that equal a kept cell
of a table add that cell's idf to the table's score, each distinct n-gram once:

    cells(q, T) = Σ_{g ∈ ngrams(q), g a cell of T} idf(g),   idf(g) = ln(1 + N / df(g))

with N the tables of the store and df(g) those with a cell equal to g. Choices (ours), made on
WikiTableQuestions *training* questions only (`benchmarks/phrase_retrieval.py`): whole-cell
equality rather than words (BM25 has the words) and this idf, which keeps every match positive
while a cell that recurs in every table counts least.

The index lives in memory for the process (`Store.remember_index`, like a phrase BM25 index
that a read-only store cannot keep); it is built from the stored tables in one pass.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from tablequest.corpus.storage.store import Store

__all__ = ["CELL_INDEX", "MAX_WORDS", "CellIndex", "cell_index", "normalize"]

MAX_WORDS = 8
"""The longest cell (in words) that is kept, and so the longest question n-gram looked up."""

CELL_INDEX = "cells-v1"
"""The name under which a store keeps its cell index in memory."""

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_NUMBER = re.compile(r"[\d ]+")
_YEAR = re.compile(r"\d{4}")


def normalize(text: str) -> str:
    """Lower case, every run of non-word characters (and underscores) one space, trimmed."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def _is_name(cell: str) -> bool:
    """A normalized cell that names something: 1–MAX_WORDS words, not a bare non-year number."""
    if not cell or cell.count(" ") >= MAX_WORDS:
        return False
    return not _NUMBER.fullmatch(cell) or bool(_YEAR.fullmatch(cell))


def table_cells(cells: Iterable[Sequence[str]]) -> set[str]:
    """The distinct normalized name cells of one table's grid."""
    return {n for row in cells for c in row if _is_name(n := normalize(c))}


class CellIndex:
    """cell → (tables holding it, idf) over a corpus of `n` tables in a fixed order."""

    def __init__(self, ids: Sequence[str], postings: dict[str, list[int]]) -> None:
        self.ids = list(ids)
        n = len(self.ids)
        self.postings = {c: np.asarray(p, dtype=np.int64) for c, p in postings.items()}
        self.idf = {c: math.log1p(n / len(p)) for c, p in postings.items()}

    @classmethod
    def build(cls, ids: Sequence[str], grids: Iterable[Iterable[Sequence[str]]]) -> CellIndex:
        """The index of the tables `ids`, whose cells are `grids` (in the same order)."""
        return cls(ids, cls.postings_of(grids))

    @staticmethod
    def postings_of(grids: Iterable[Iterable[Sequence[str]]]) -> dict[str, list[int]]:
        """cell → positions (in `grids` order) of the tables that hold it."""
        postings: dict[str, list[int]] = {}
        for position, grid in enumerate(grids):
            for cell in table_cells(grid):
                postings.setdefault(cell, []).append(position)
        return postings

    def scores(self, question: str) -> np.ndarray[Any, Any]:
        """cells(q, T) of every table (in `ids` order); zeros when no n-gram is a cell."""
        out = np.zeros(len(self.ids), dtype=np.float64)
        for gram in question_grams(question):
            posting = self.postings.get(gram)
            if posting is not None:
                out[posting] += self.idf[gram]
        return out


def question_grams(question: str) -> set[str]:
    """The distinct word n-grams (1 … MAX_WORDS) of the normalized question."""
    words = normalize(question).split()
    return {
        " ".join(words[i : i + n])
        for n in range(1, MAX_WORDS + 1)
        for i in range(len(words) - n + 1)
    }


def cell_index(store: Store) -> CellIndex:
    """The store's cell index, built from its tables once per corpus and process."""
    cached = store.cached_index(CELL_INDEX)
    if isinstance(cached, CellIndex):
        return cached
    ids: list[str] = []

    def grids() -> Iterator[list[list[str]]]:  # streamed: one batch of tables in memory
        cursor = store.con.cursor()
        cursor.execute("SELECT table_id, data FROM tables ORDER BY table_id")
        while batch := cursor.fetchmany(512):
            for table_id, data in batch:
                ids.append(table_id)
                yield json.loads(data)["cells"]

    postings = CellIndex.postings_of(grids())
    index = CellIndex(ids, postings)
    store.remember_index(CELL_INDEX, index)
    return index
