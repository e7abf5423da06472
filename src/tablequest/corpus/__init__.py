"""The corpus: a DuckDB store of tables, ingest, and LLM-free retrieval.

`Store` is storage only; `ingest` writes tables into it and the retrievers
(`tablequest.corpus.retrieval.retrievers`: grep Eq. 1, BM25, dense, hybrid, rerank) rank them.
`Corpus` is the interface every reader uses, one store or a sharded corpus alike;
`open_corpus(path)` opens either (`tablequest.corpus.storage.corpus`).
Names are imported on first use, so opening a store does not load the encoders.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tablequest.corpus.dense.encoders import EncoderUnavailable
    from tablequest.corpus.lexical.rank import grep_rank, question_patterns
    from tablequest.corpus.retrieval.retrievers import RetrieverSettings, make_retriever, search
    from tablequest.corpus.storage.corpus import Corpus, open_corpus
    from tablequest.corpus.storage.ingest import FileFailure, FileWarning, IngestReport, ingest
    from tablequest.corpus.storage.store import Hit, Store, StoreError

_LAZY = {
    "EncoderUnavailable": "tablequest.corpus.dense.encoders",
    "grep_rank": "tablequest.corpus.lexical.rank",
    "question_patterns": "tablequest.corpus.lexical.rank",
    "RetrieverSettings": "tablequest.corpus.retrieval.retrievers",
    "make_retriever": "tablequest.corpus.retrieval.retrievers",
    "search": "tablequest.corpus.retrieval.retrievers",
    "Corpus": "tablequest.corpus.storage.corpus",
    "open_corpus": "tablequest.corpus.storage.corpus",
    "FileFailure": "tablequest.corpus.storage.ingest",
    "FileWarning": "tablequest.corpus.storage.ingest",
    "IngestReport": "tablequest.corpus.storage.ingest",
    "ingest": "tablequest.corpus.storage.ingest",
    "Hit": "tablequest.corpus.storage.store",
    "Store": "tablequest.corpus.storage.store",
    "StoreError": "tablequest.corpus.storage.store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tablequest.corpus' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Corpus",
    "EncoderUnavailable",
    "FileFailure",
    "FileWarning",
    "Hit",
    "IngestReport",
    "RetrieverSettings",
    "Store",
    "StoreError",
    "grep_rank",
    "ingest",
    "make_retriever",
    "open_corpus",
    "question_patterns",
    "search",
]
