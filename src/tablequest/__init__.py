"""tablequest: answer questions from tables with LLM agents, and show the evidence.

The public API is what `__all__` lists; submodules are implementation details.
"""

from tablequest.corpus import Hit, IngestReport, Store, StoreError, ingest
from tablequest.llm import (
    LLM,
    Completion,
    LLMError,
    OpenAICompatible,
    Scripted,
    StubServer,
    build_llm,
    resolve_config,
)
from tablequest.methods import Result
from tablequest.methods.direct import DirectQA, RetrieveThenQA
from tablequest.methods.seek import SeekConfig, TableSeek
from tablequest.table import (
    CellRef,
    Merge,
    Source,
    Table,
    UnreadableTable,
    preview,
    read_tables,
    serialize,
)
from tablequest.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "CellRef",
    "Completion",
    "DirectQA",
    "Hit",
    "IngestReport",
    "LLMError",
    "Merge",
    "OpenAICompatible",
    "Result",
    "RetrieveThenQA",
    "Scripted",
    "SeekConfig",
    "Source",
    "Store",
    "StoreError",
    "StubServer",
    "Table",
    "TableSeek",
    "Trace",
    "UnreadableTable",
    "__version__",
    "build_llm",
    "ingest",
    "preview",
    "read_tables",
    "resolve_config",
    "serialize",
]
