"""Retrieval over a Store: grep (Eq. 1), BM25 and LLM-free question patterns.

Indexes (grep and BM25) are built by `ingest` (`ensure_indexes`) and persisted in the store
keyed by the corpus fingerprint, so the commands that open a store read-only (search, ask,
eval) only load them. One that is missing or stale (an ingest that was stopped, a store from
an older version) is built on first use: persisted when the store is writable, otherwise
kept in memory for the process with a note (`Store.notes` and one line on stderr). Either
way an index is kept in the Store object for the rest of the process.

BM25 (ours where unstated): bm25s with its default Lucene variant (k1=1.5, b=0.75), English
stop words, lower-cased word tokens over the table's title, headers and cells.

Compound words (issue 39, `tablequest.corpus.lexical.compound`): both indexes split
snake_case and camelCase tokens (``population_2020``, ``capitalCity``) into their words and
keep the whole token too. The grep index is built over each table's text plus one line of
those parts (the store's text is unchanged); BM25's `tokenize` adds the parts.

Building an index of `STAGE_MIN_TABLES` tables or more is announced first ("building the
grep index (N tables)…", `tablequest.corpus.dense.encoder_base.announce_stage`), so a command on a
big store says what it is doing; smaller builds take well under a second and stay quiet.
"""

from __future__ import annotations

import io
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tablequest.corpus.dense.encoder_base import announce_stage
from tablequest.corpus.lexical.compound import compound_tokens, searchable_text
from tablequest.corpus.lexical.grep import GrepIndex
from tablequest.corpus.lexical.rowmatch import rows_matching, table_lines
from tablequest.corpus.lexical.words import STOPWORDS
from tablequest.corpus.storage.store import Hit, Store, StoreWriteError
from tablequest.errors import BadValue
from tablequest.table import DroppedPattern, Table

GREP = "grep-v3"  # v3: built over `searchable_text` (compound words split)
BM25 = "bm25-v2"  # v2: `tokenize` adds compound words' tokens
_LABEL = {GREP: "grep", BM25: "BM25"}
STAGE_MIN_TABLES = 2000


def _announce_build(name: str, tables: int) -> None:
    if tables >= STAGE_MIN_TABLES:
        announce_stage(f"building the {_LABEL.get(name, name)} index ({tables:,} tables)…")


def grep_index(store: Store, *, strict: bool = False) -> GrepIndex:
    """The store's grep index, loaded or built for the current corpus.

    A missing or stale index is built and persisted. Where it cannot be persisted (a
    read-only store, or a failed write unless `strict`) it is kept in memory for this
    process and a note says so (`Store.notes`, and one line on stderr).

    Raises:
        StoreWriteError: with `strict`, the built index could not be saved.
    """
    cached = store.cached_index(GREP)
    if isinstance(cached, GrepIndex):
        return cached
    ids, stored = store.column("text")
    texts = [searchable_text(t) for t in stored]  # compound words split (`compound`)
    fp = store.fingerprint()
    blob = store.load_blob(GREP, fp)
    index = None
    if blob is not None:
        try:
            index = GrepIndex.from_blob(ids, texts, blob)
        except (ValueError, KeyError, OSError):  # another layout: rebuild and replace
            index = None
    if index is None:
        _announce_build(GREP, len(ids))
        index = GrepIndex.build(ids, texts)
        _persist(store, GREP, fp, index.arrays_blob, strict=strict)
    store.remember_index(GREP, index)
    return index


def ensure_indexes(store: Store, *, strict: bool = False) -> list[str]:
    """Build and persist the grep and BM25 indexes the store lacks; return their names.

    Raises:
        StoreWriteError: with `strict`, an index could not be saved.
    """
    built = missing_indexes(store)
    for name in built:
        (grep_index if name == GREP else bm25_index)(store, strict=strict)
    return built


def missing_indexes(store: Store) -> list[str]:
    """The indexes (GREP, BM25) not persisted for the store's current corpus."""
    if len(store) == 0:
        return []
    fp = store.fingerprint()
    return [name for name in (GREP, BM25) if not store.has_blob(name, fp)]


