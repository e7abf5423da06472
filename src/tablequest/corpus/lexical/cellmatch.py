"""Cell match: the question's phrases that are a whole cell of a table (``phrase-hybrid``).

A question names the row it is about in the words of one of its cells ("how many goals did
*Real Madrid* score"), and the cell is often a name that appears whole in few tables. So each
table's cells are normalized (`normalize`: compatibility forms folded, accents and other
marks dropped, case folded, every run of non-word characters one space) and kept when they
are names: 1 … `MAX_WORDS` words, not only stop words ("a", "the"), and not a number other
than a year (1000–2099; "12" or "3.5" matches by chance). The question's word n-grams
(n = 1 … `MAX_WORDS`, normalized the same way) that equal a kept cell of a table add that
cell's idf to the table's score, each distinct n-gram once:

    cells(q, T) = Σ_{g ∈ ngrams(q), g a cell of T} idf(g),   idf(g) = ln(1 + N / df(g))

with N the tables of the store and df(g) those with a cell equal to g (the sum is taken in
sorted n-gram order, so equal inputs give bit-equal scores in every process). Over a sharded
corpus N and df are summed over the shards first (`corpus.retrieval.shardphrase`), and each
shard scores its tables with those idfs: the same numbers as one store. Choices (ours),
made on WikiTableQuestions *training* questions only (`benchmarks/phrase_retrieval.py`):
whole-cell equality rather than words (BM25 has the words) and this idf, which keeps every
match positive while a cell that recurs in every table counts least. Words are what
separates n-grams: a question in a script written without spaces (Chinese, Thai) matches a
cell only where it is the whole question, as in BM25's tokens.

The index lives in memory for the process (`Store.remember_index`), built from the stored
grids in one pass; its postings are one array (cell → a slice), ~0.6 MB per 100k distinct
cells beside the cell strings. A writable store also keeps it (`CELL_INDEX`, keyed by the
corpus fingerprint like the BM25 indexes): a cold evaluation builds it with the corpus while
the vectors are encoded, and loading it back (~0.05 s on WTQ's 102,604 cells) replaces a
build of ~1 s at the first question (issue 38).
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tablequest.corpus.lexical.words import STOPWORDS
from tablequest.corpus.storage.store import Store, StoreWriteError
from tablequest.corpus.storage.views import stored_tables
from tablequest.table import index_cell

__all__ = [
    "CELL_INDEX",
    "MAX_WORDS",
    "CellIndex",
    "cell_idf",
    "cell_index",
    "normalize",
    "question_grams",
]

MAX_WORDS = 8
"""The longest cell (in words) that is kept, and so the longest question n-gram looked up."""

CELL_INDEX = "cells-v1"
"""The name under which a store keeps its cell index in memory."""

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_NUMBER = re.compile(r"[\d ]+")
_YEAR = re.compile(r"1\d{3}|20\d{2}")


def normalize(text: str) -> str:
    """Compatibility forms folded and marks dropped (NFKD: "İstanbul", "Réal" → "istanbul",
    "real"), case folded, every run of non-word characters (and underscores) one space."""
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in decomposed if not unicodedata.category(ch).startswith("M"))
    return _NON_WORD.sub(" ", text.casefold()).strip()


def _is_name(cell: str) -> bool:
    """A normalized cell that names something: 1–MAX_WORDS words, not only stop words, not a
    bare number unless a year."""
    if not cell or cell.count(" ") >= MAX_WORDS:
        return False
    if all(word in STOPWORDS for word in cell.split()):
        return False
    return not _NUMBER.fullmatch(cell) or bool(_YEAR.fullmatch(cell))


def table_cells(cells: Iterable[Sequence[str]]) -> set[str]:
    """The distinct normalized name cells of one table's grid (each distinct raw cell
    normalized once: columns repeat their values)."""
    raw = {c for row in cells for c in row}
    return {n for c in raw if _is_name(n := normalize(index_cell(c)))}


class CellIndex:
    """cell → (tables holding it, idf) over a corpus of `ids` tables in a fixed order.

    Postings are one int32 array: cell i's tables are ``tables[starts[i]:starts[i + 1]]``.
    """

    def __init__(self, ids: Sequence[str], postings: dict[str, list[int]]) -> None:
        self.ids = list(ids)
        n = len(self.ids)
        self.cell_ids = {cell: i for i, cell in enumerate(postings)}
        lengths = np.fromiter((len(p) for p in postings.values()), np.int64, len(postings))
        self.starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.tables = np.fromiter(
            (t for p in postings.values() for t in p), np.int32, int(lengths.sum())
        )
        self.idf = np.fromiter((cell_idf(n, int(d)) for d in lengths), np.float64, len(lengths))

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

    def to_blob(self) -> bytes:
        """The index as one npz blob: its cells (newline-joined; a normalized cell has no
        newline), postings and corpus size."""
        out = io.BytesIO()
        cells = np.frombuffer("\n".join(self.cell_ids).encode(), dtype=np.uint8)
        n = np.array([len(self.ids)], dtype=np.int64)
        np.savez(out, cells=cells, starts=self.starts, tables=self.tables, n=n)
        return out.getvalue()

    @classmethod
    def from_blob(cls, ids: Sequence[str], blob: bytes) -> CellIndex:
        """The index `to_blob` saved for the tables `ids` (ValueError when it is for another
        corpus; KeyError / OSError when unreadable)."""
        with np.load(io.BytesIO(blob), allow_pickle=False) as packed:
            raw = packed["cells"].tobytes().decode()
            starts, tables, n = packed["starts"], packed["tables"], int(packed["n"][0])
        cells = raw.split("\n") if raw else []
        if n != len(ids) or len(starts) != len(cells) + 1:
            raise ValueError("the saved cell index is for another corpus")
        index = cls(ids, {})
        index.cell_ids = {cell: i for i, cell in enumerate(cells)}
        index.starts, index.tables = starts.astype(np.int64), tables.astype(np.int32)
        lengths = np.diff(index.starts)
        index.idf = np.fromiter((cell_idf(n, int(d)) for d in lengths), np.float64, len(cells))
        return index

    def df(self, cell: str) -> int:
        """How many tables hold `cell` (normalized) as a whole cell."""
        i = self.cell_ids.get(cell)
        return 0 if i is None else int(self.starts[i + 1] - self.starts[i])

    def scores(self, question: str, idf: Mapping[str, float] | None = None) -> np.ndarray[Any, Any]:
        """cells(q, T) of every table (in `ids` order); zeros when no n-gram is a cell.

        `idf`: each n-gram's idf over a larger corpus this index is one shard of (default:
        this index's own), so a shard scores its tables as the whole corpus would.
        """
        out = np.zeros(len(self.ids), dtype=np.float64)
        for gram in sorted(question_grams(question)):  # a fixed order: bit-equal sums
            i = self.cell_ids.get(gram)
            if i is not None:
                weight = self.idf[i] if idf is None else idf[gram]
                out[self.tables[self.starts[i] : self.starts[i + 1]]] += weight
        return out


def cell_idf(n_tables: int, df: int) -> float:
    """ln(1 + N / df), one value at a time (`math.log1p`, so the same N and df give the same
    bits whether a whole store or a shard merge computes it)."""
    return math.log1p(n_tables / max(df, 1))


def question_grams(question: str) -> set[str]:
    """The distinct word n-grams (1 … MAX_WORDS) of the normalized question."""
    words = normalize(question).split()
    return {
        " ".join(words[i : i + n])
        for n in range(1, MAX_WORDS + 1)
        for i in range(len(words) - n + 1)
    }


def cell_index(store: Store) -> CellIndex:
    """The store's cell index: remembered for the process, loaded from the store, or built
    from its tables (and kept by a writable store)."""
    cached = store.cached_index(CELL_INDEX)
    if isinstance(cached, CellIndex):
        return cached
    fingerprint = store.fingerprint()
    index = _saved(store, fingerprint)
    if index is None:
        index = _built(store)
        with contextlib.suppress(StoreWriteError):  # then it lives in memory only
            store.save_blob(CELL_INDEX, fingerprint, index.to_blob())  # no-op when read-only
    store.remember_index(CELL_INDEX, index)
    return index


def _saved(store: Store, fingerprint: str) -> CellIndex | None:
    blob = store.load_blob(CELL_INDEX, fingerprint)
    if blob is None:
        return None
    try:
        return CellIndex.from_blob(store.table_ids(), blob)
    except (ValueError, KeyError, OSError):  # another layout or corpus: rebuild
        return None


def _built(store: Store) -> CellIndex:
    ids: list[str] = []

    def grids() -> Iterator[list[list[str]]]:  # streamed: one batch of tables in memory
        for table_id, _title, data in stored_tables(store):
            ids.append(table_id)
            yield data["cells"]

    postings = CellIndex.postings_of(grids())
    return CellIndex(ids, postings)
