"""Lazy package exports: a package's `__getattr__` and `__dir__` from a name → module map, so
``import tablequest.corpus`` (or the root) loads none of the modules behind its names until
one is used (tests/test_startup.py checks what an import loads).

A name is read from its defining module on every access (not stored in the package), so a
test that patches the defining module reaches code that imports the name through the package;
the root package alone stores what it resolved (`store`), as its users read it often.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any],
    names: Mapping[str, str],
    *,
    renamed: Mapping[str, str] | None = None,
    modules: Mapping[str, str] | None = None,
    store: bool = False,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for the package whose globals are `namespace`: `names` maps a
    public name to the module that defines it (`renamed`: the name there, when it differs);
    `modules` maps a public name to a module exported whole; with `store`, a resolved name is
    kept in `namespace` (later lookups skip `__getattr__`)."""
    package = namespace["__name__"]
    renamed = renamed or {}
    modules = modules or {}

    def getattr_(name: str) -> Any:
        if name in modules:
            return importlib.import_module(modules[name])
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), renamed.get(name, name))
        if store:
            namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(names) | set(modules))

    return getattr_, dir_