def _persist(
    store: Store, name: str, fingerprint: str, blob: Callable[[], bytes], *, strict: bool
) -> None:
    """Save the index `blob()` makes (serialized only when the store can keep it)."""
    reason = "the store is open read-only"
    if not store.read_only:
        try:
            store.save_blob(name, fingerprint, blob())
            return
        except StoreWriteError as exc:
            if strict:
                raise
            reason = str(exc)
    if store.path is None:
        return
    if name not in _LABEL and reason == "the store is open read-only":
        return  # an index ingest never builds (phrase BM25): kept in memory, nothing to fix
    message = (
        f"note: store {store.name!r} has no up-to-date {_LABEL.get(name, name)} index "
        f"({reason}); built it in memory for this run. "
        + (
            "Run `tablequest ingest` on it again to save it"
            if name in _LABEL
            else "The next ranking that can write the store saves it"
        )
    )
    if message not in store.notes:
        store.note(message)
        print(f"tablequest: {message}", file=sys.stderr)


class IndexTables(Protocol):
    """What `matched_rows` reads: a store or any corpus (`corpus.storage.corpus.Corpus`)."""

    def index_table(self, table_id: str) -> Table: ...


def matched_rows(
    store: IndexTables, table_id: str, patterns: Sequence[str], *, limit: int | None = None
) -> dict[str, list[int]]:
    """Body row ids each pattern matches in a table (cells joined by ' | '; the algorithm is
    `corpus.rowmatch.rows_matching`).

    A pattern that runs past its time budget (`table.patterns`) shows no rows. A streamed
    table is matched in the rows its index holds (`Store.index_table`).
    """
    return rows_matching(table_lines(store.index_table(table_id)), patterns, limit=limit)


def grep_search(
    store: Store, patterns: Sequence[str], k: int, *, rows: bool = True
) -> tuple[list[Hit], tuple[DroppedPattern, ...]]:
    """Top-k tables by Eq. 1 (each with the rows each pattern matched), and the patterns
    dropped for running past their time budget (Eq. 1 is then over the patterns kept)."""
    index = grep_index(store)
    ranking = index.rank(patterns, k)
    kept = [p for p in patterns if p not in {d.pattern for d in ranking.dropped}]
    hits = [
        Hit(index.ids[i], score, matched_rows(store, index.ids[i], kept) if rows else {})
        for i, score in ranking.hits
    ]
    return hits, ranking.dropped


def grep_rank(store: Store, patterns: Sequence[str], k: int, *, rows: bool = True) -> list[Hit]:
    """Top-k tables by Eq. 1, each with the rows each pattern matched (`grep_search` also
    says which patterns were dropped)."""
    return grep_search(store, patterns, k, rows=rows)[0]


_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)


def question_patterns(question: str) -> list[str]:
    """LLM-free grep patterns: the question's content words as whole words, in order.

    Choice (ours): words are matched whole (``\\bword\\b``) so that "team" does not hit
    "steam"; stop words and question operators ("last", "highest") are dropped.
    """
    words = [w.lower() for w in _WORD.findall(question)]
    content = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return [rf"\b{re.escape(w)}\b" for w in dict.fromkeys(content)]


