"""tablequest: answer questions from tables with LLM agents, and show the evidence.

The public API is what `__all__` lists; submodules are implementation details.
"""

from tablequest.corpus import Hit, IngestReport, Store, StoreError, grep_rank, ingest, search
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
from tablequest.methods import (
    Method,
    MethodContext,
    MethodOptions,
    MethodSpec,
    Result,
    TableSet,
    get_method,
    list_methods,
    option,
    register_method,
)
from tablequest.methods.direct import DirectQA, RetrieveThenQA
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.run import ask
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
    "Method",
    "MethodContext",
    "MethodOptions",
    "MethodSpec",
    "OpenAICompatible",
    "RagConfig",
    "Result",
    "RetrieveThenQA",
    "Scripted",
    "SeekConfig",
    "Source",
    "Store",
    "StoreError",
    "StubServer",
    "Table",
    "TableRAG",
    "TableSeek",
    "TableSet",
    "Trace",
    "UnreadableTable",
    "__version__",
    "ask",
    "build_llm",
    "get_method",
    "grep_rank",
    "ingest",
    "list_methods",
    "option",
    "preview",
    "read_tables",
    "register_method",
    "resolve_config",
    "search",
    "serialize",
]
