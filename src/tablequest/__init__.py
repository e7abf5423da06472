"""tablequest: answer questions from tables with LLM agents, and show the evidence.

The public API is what `__all__` lists; submodules are implementation details. Names are
imported on first use (module `__getattr__`), so `import tablequest.table` or
`tablequest --version` does not load the model client, DuckDB or pandas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from tablequest.errors import BadValue, RunError, TablequestError, UsageError
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
        read_tables,
    )
    from tablequest.table.preview import preview
    from tablequest.table.serialize import serialize
    from tablequest.trace import Trace

_LAZY: dict[str, str] = {
    "CellRef": "tablequest.table",
    "Completion": "tablequest.llm",
    "ConfigError": "tablequest.llm",
    "Corpus": "tablequest.notebook",
    "DirectQA": "tablequest.methods.direct",
    "EncoderUnavailable": "tablequest.corpus",
    "Hit": "tablequest.corpus",
    "IngestAborted": "tablequest.corpus.storage.ingest",
    "IngestReport": "tablequest.corpus",
    "LLM": "tablequest.llm",
    "LLMError": "tablequest.llm",
    "Merge": "tablequest.table",
    "Method": "tablequest.methods",
    "MethodContext": "tablequest.methods",
    "MethodOptions": "tablequest.methods",
    "MethodSpec": "tablequest.methods",
    "ModelUnreachable": "tablequest.llm",
    "NoStore": "tablequest.corpus.storage.store",
    "NotAStore": "tablequest.corpus.storage.store",
    "OpenAICompatible": "tablequest.llm",
    "OptionError": "tablequest.methods",
    "RagConfig": "tablequest.methods.rag",
    "Result": "tablequest.methods",
    "RetrieveThenQA": "tablequest.methods.direct",
    "SandboxError": "tablequest.sandbox",
    "Scripted": "tablequest.llm",
    "SeekConfig": "tablequest.methods.seek",
    "Source": "tablequest.table",
    "SourceError": "tablequest.methods.run",
    "Store": "tablequest.corpus",
    "StoreError": "tablequest.corpus",
    "StoreLocked": "tablequest.corpus.storage.store",
    "StoreWriteError": "tablequest.corpus.storage.store",
    "StubServer": "tablequest.llm",
    "Table": "tablequest.table",
    "TableRAG": "tablequest.methods.rag",
    "TableSeek": "tablequest.methods.seek",
    "TableSet": "tablequest.methods",
    "TablequestError": "tablequest.errors",
    "UsageError": "tablequest.errors",
    "RunError": "tablequest.errors",
    "BadValue": "tablequest.errors",
    "Trace": "tablequest.trace",
    "UnknownMethod": "tablequest.methods",
    "UnreadableTable": "tablequest.table",
    "ask": "tablequest.notebook",
    "build_llm": "tablequest.llm",
    "get_method": "tablequest.methods",
    "grep_rank": "tablequest.corpus",
    "ingest": "tablequest.corpus",
    "list_methods": "tablequest.methods",
    "open": "tablequest.notebook",
    "option": "tablequest.methods",
    "preview": "tablequest.table",
    "read_tables": "tablequest.table",
    "register_method": "tablequest.methods",
    "resolve_config": "tablequest.llm",
    "search": "tablequest.notebook",
    "serialize": "tablequest.table",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tablequest' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "LLM",
    "BadValue",
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
    "RunError",
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
    "UsageError",
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
