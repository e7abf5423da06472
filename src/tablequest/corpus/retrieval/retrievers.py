"""LLM-free table retrievers over a corpus: one interface, one registry.

`RETRIEVERS` (`make_retriever(name, settings)`), used by ``search``, the retrieve-then-QA
baselines of ``ask`` / ``eval run``, ``eval retrieval`` and the HTTP API alike:

- ``grep``: TableSeek's Eq. 1 over the question's content words (`question_patterns`);
- ``bm25``: BM25 over the tables' words;
- ``dense``: cosine between the question's and each table's vector (an encoder of
  `tablequest.corpus.dense.encoders`);
- ``hybrid``: BM25 and dense fused (`corpus.rank.hybrid_rank`);
- ``phrase-hybrid``: phrase BM25 (word bigrams, the header counted twice) and cell match
  (question phrases that are a whole cell) fused with the cosines of the whole table and
  of its header rows (`PhraseHybridRetriever`);
- ``rerank``: the dense top-`rerank_pool` reordered by a ``/v1/rerank`` server.

A retriever ranks a question: ``rank(corpus, question, k, rows=False) -> list[Hit]``; with
``rows=True`` each hit carries the body rows the question's words match (for previews).
`corpus` is any `Corpus` (`corpus.storage.corpus`): one store is ranked directly, a sharded
corpus per shard with an exact merge (`tablequest.corpus.retrieval.shardrank`,
`shardphrase`), so every registered retriever gives the one-store answer on both. A plugin
retriever does the same with `shardrank.shard_map` and `merge_top` (see there).
Retrievers with an encoder expose `prime(questions)` (encode many questions in one batch) and
`prepare(store)` (encode the corpus once, before the first question).
Plugins add retrievers under the entry-point group ``tablequest.retrievers`` (a hook that
calls `register_retriever`; `tablequest.plugins`).

Defaults (issue 38), chosen on the first 2,000 WTQ *training* questions only: the encoder is
`DEFAULT_ENCODER` = ``minilm-32`` (MiniLM, inputs cut at 32 tokens) and ``eval retrieval``'s
method is ``phrase-hybrid`` (`tablequest.eval.retrieval.DEFAULT_METHOD`). The goal was a cold
WTQ evaluation (corpus built, every table encoded, 1,000 questions) within 25 s on 2 cores at
an R@1 no lower than ``hybrid`` with the 128-token ``minilm`` (0.454 on training).
``phrase-hybrid`` R@1 on training: 0.490 with ``minilm`` (≈ 55 s cold), 0.4845 with a
48-token cut, 0.4765 with ``minilm-32`` — the one cut whose table encoding (~4× less than 128
tokens) fits the budget. The encoder default is one name for every retriever and surface (the
vectors a store caches are then the same whichever command made them), so ``dense``,
``hybrid`` and ``rerank`` get ``minilm-32`` too, which costs ``hybrid`` 1.7 points of training
R@1 (0.454 → 0.437; ``dense`` alone loses more, docs/results.md "token frontier"): name
``--encoder minilm`` (``-o encoder minilm``) for them where encoding time does not matter.
``search`` keeps ``grep`` as its method on every surface: it ranks a user's store opened
read-only, where a dense default would encode the whole store in each process and need the
[dense] extra. TableRAG (``auto``) and the retrieve-then-QA baselines keep their own encoder
options.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from tablequest.corpus.dense.encoders import (
    DENSE_EXTRA_HINT,
    Encoder,
    EncoderSettings,
    EncoderUnavailable,
    QueryEncoder,
    make_encoder,
)
from tablequest.corpus.lexical.rank import (
    HYBRID_ALPHA,
    bm25_rank,
    grep_rank,
    hybrid_rank,
    matched_rows,
    question_patterns,
)
from tablequest.corpus.retrieval.shardrank import (
    one_store,
    prepare_dense,
    sharded_bm25,
    sharded_dense,
    sharded_grep,
    sharded_hybrid,
)
from tablequest.corpus.storage.corpus import Corpus
from tablequest.corpus.storage.store import Hit, Store, text_format
from tablequest.errors import BadValue
from tablequest.plugins import RETRIEVERS_GROUP, PluginRegistry, Plugins

__all__ = [
    "DEFAULT_ENCODER",
    "RETRIEVERS",
    "Retriever",
    "RetrieverSettings",
    "make_retriever",
    "preview_hit",
    "register_retriever",
    "search",
]


class Retriever(Protocol):
    """Ranks a corpus's tables for a question, without an LLM."""

    name: str

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]: ...


