"""Tables' names as people read them (the short name of a stored table's source)."""

from __future__ import annotations

from pathlib import PurePath

__all__ = ["short_name"]


def short_name(source: str) -> str:
    """A table's short name: its file name (and ``#sheet``) without the folders."""
    path, _, sheet = source.partition("#")
    name = PurePath(path).name or path
    return f"{name}#{sheet}" if sheet else name