def word_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens without English stop words (``_`` splits, case does not)."""
    return [[w for w in _WORD.findall(t.lower()) if w not in STOPWORDS] for t in texts]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """BM25's tokens: `word_tokens`, then what compound words add (`compound_tokens`:
    ``population_2020`` whole, ``capitalCity`` as ``capital`` and ``city``)."""
    return [
        words + [w for w in compound_tokens(t) if w not in STOPWORDS]
        for words, t in zip(word_tokens(texts), texts, strict=True)
    ]


Tokenizer = Callable[[Sequence[str]], list[list[str]]]


@dataclass(frozen=True)
class BM25Kind:
    """One BM25 index of a store: its cache name, how texts (`tokens`) and questions
    (`query`; None: `tokens` too) become tokens, bm25s's parameters (empty: its
    defaults), and which text of each table it indexes (`source`: (ids, texts) in
    table-id order; None: the store's ``plain`` column)."""

    name: str
    tokens: Tokenizer
    params: tuple[tuple[str, float], ...] = ()
    query: Tokenizer | None = None
    source: Callable[[Store], tuple[list[str], list[str]]] | None = None

    @property
    def query_tokens(self) -> Tokenizer:
        return self.query or self.tokens


PLAIN_BM25 = BM25Kind(BM25, tokenize)
"""TableSeek's BM25 baseline: word tokens, bm25s's defaults (``bm25``, ``hybrid``)."""


class BM25Index:
    """bm25s over table plain text, with ids; `tokens` makes a question's tokens
    (`tokenize` by default)."""

    def __init__(self, ids: Sequence[str], model: Any, tokens: Tokenizer | None = None) -> None:
        self.ids = list(ids)
        self.model = model
        self.tokens: Tokenizer = tokens or tokenize

    @classmethod
    def build(
        cls, ids: Sequence[str], texts: Sequence[str], kind: BM25Kind | None = None
    ) -> BM25Index:
        import bm25s

        kind = kind or PLAIN_BM25
        model = bm25s.BM25(**dict(kind.params))
        model.index(kind.tokens(texts), show_progress=False)
        return cls(ids, model, kind.query_tokens)

    def to_blob(self) -> bytes:
        """The model's files (bm25s `save`) packed into one npz blob."""
        with tempfile.TemporaryDirectory() as tmp:
            self.model.save(tmp, show_progress=False)
            files: dict[str, Any] = {
                f.name: np.frombuffer(f.read_bytes(), dtype=np.uint8) for f in Path(tmp).iterdir()
            }
        out = io.BytesIO()
        np.savez(out, **files)
        return out.getvalue()

    @classmethod
    def from_blob(cls, ids: Sequence[str], blob: bytes, kind: BM25Kind | None = None) -> BM25Index:
        """The index saved by `to_blob` (ValueError / OSError / KeyError when unreadable)."""
        import bm25s

        with (
            np.load(io.BytesIO(blob), allow_pickle=False) as packed,
            tempfile.TemporaryDirectory() as tmp,
        ):
            for name in packed.files:
                (Path(tmp) / name).write_bytes(packed[name].tobytes())
            model = bm25s.BM25.load(tmp, show_progress=False)
        if int(model.scores["num_docs"]) != len(ids):
            raise ValueError("the saved BM25 index is for another corpus")
        return cls(ids, model, (kind or PLAIN_BM25).query_tokens)

    def scores(self, query: str) -> np.ndarray[Any, Any]:
        """BM25 score of every table (in `ids` order); zeros when the query has no token."""
        tokens = self.tokens([query])[0]
        if not tokens or not self.ids:
            return np.zeros(len(self.ids), dtype=np.float64)
        return np.asarray(self.model.get_scores(tokens), dtype=np.float64)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        if not self.tokens([query])[0] or not self.ids:
            return []
        return top_scores(self.scores(query), k)


def top_scores(scores: np.ndarray[Any, Any], k: int) -> list[tuple[int, float]]:
    """Indices of the k highest positive scores, ties by position (table-id order)."""
    k = min(k, scores.size)
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k]
    # argpartition picks any of the scores tied with the k-th: take them all, then cut
    tied = np.flatnonzero(scores >= scores[part].min())
    order = tied[np.lexsort((tied, -scores[tied]))][:k]
    return [(int(i), float(scores[i])) for i in order if scores[i] > 0]


