"""Question-answering methods over a corpus or a single table, and their registry.

This module is the package's public surface, with the method packages `tablequest.methods.seek`,
`.rag`, `.scope`, `.research` and `.auto` (which plugins and users import): code outside
`tablequest.methods` imports from these, never from their modules (tests/test_layers.py).
`ask` and what it opens (`run`) and the baselines (`direct`) load the corpus and the methods:
they are imported on first use and read from their module on every use (nothing is cached
here, so a test that patches the defining module patches every caller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablequest.lazy import lazy_exports
from tablequest.methods.base import (
    HasRetriever,
    Method,
    MethodContext,
    Previewing,
    Priming,
    TableSet,
    Task,
)
from tablequest.methods.configtrust import guarded_keys, untrusted_notes
from tablequest.methods.evidence import evidence_of
from tablequest.methods.lineage import Binding, cell_json, traced_items
from tablequest.methods.locate import locate_evidence
from tablequest.methods.options import (
    MethodOptions,
    OptionError,
    describe_options,
    merge_options,
    option,
    option_name,
    request_settable,
)
from tablequest.methods.recompute import Verdict
from tablequest.methods.registry import (
    MethodSpec,
    UnknownMethod,
    check_method_tables,
    get_method,
    list_methods,
    plugin_errors,
    register_method,
    unregister_method,
)
from tablequest.methods.result import Result, ResultDetails, Status, failed

if TYPE_CHECKING:
    from tablequest.methods.conversation import (
        Conversation,
        Conversations,
        FollowUp,
        Turn,
        UnknownConversation,
    )
    from tablequest.methods.direct import DirectQA, RetrieveThenQA
    from tablequest.methods.run import (
        NO_LLM,
        SourceError,
        ask,
        failed_result,
        open_source,
        resolve_options,
    )

#: public name → the module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "Conversation": "tablequest.methods.conversation",
    "Conversations": "tablequest.methods.conversation",
    "FollowUp": "tablequest.methods.conversation",
    "Turn": "tablequest.methods.conversation",
    "UnknownConversation": "tablequest.methods.conversation",
    "DirectQA": "tablequest.methods.direct",
    "RetrieveThenQA": "tablequest.methods.direct",
    "NO_LLM": "tablequest.methods.run",
    "SourceError": "tablequest.methods.run",
    "ask": "tablequest.methods.run",
    "failed_result": "tablequest.methods.run",
    "open_source": "tablequest.methods.run",
    "resolve_options": "tablequest.methods.run",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "NO_LLM",
    "Binding",
    "Conversation",
    "Conversations",
    "DirectQA",
    "FollowUp",
    "HasRetriever",
    "Method",
    "MethodContext",
    "MethodOptions",
    "MethodSpec",
    "OptionError",
    "Previewing",
    "Priming",
    "Result",
    "ResultDetails",
    "RetrieveThenQA",
    "SourceError",
    "Status",
    "TableSet",
    "Task",
    "Turn",
    "UnknownConversation",
    "UnknownMethod",
    "Verdict",
    "ask",
    "cell_json",
    "check_method_tables",
    "describe_options",
    "evidence_of",
    "failed",
    "failed_result",
    "get_method",
    "guarded_keys",
    "list_methods",
    "locate_evidence",
    "merge_options",
    "open_source",
    "option",
    "option_name",
    "plugin_errors",
    "register_method",
    "request_settable",
    "resolve_options",
    "traced_items",
    "unregister_method",
    "untrusted_notes",
]
