"""The method registry: every method, built-in or plugin, is found here.

A method is registered once, with its factory, its options model and what it answers from::

    register_method("scope", build_scope, ScopeOptions, input="table",
                    description="TabScope: ...", paper="TabScope: … arXiv:2609.03395")

The CLI (``ask``, ``eval run``, ``methods``), the eval runner, the router and the HTTP API
reach methods only through `get_method` / `list_methods`; none of them names a method in code.

Built-in methods register through the same call a plugin makes (the way simonw/llm loads its
``default_plugins``): `DEFAULT_METHODS` lists ``module:function`` registration hooks of the
built-in packages, and installed distributions add theirs under the entry-point group
``tablequest.methods``::

    [project.entry-points."tablequest.methods"]
    mymethod = "my_package.tablequest_plugin:register"

Hooks run once, on the first lookup; a plugin that fails to load is reported by
`plugin_errors()` (and by ``tablequest methods``) instead of breaking every command.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.configfile import ConfigFile
from tablequest.errors import UsageError
from tablequest.methods.base import Input, Method, MethodContext
from tablequest.methods.options import (
    MethodOptions,
    NoOptions,
    check_method_names,
    merge_options,
    toml_options,
)
from tablequest.plugins import METHODS_GROUP, Plugins

__all__ = [
    "DEFAULT_METHODS",
    "ENTRY_POINT_GROUP",
    "MethodFactory",
    "MethodSpec",
    "UnknownMethod",
    "check_method_tables",
    "get_method",
    "list_methods",
    "plugin_errors",
    "register_method",
    "unregister_method",
]

ENTRY_POINT_GROUP = METHODS_GROUP
DEFAULT_METHODS: tuple[str, ...] = (
    "tablequest.methods.seek:register",
    "tablequest.methods.direct:register",
    "tablequest.methods.rag:register",
    "tablequest.methods.scope:register",
    "tablequest.methods.auto:register",
    "tablequest.methods.research:register",
)

MethodFactory = Callable[[Any, MethodContext], Method]
"""``factory(options, context) -> Method`` (options: the method's own `MethodOptions`)."""


class UnknownMethod(UsageError):
    """No method of that name is registered; the message lists the known ones."""

    code = "unknown_method"


@dataclass(frozen=True)
class MethodSpec:
    """A registered method.

    Attributes:
        name: What users type (``--method NAME``).
        factory: Builds the method from its options and a `MethodContext`.
        options: The method's `MethodOptions` subclass.
        input: What it answers from: ``corpus`` (a Store), ``table`` (one table),
            ``tables`` (one or more given tables) or ``none``.
        description: One line for ``tablequest methods``.
        paper: The citation of the method's paper (title, authors, arXiv id).
        needs_llm: False for methods that run without a model.
        title: The name reports show (default: `name`).
    """

    name: str
    factory: MethodFactory
    options: type[MethodOptions]
    input: Input
    description: str
    paper: str | None = None
    needs_llm: bool = True
    title: str | None = None

    def make_options(self, *layers: Mapping[str, Any] | MethodOptions | None) -> MethodOptions:
        """This method's options from layers, lowest precedence first (see `merge_options`)."""
        return merge_options(self.name, self.options, *layers)

    def resolve_options(
        self,
        *,
        config: str | None = None,
        options: Mapping[str, Any] | MethodOptions | None = None,
        config_paths: Sequence[Path | ConfigFile] | None = None,
    ) -> MethodOptions:
        """This method's options: defaults < ``[methods.NAME]`` in tablequest.toml < the
        named `config` < `options` (an untrusted toml file is guarded; see
        `tablequest.methods.options`).

        Raises:
            OptionError: unknown option, bad value, or unknown config name.
        """
        files = None if config_paths is None else list(config_paths)
        from_files = toml_options(self.name, files, self.options, registered())
        named = self.options.from_config(config) if config else None
        return self.make_options(from_files, named, options)

    def build(
        self, options: MethodOptions | None = None, context: MethodContext | None = None
    ) -> Method:
        """A ready method (default options and context when not given)."""
        opts = options if options is not None else self.make_options()
        if not isinstance(opts, self.options):
            raise TypeError(
                f"method {self.name} takes {self.options.__name__}, got {type(opts).__name__}"
            )
        return self.factory(opts, context or MethodContext())


_REGISTRY: dict[str, MethodSpec] = {}
_LOCK = threading.RLock()
_PLUGINS = Plugins(ENTRY_POINT_GROUP, DEFAULT_METHODS)


def register_method(
    name: str,
    factory: MethodFactory,
    options: type[MethodOptions] = NoOptions,
    *,
    input: Input,
    description: str,
    paper: str | None = None,
    needs_llm: bool = True,
    title: str | None = None,
    replace: bool = False,
) -> MethodSpec:
    """Register a method under `name` (lower case letters, digits and ``-``).

    Raises:
        ValueError: a bad name, or a name already taken (unless `replace`).
    """
    if not name or not all(c.isalnum() or c == "-" for c in name) or name != name.lower():
        raise ValueError(f"bad method name {name!r}: use lower-case letters, digits and '-'")
    if not (isinstance(options, type) and issubclass(options, MethodOptions)):
        raise ValueError(f"method {name}: options must be a MethodOptions subclass")
    spec = MethodSpec(name, factory, options, input, description, paper, needs_llm, title)
    with _LOCK:
        if name in _REGISTRY and not replace:
            raise ValueError(f"method {name!r} is already registered")
        _REGISTRY[name] = spec
    return spec


def unregister_method(name: str) -> None:
    """Remove a method (tests and plugins that replace a built-in)."""
    with _LOCK:
        _REGISTRY.pop(name, None)


def _load() -> None:
    _PLUGINS.load()


def get_method(name: str) -> MethodSpec:
    """The registered method `name`.

    Raises:
        UnknownMethod: no such method; the message lists the registered ones.
    """
    _load()
    with _LOCK:
        spec = _REGISTRY.get(name)
        if spec is None:
            known = ", ".join(sorted(_REGISTRY)) or "none"
            raise UnknownMethod(f"unknown method {name!r}; one of {known}")
        return spec


def list_methods() -> list[MethodSpec]:
    """Every registered method, by name."""
    _load()
    with _LOCK:
        return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def registered() -> list[str]:
    """The names of every registered method (built-in and plugins)."""
    _load()
    with _LOCK:
        return sorted(_REGISTRY)


def check_method_tables(files: Iterable[ConfigFile]) -> None:
    """Every ``[methods.NAME]`` of `files` names a registered method.

    Raises:
        OptionError: an unknown NAME (`tablequest.methods.options.check_method_names`).
    """
    files = [f for f in files if f.data.get("methods")]
    names = registered() if files else []  # loads every method: only when there are tables
    for file in files:
        check_method_names(file, names)


def plugin_errors() -> dict[str, str]:
    """Registration hooks that failed: hook name → error."""
    return _PLUGINS.errors
