"""Entry-point plugins: one lazy loader shared by every extension point.

Five extension points take plugins, each through its own entry-point group, and each loads
them the same way (the way simonw/llm loads ``default_plugins`` and installed plugins)::

    [project.entry-points."tablequest.readers"]      # also .methods, .llms,
    pipe = "my_package.tablequest_plugin:register"    # .retrievers, .encoders

An entry point names a registration hook: a callable taking no argument that calls the
extension point's ``register_*`` function (`register_reader`, `register_llm_backend`,
`register_retriever`, `register_encoder`, `register_method`). Built-ins register through the
same hooks (`Plugins(builtins=...)`), before the installed ones.

Hooks run once per process, on the first lookup in their registry (`Plugins.load`), never at
import: a command that needs no plugin pays nothing for them. A hook that fails to import or
raises is recorded in `Plugins.errors` (shown by ``tablequest methods``) and logged once as a
warning on the ``tablequest.plugins`` logger; it never breaks the command.

This module imports nothing of tablequest, so every layer may use it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

__all__ = [
    "ENCODERS_GROUP",
    "LLMS_GROUP",
    "METHODS_GROUP",
    "READERS_GROUP",
    "RETRIEVERS_GROUP",
    "PluginRegistry",
    "Plugins",
    "all_plugin_errors",
]

METHODS_GROUP = "tablequest.methods"
READERS_GROUP = "tablequest.readers"
LLMS_GROUP = "tablequest.llms"
RETRIEVERS_GROUP = "tablequest.retrievers"
ENCODERS_GROUP = "tablequest.encoders"

log = logging.getLogger("tablequest.plugins")
Hook = str | Callable[[], Any]
V = TypeVar("V")

_ALL: dict[str, Plugins] = {}


class Plugins:
    """The registration hooks of one entry-point group, run once, on demand.

    Args:
        group: The entry-point group (``tablequest.readers``, ...).
        builtins: ``module:function`` hooks (or callables) of the built-ins, run first;
            an installed entry point with the same value is not run twice.
    """

    def __init__(self, group: str, builtins: tuple[Hook, ...] = ()) -> None:
        self.group = group
        self.builtins = builtins
        self._errors: dict[str, str] = {}
        self._lock = threading.RLock()
        self._started = False  # set first: a hook that looks something up does not recurse
        self._done = False  # set last: other threads wait on the lock until the hooks ran
        _ALL[group] = self

    def load(self) -> None:
        """Run every hook once (built-ins, then installed entry points); never raises."""
        if self._done:
            return
        with self._lock:
            if self._started:
                return
            self._started = True
            try:
                self._run_all()
            finally:
                self._done = True

    def _run_all(self) -> None:
        for hook in self.builtins:
            self._run(hook if isinstance(hook, str) else repr(hook), hook)
        try:
            found = list(entry_points(group=self.group))
        except Exception as exc:  # broken metadata of some distribution
            self._fail(self.group, exc)
            return
        for ep in found:
            if ep.value not in self.builtins:
                self._run(ep.name, ep)

    def _run(self, label: str, target: Any) -> None:
        try:
            if isinstance(target, str):
                module_name, _, attr = target.partition(":")
                hook = getattr(importlib.import_module(module_name), attr or "register")
            elif hasattr(target, "load") and hasattr(target, "group"):  # an EntryPoint
                hook = target.load()
            else:
                hook = target
            if callable(hook):
                hook()
        except Exception as exc:  # a broken plugin must not break every command
            self._fail(label, exc)

    def _fail(self, label: str, exc: Exception) -> None:
        message = f"{type(exc).__name__}: {exc}"
        self._errors[label] = message
        log.warning("tablequest plugin %s (%s) failed to load: %s", label, self.group, message)

    @property
    def errors(self) -> dict[str, str]:
        """Hooks that failed, after loading: hook name → ``Type: message``."""
        self.load()
        return dict(self._errors)

    def reset(self) -> None:
        """Forget that the hooks ran (tests that install a plugin mid-process)."""
        with self._lock:
            self._started = self._done = False
            self._errors.clear()


class PluginRegistry(MutableMapping[str, V]):
    """A name → entry dict that runs its group's hooks before the first read.

    It stands where a plain module-level dict stood (``ENCODERS``, ``RETRIEVERS``), so code
    that iterates it or tests membership sees plugins too; writes never trigger loading.
    """

    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins
        self._data: dict[str, V] = {}

    def __getitem__(self, name: str) -> V:
        self.plugins.load()
        return self._data[name]

    def __setitem__(self, name: str, value: V) -> None:
        self._data[name] = value

    def __delitem__(self, name: str) -> None:
        del self._data[name]

    def __iter__(self) -> Iterator[str]:
        self.plugins.load()
        return iter(list(self._data))

    def __len__(self) -> int:
        self.plugins.load()
        return len(self._data)

    def __repr__(self) -> str:
        return f"PluginRegistry({self.plugins.group!r}, {sorted(self._data)})"


def all_plugin_errors() -> Mapping[str, dict[str, str]]:
    """Failed hooks of every group created so far: group → {hook: error} (empty omitted)."""
    out = {group: plugins.errors for group, plugins in sorted(_ALL.items())}
    return {group: errors for group, errors in out.items() if errors}
