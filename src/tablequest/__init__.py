"""tablequest: answer questions from tables with LLM agents, and show the evidence.

The public API is what `__all__` lists; submodules are implementation details. Names are
imported on first use (module `__getattr__`), so `import tablequest.table` or
`tablequest --version` does not load the model client, DuckDB or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablequest.lazy import lazy_exports

if TYPE_CHECKING:
    from tablequest import table
    from tablequest.corpus import (
        EncoderUnavailable,
        Hit,
        IngestAborted,
        IngestReport,
        NoStore,
        NotAStore,
        Store,
        StoreError,
        StoreLocked,
        StoreWriteError,
        grep_rank,
        ingest,
    )
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
        DirectQA,
        Method,
        MethodContext,
        MethodOptions,
        MethodSpec,
        OptionError,
        Result,
        RetrieveThenQA,
        SourceError,
        TableSet,
        UnknownMethod,
        get_method,
        list_methods,
        option,
        register_method,
    )
    from tablequest.methods.rag import RagConfig, TableRAG
    from tablequest.methods.seek import SeekConfig, TableSeek
    from tablequest.notebook import Chat, OpenedCorpus, ask, chat, open, search
    from tablequest.sandbox import SandboxError
    from tablequest.table import (
        CellRef,
        Merge,
        Source,
        Table,
        UnreadableTable,
        read_tables,
    )
    from tablequest.trace import Trace

    # `preview` and `serialize` are also submodules of `tablequest.table`: mypy reads a
    # `from tablequest.table import preview` here as a second definition
    preview = table.preview
    serialize = table.serialize

_LAZY: dict[str, str] = {
    "CellRef": "tablequest.table",
    "Completion": "tablequest.llm",
    "ConfigError": "tablequest.llm",
    "Chat": "tablequest.notebook",
    "DirectQA": "tablequest.methods",
    "EncoderUnavailable": "tablequest.corpus",
    "Hit": "tablequest.corpus",
    "IngestAborted": "tablequest.corpus",
    "IngestReport": "tablequest.corpus",
    "LLM": "tablequest.llm",
    "LLMError": "tablequest.llm",
    "Merge": "tablequest.table",
    "Method": "tablequest.methods",
    "MethodContext": "tablequest.methods",
    "MethodOptions": "tablequest.methods",
    "MethodSpec": "tablequest.methods",
    "ModelUnreachable": "tablequest.llm",
    "NoStore": "tablequest.corpus",
    "NotAStore": "tablequest.corpus",
    "OpenAICompatible": "tablequest.llm",
    "OpenedCorpus": "tablequest.notebook",
    "OptionError": "tablequest.methods",
    "RagConfig": "tablequest.methods.rag",
    "Result": "tablequest.methods",
    "RetrieveThenQA": "tablequest.methods",
    "SandboxError": "tablequest.sandbox",
    "Scripted": "tablequest.llm",
    "SeekConfig": "tablequest.methods.seek",
    "Source": "tablequest.table",
    "SourceError": "tablequest.methods",
    "Store": "tablequest.corpus",
    "StoreError": "tablequest.corpus",
    "StoreLocked": "tablequest.corpus",
    "StoreWriteError": "tablequest.corpus",
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
    "chat": "tablequest.notebook",
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


__getattr__, __dir__ = lazy_exports(globals(), _LAZY, store=True)


__version__ = "0.1.0"

__all__ = [
    "LLM",
    "BadValue",
    "CellRef",
    "Chat",
    "Completion",
    "ConfigError",
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
    "OpenedCorpus",
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
    "chat",
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
