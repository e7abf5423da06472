"""The corpus: a DuckDB store of tables, ingest, and LLM-free retrieval.

`Store` is storage only; `ingest` writes tables into it and the retrievers
(`tablequest.corpus.retrieval.retrievers`: grep Eq. 1, BM25, dense, hybrid, rerank) rank them.
"""

from tablequest.corpus.dense.encoders import EncoderUnavailable
from tablequest.corpus.lexical.rank import grep_rank, question_patterns
from tablequest.corpus.retrieval.retrievers import RetrieverSettings, make_retriever, search
from tablequest.corpus.storage.ingest import FileFailure, FileWarning, IngestReport, ingest
from tablequest.corpus.storage.store import Hit, Store, StoreError

__all__ = [
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
    "question_patterns",
    "search",
]