DEFAULT_ENCODER = "minilm-32"
"""The encoder of ``dense``, ``hybrid``, ``phrase-hybrid`` and ``rerank`` unless one is named
(every surface: `search`, ``eval retrieval``, the HTTP API, the web app, MCP; see the module
doc for why the 32-token cut and what it costs the other retrievers)."""


@dataclass(frozen=True)
class RetrieverSettings:
    """Every retriever's knobs (each reads its own).

    Attributes:
        encoder: Encoder name for dense, hybrid and rerank (see `corpus.encoders`).
        embeddings: Where ``api`` / ``auto`` encoders find their server.
        fusion: Hybrid fusion, ``score`` (weighted scores) or ``rrf``.
        alpha: Hybrid: weight of the dense score.
        rerank_url: Server with ``/v1/rerank``.
        rerank_model: Its reranker model.
        rerank_pool: Dense candidates given to the reranker.
        api_key: Key of the rerank server.
    """

    encoder: str = DEFAULT_ENCODER
    embeddings: EncoderSettings = field(default_factory=EncoderSettings)
    fusion: Literal["score", "rrf"] = "score"
    alpha: float = HYBRID_ALPHA
    rerank_url: str | None = None
    rerank_model: str | None = None
    rerank_pool: int = 5
    api_key: str | None = None


def _with_rows(store: Corpus, hits: list[Hit], question: str, rows: bool) -> list[Hit]:
    if not rows:
        return hits
    patterns = question_patterns(question)
    return [Hit(h.table_id, h.score, matched_rows(store, h.table_id, patterns)) for h in hits]


class GrepRetriever:
    """Eq. 1 over the question's content words as whole-word patterns."""

    name = "grep"

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        one = one_store(store)
        if one is None:
            hits = sharded_grep(store, question_patterns(question), k)
            return _with_rows(store, hits, question, rows)
        return grep_rank(one, question_patterns(question), k, rows=rows)


class BM25Retriever:
    """BM25 over each table's title, headers and cells."""

    name = "bm25"

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        one = one_store(store)
        if one is None:
            return _with_rows(store, sharded_bm25(store, question, k), question, rows)
        return _with_rows(store, bm25_rank(one, question, k, rows=False), question, rows)


class DenseRetriever:
    """Cosine similarity between the question's vector and each table's."""

    name = "dense"
    views: tuple[str, ...] = ("table",)
    """The vectors of a table it ranks with (`corpus.dense.index.View`)."""
    base_indexes = False
    """Whether it reads the grep or plain BM25 index (a cold evaluation builds them then)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = QueryEncoder(encoder)
        self.encoder_name = encoder.name

    def prime(self, questions: Sequence[str]) -> None:
        """Encode many questions in one batch (later `rank` calls reuse the vectors)."""
        self.encoder.prime(questions)

    def prepare(self, store: Corpus) -> None:
        """Encode the corpus tables that have no vector yet (cached in the store)."""
        from tablequest.corpus.dense.index import corpus_vectors

        one = one_store(store)
        if one is None:
            prepare_dense(store, self.encoder)
        else:
            corpus_vectors(one, self.encoder)

    def _dense(self, store: Corpus, question: str, k: int) -> list[Hit]:
        from tablequest.corpus.dense.index import dense_rank

        one = one_store(store)
        if one is None:
            return sharded_dense(store, question, k, self.encoder)
        return dense_rank(one, question, k, self.encoder)

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        return _with_rows(store, self._dense(store, question, k), question, rows)


class HybridRetriever(DenseRetriever):
    """BM25 and dense scores fused (see `corpus.rank.hybrid_rank`)."""

    name = "hybrid"
    base_indexes = True

    def __init__(self, encoder: Encoder, fusion: Literal["score", "rrf"], alpha: float) -> None:
        super().__init__(encoder)
        if not 0.0 <= alpha <= 1.0:
            raise BadValue(f"alpha must be in [0, 1], got {alpha}")
        self.fusion = fusion
        self.alpha = alpha

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        one = one_store(store)
        fusion, alpha = self.fusion, self.alpha
        if one is None:
            hits = sharded_hybrid(
                store, question, k, encoder=self.encoder, fusion=fusion, alpha=alpha
            )
        else:
            hits = hybrid_rank(one, question, k, encoder=self.encoder, fusion=fusion, alpha=alpha)
        return _with_rows(store, hits, question, rows)


PHRASE_WEIGHTS = (0.222, 0.61, 0.099, 0.069)
"""`phrase-hybrid`'s weights of (phrase BM25 / max, cos(q, table), cos(q, header rows),
cell match / max), fit on WTQ training questions (see `phrase_fusion`)."""


def phrase_fusion(
    lexical: npt.NDArray[np.float64],
    tables: npt.NDArray[np.float64],
    headers: npt.NDArray[np.float64],
    cells: npt.NDArray[np.float64],
    *,
    maxima: tuple[float, float] | None = None,
) -> npt.NDArray[np.float64]:
    """`phrase-hybrid`'s score of every table: Σ w_i · feature_i with `PHRASE_WEIGHTS`.

    Each argument holds one feature per table along the last axis (one question: 1-d; many:
    one row each). The two lexical features are divided by their maximum over the tables
    (0 where no table scores), the cosines are used as they are. `maxima`: the (lexical,
    cells) maxima to divide by instead — a shard's tables are divided by the corpus's.
    """
    w_lex, w_table, w_header, w_cells = PHRASE_WEIGHTS
    if maxima is None:
        lex, cell = by_max(lexical), by_max(cells)
    else:
        lex, cell = divided(lexical, maxima[0]), divided(cells, maxima[1])
    return w_lex * lex + w_table * tables + w_header * headers + w_cells * cell


def by_max(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`scores` divided by their maximum along the last axis; 0 where that maximum is ≤ 0."""
    best = scores.max(axis=-1, keepdims=True) if scores.size else np.ones_like(scores)
    return divided(scores, best)


