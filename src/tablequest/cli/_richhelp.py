"""typer's rich help pages without importing `rich.markdown` and `rich.traceback` (issue 38,
"Startup").

`typer.rich_utils`, which formats every help page, imports `rich.markdown` (markdown-it and
pygments) and `rich.traceback` (rich.pretty, attrs) at its top for two things tablequest never
uses on a help page: help in Markdown (`rich_markup_mode="markdown"`; ours is "rich") and
pretty exceptions (disabled). Those imports were about half of `tablequest --help` (typer.rich_utils
~340 ms of its ~750 ms of imports, rich.markdown ~150 ms and rich.traceback ~70 ms of them,
measured with ``-X importtime`` on a loaded 2-core machine). `load_rich_help` imports
`typer.rich_utils` with those two names standing for classes that import the real one when
first used (constructed or an attribute read), and then takes the stand-in modules out of
`sys.modules`, so any later ``import rich.markdown`` gets the real module. The help pages are
the same (rich panels, colours).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["load_rich_help"]

_DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}
"""Module → the one class of it that `typer.rich_utils` imports."""


class _Deferred(type):
    """The metaclass of a stand-in: reading an attribute of the class reads the real one's."""

    _where: tuple[str, str]

    def real(cls) -> Any:
        module, name = cls._where
        return getattr(importlib.import_module(module), name)

    def __getattr__(cls, attr: str) -> Any:
        return getattr(cls.real(), attr)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)


def _stand_in(module: str, name: str) -> types.ModuleType:
    stand = types.ModuleType(module)
    setattr(stand, name, _Deferred(name, (), {"_where": (module, name)}))
    return stand


def load_rich_help() -> None:
    """Import `typer.rich_utils` (help pages) without `rich.markdown` and `rich.traceback`;
    nothing when it is imported already."""
    if "typer.rich_utils" in sys.modules:
        return
    placed = {m: _stand_in(m, n) for m, n in _DEFERRED.items() if m not in sys.modules}
    sys.modules.update(placed)
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for module, stand in placed.items():
            if sys.modules.get(module) is stand:
                del sys.modules[module]
