"""The corpus: a DuckDB store of tables, ingest, and LLM-free retrieval.

`Store` is storage only; `ingest` writes tables into it and the retrievers
(`tablequest.corpus.retrievers`: grep Eq. 1, BM25, dense, hybrid, rerank) rank them.
"""

from tablequest.corpus.encoders import EncoderUnavailable
from tablequest.corpus.ingest import FileFailure, FileWarning, IngestReport, ingest
from tablequest.corpus.rank import grep_rank, question_patterns
from tablequest.corpus.retrievers import RetrieverSettings, make_retriever, search
from tablequest.corpus.store import Hit, Store, StoreError

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