def bm25_index(store: Store, *, strict: bool = False, kind: BM25Kind | None = None) -> BM25Index:
    """The store's BM25 index of `kind` (plain BM25 by default), loaded or built for the
    current corpus (see `grep_index`)."""
    kind = kind or PLAIN_BM25
    cached = store.cached_index(kind.name)
    if isinstance(cached, BM25Index):
        return cached
    fp = store.fingerprint()
    blob = store.load_blob(kind.name, fp)
    index = None
    if blob is not None:
        try:
            index = BM25Index.from_blob(store.table_ids(), blob, kind)
        except (ValueError, KeyError, OSError):  # another layout or version: rebuild
            index = None
    if index is None:
        ids, texts = kind.source(store) if kind.source else store.column("plain")
        _announce_build(kind.name, len(ids))
        index = BM25Index.build(ids, texts, kind)
        _persist(store, kind.name, fp, index.to_blob, strict=strict)
    store.remember_index(kind.name, index)
    return index


def bm25_rank(store: Store, query: str, k: int, *, rows: bool = True) -> list[Hit]:
    """Top-k tables by BM25, with the rows matching the question's content words."""
    index = bm25_index(store)
    patterns = question_patterns(query) if rows else []
    return [
        Hit(index.ids[i], score, matched_rows(store, index.ids[i], patterns) if rows else {})
        for i, score in index.search(query, k)
    ]


RRF_K = 60  # reciprocal-rank-fusion constant of Cormack et al. (2009); not tuned here


def fuse(rankings: Sequence[Sequence[str]], k: int) -> list[Hit]:
    """Reciprocal rank fusion: score(t) = Σ 1 / (RRF_K + rank), ties by first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, tid in enumerate(ranking, start=1):
            scores[tid] = scores.get(tid, 0.0) + 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda t: -scores[t])
    return [Hit(t, scores[t]) for t in order[:k]]


HYBRID_ALPHA = 0.7  # weight of the dense cosine in score fusion; see hybrid_rank


def hybrid_rank(
    store: Store,
    query: str,
    k: int,
    *,
    encoder: Any,
    fusion: str = "score",
    alpha: float = HYBRID_ALPHA,
    depth: int = 100,
) -> list[Hit]:
    """BM25 and dense retrieval fused.

    ``fusion="score"`` (default): every table scores ``(1 − α)·bm25 / max(bm25) + α·cosine``
    (BM25 divided by the query's best BM25 score, so it lies in [0, 1] as cosines mostly do).
    ``fusion="rrf"``: reciprocal rank fusion (`fuse`) of the two top-`depth` lists.

    Choice (ours), made on WikiTableQuestions *training* questions only (never the test
    questions): score fusion with α = 0.7. On a 2,000-question training sample R@1 was flat for
    α in 0.6–0.75 and fell outside it; on the first 2,000 training questions α = 0.7 gives R@1
    0.454 against 0.404 for BM25 alone and 0.369 for equal-weight RRF (k = 60), which lets
    the weaker dense ranking pull the good BM25 top-1 down (docs/results.md).
    """
    from tablequest.corpus.dense.index import corpus_vectors, cosine_scores, dense_rank

    if fusion == "rrf":
        lexical = [h.table_id for h in bm25_rank(store, query, depth, rows=False)]
        semantic = [h.table_id for h in dense_rank(store, query, depth, encoder)]
        return fuse([lexical, semantic], k)
    if fusion != "score":
        raise BadValue(f"unknown fusion {fusion!r}; use score or rrf")
    if not 0.0 <= alpha <= 1.0:
        raise BadValue(f"alpha must be in [0, 1], got {alpha}")
    index = bm25_index(store)
    ids, matrix = corpus_vectors(store, encoder)
    if not ids or k <= 0:
        return []
    lexical_scores = index.scores(query)
    if index.ids != ids:  # both are in table-id order; realign defensively
        position = {tid: i for i, tid in enumerate(index.ids)}
        lexical_scores = lexical_scores[[position[t] for t in ids]]
    best = float(lexical_scores.max()) if lexical_scores.size else 0.0
    lexical_part = lexical_scores / best if best > 0 else np.zeros(len(ids))
    semantic_part = cosine_scores(matrix, encoder.encode([query])[0])
    fused = (1.0 - alpha) * lexical_part + alpha * semantic_part.astype(np.float64)
    order = np.lexsort((np.arange(len(ids)), -fused))[:k]
    return [Hit(ids[i], float(fused[i])) for i in order]
