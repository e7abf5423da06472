"""Question-answering methods over a corpus or a single table, and their registry."""

from tablequest.methods.base import (
    HasRetriever,
    Method,
    MethodContext,
    Previewing,
    Priming,
    Result,
    ResultDetails,
    Status,
    TableSet,
    Task,
    failed,
)
from tablequest.methods.options import MethodOptions, OptionError, option
from tablequest.methods.registry import (
    MethodSpec,
    UnknownMethod,
    get_method,
    list_methods,
    register_method,
    unregister_method,
)

__all__ = [
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
    "Status",
    "TableSet",
    "Task",
    "UnknownMethod",
    "failed",
    "get_method",
    "list_methods",
    "option",
    "register_method",
    "unregister_method",
]
