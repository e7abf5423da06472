"""tablequest: answer questions from tables with LLM agents, and show the evidence.

The public API is what `__all__` lists; submodules are implementation details.
"""

from tablequest.corpus import (
    EncoderUnavailable,
    Hit,
    IngestReport,
    Store,
    StoreError,
    grep_rank,
    ingest,
)
from tablequest.corpus.storage.ingest import IngestAborted
from tablequest.corpus.storage.store import NoStore, NotAStore, StoreLocked, StoreWriteError
from tablequest.errors import TablequestError
from tablequest.llm import (
    LLM,
    Completion,
    ConfigError,
    LLMError,
    ModelUnreachable,
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
    OptionError,
    Result,
    TableSet,
    UnknownMethod,
    get_method,
    list_methods,
    option,
    register_method,
)
from tablequest.methods.direct import DirectQA, RetrieveThenQA
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.run import SourceError
from tablequest.methods.seek import SeekConfig, TableSeek
from tablequest.notebook import Corpus, ask, open, search
from tablequest.sandbox import SandboxError
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
    "ConfigError",
    "Corpus",
    "DirectQA",
    "EncoderUnavailable",
    "Hit",
    "IngestAborted",
    "IngestReport",
    "LLMError",
    "Merge",
    "Method",
    "MethodContext",
    "MethodOptions",
    "MethodSpec",
    "ModelUnreachable",
    "NoStore",
    "NotAStore",
    "OpenAICompatible",
    "OptionError",
    "RagConfig",
    "Result",
    "RetrieveThenQA",
    "SandboxError",
    "Scripted",
    "SeekConfig",
    "Source",
    "SourceError",
    "Store",
    "StoreError",
    "StoreLocked",
    "StoreWriteError",
    "StubServer",
    "Table",
    "TableRAG",
    "TableSeek",
    "TableSet",
    "TablequestError",
    "Trace",
    "UnknownMethod",
    "UnreadableTable",
    "__version__",
    "ask",
    "build_llm",
    "get_method",
    "grep_rank",
    "ingest",
    "list_methods",
    "open",
    "option",
    "preview",
    "read_tables",
    "register_method",
    "resolve_config",
    "search",
    "serialize",
]