def divided(scores: npt.NDArray[np.float64], best: Any) -> npt.NDArray[np.float64]:
    """`scores` / `best` (a number, or one per row); 0 where `best` is ≤ 0."""
    return np.where(best > 0, scores / np.where(best > 0, best, 1.0), 0.0)


class PhraseHybridRetriever(DenseRetriever):
    """Phrase BM25, cell match and two cosines fused (`phrase_fusion`, `PHRASE_WEIGHTS`).

    The lexical parts are the phrase index of `lexical.phrase` (word bigrams, the header
    counted twice, k1 0.7, b 0.3) and the cell match of `lexical.cellmatch` (question phrases
    that are a whole cell); the dense parts are the cosines of the question with the whole
    table's vector and with its header rows'. Every choice was made on WTQ *training*
    questions, never on test questions (docs/results.md, "Phrase hybrid";
    `benchmarks/phrase_retrieval.py` fits the weights).

    A sharded corpus ranks by an exact merge (`shardphrase`): the corpus-wide phrase BM25
    statistics, cell idfs and the two maxima are gathered from the shards first, then every
    shard scores its tables with them. Measured on WikiTableQuestions (2 shards, every test
    question): the top-10 lists equal one store's (docs/scale.md).
    """

    name = "phrase-hybrid"
    views: tuple[str, ...] = ("table", "header")

    def build_indexes(self, store: Store) -> None:
        """Build its phrase and cell indexes (persisted where the store is writable: a cold
        evaluation builds them with the corpus while the vectors are encoded,
        `eval.buildwork.BuildWork`)."""
        from tablequest.corpus.lexical.cellmatch import cell_index
        from tablequest.corpus.lexical.phrase import PHRASE_BM25
        from tablequest.corpus.lexical.rank import bm25_index

        bm25_index(store, kind=PHRASE_BM25)
        cell_index(store)

    def prepare(self, store: Corpus) -> None:
        """Encode the tables' texts and header rows that have no vector yet."""
        from tablequest.corpus.dense.index import corpus_vectors

        one = one_store(store)
        if one is None:
            prepare_dense(store, self.encoder, views=("table", "header"))
            return
        corpus_vectors(one, self.encoder)
        corpus_vectors(one, self.encoder, view="header")

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        from tablequest.corpus.retrieval.shardphrase import sharded_phrase_hybrid

        one = one_store(store)
        if one is None:
            hits = sharded_phrase_hybrid(store, question, k, self.encoder, phrase_fusion)
        else:
            hits = self._one(one, question, k)
        return _with_rows(store, hits, question, rows)

    def _one(self, store: Store, question: str, k: int) -> list[Hit]:
        from tablequest.corpus.dense.index import corpus_vectors, cosine_scores
        from tablequest.corpus.lexical.cellmatch import cell_index
        from tablequest.corpus.lexical.phrase import PHRASE_BM25
        from tablequest.corpus.lexical.rank import bm25_index

        ids, tables = corpus_vectors(store, self.encoder)
        _, headers = corpus_vectors(store, self.encoder, view="header")
        if not ids or k <= 0:
            return []
        lexical = bm25_index(store, kind=PHRASE_BM25).scores(question)  # table-id order
        cells = cell_index(store).scores(question)  # table-id order too
        query = self.encoder.encode([question])[0]
        fused = phrase_fusion(
            lexical,
            cosine_scores(tables, query).astype(np.float64),
            cosine_scores(headers, query).astype(np.float64),
            cells,
        )
        order = np.lexsort((np.arange(len(ids)), -fused))[:k]
        return [Hit(ids[i], float(fused[i])) for i in order]


