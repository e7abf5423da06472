"""The corpus: a DuckDB store of tables, ingest, and ranking (grep Eq. 1, BM25)."""

from tablequest.corpus.ingest import FileFailure, IngestReport, ingest
from tablequest.corpus.rank import question_patterns
from tablequest.corpus.store import Hit, Store, StoreError

__all__ = [
    "FileFailure",
    "Hit",
    "IngestReport",
    "Store",
    "StoreError",
    "ingest",
    "question_patterns",
]
