"""Question-answering methods over a corpus or a single table, and their registry."""

from tablequest.methods.base import Method, MethodContext, Result, Status, TableSet, Task
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
    "Method",
    "MethodContext",
    "MethodOptions",
    "MethodSpec",
    "OptionError",
    "Result",
    "Status",
    "TableSet",
    "Task",
    "UnknownMethod",
    "get_method",
    "list_methods",
    "option",
    "register_method",
    "unregister_method",
]