class RerankRetriever(DenseRetriever):
    """The dense top-`pool` reordered by a cross-encoder server."""

    name = "rerank"

    def __init__(self, encoder: Encoder, settings: RetrieverSettings) -> None:
        from tablequest.corpus.retrieval.rerank import APIReranker

        super().__init__(encoder)
        if not settings.rerank_url or not settings.rerank_model:
            raise BadValue(
                "rerank needs a server: the URL and model of a /v1/rerank server "
                "(rerank_url, rerank_model)"
            )
        self.pool = settings.rerank_pool
        self.reranker = APIReranker(
            settings.rerank_url, settings.rerank_model, api_key=settings.api_key
        )

    def rank(self, store: Corpus, question: str, k: int, *, rows: bool = False) -> list[Hit]:
        from tablequest.corpus.retrieval.rerank import rerank_hits

        candidates = self._dense(store, question, max(self.pool, k))
        hits = rerank_hits(store, question, candidates, k, self.reranker)
        return _with_rows(store, hits, question, rows)


def _vectors(settings: RetrieverSettings, method: str) -> Encoder:
    encoder = make_encoder(settings.encoder, settings.embeddings)
    if encoder is None:
        raise EncoderUnavailable(
            f"{method} retrieval needs a vector encoder; encoder {settings.encoder!r} "
            f"gave none (install the [dense] extra: {DENSE_EXTRA_HINT}, or use -o encoder hash)"
        )
    return encoder


RetrieverFactory = Callable[[RetrieverSettings], Retriever]
RETRIEVERS: PluginRegistry[tuple[RetrieverFactory, str]] = PluginRegistry(Plugins(RETRIEVERS_GROUP))
"""name → (factory, description): built-ins below, plugins from the entry-point group
``tablequest.retrievers`` (hooks calling the register function, run on the first read)."""


def register_retriever(name: str, factory: RetrieverFactory, description: str) -> None:
    """Make `make_retriever(name)` build `factory(settings)`."""
    RETRIEVERS[name] = (factory, description)


def make_retriever(name: str, settings: RetrieverSettings | None = None) -> Retriever:
    """The retriever called `name`.

    Raises:
        BadValue: an unknown name or a bad setting.
        EncoderUnavailable: its encoder cannot run here (the message says what to install).
    """
    entry = RETRIEVERS.get(name)
    if entry is None:
        raise BadValue(f"unknown retrieval method {name!r}; one of {', '.join(RETRIEVERS)}")
    return entry[0](settings or RetrieverSettings())


def preview_hit(store: Corpus, hit: Hit, question: str, *, max_rows: int = 5) -> str:
    """The structure-preserving preview of a ranked table around the question's words."""
    from tablequest.table import preview

    table = store.index_table(hit.table_id)
    fmt = text_format(table)
    return preview(table, question_patterns(question), fmt=fmt, max_rows=max_rows).text  # type: ignore[arg-type]


def search(
    store: Corpus,
    question: str,
    *,
    k: int = 5,
    method: str = "grep",
    settings: RetrieverSettings | None = None,
    rows: bool = True,
) -> list[Hit]:
    """Rank `store` for `question` with the retriever `method` (matched rows by default)."""
    return make_retriever(method, settings).rank(store, question, k, rows=rows)


register_retriever("grep", lambda s: GrepRetriever(), "TableSeek Eq. 1 over content words")
register_retriever("bm25", lambda s: BM25Retriever(), "BM25 over the tables' words")
register_retriever("dense", lambda s: DenseRetriever(_vectors(s, "dense")), "cosine of vectors")
register_retriever(
    "hybrid",
    lambda s: HybridRetriever(_vectors(s, "hybrid"), s.fusion, s.alpha),
    "BM25 and dense fused",
)
register_retriever(
    "phrase-hybrid",
    lambda s: PhraseHybridRetriever(_vectors(s, "phrase-hybrid")),
    "phrase BM25 and cell match fused with table and header cosines",
)
register_retriever(
    "rerank",
    lambda s: RerankRetriever(_vectors(s, "rerank"), s),
    "dense top-N reordered by a /v1/rerank server",
)
