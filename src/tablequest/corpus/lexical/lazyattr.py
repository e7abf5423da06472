"""`lazy_attribute`: `functools.cached_property` without the lock Python 3.11 holds.

Why (issue 38): on Python 3.11 `cached_property` computes under one lock per class, shared by
all its instances, so while a thread makes the row lines of a big table (`TableLines`), a
search on the server's event loop that needs any other table's lines waits for it — 1.5 s in
a review's measurement. Python 3.12 dropped that lock for the same reason. Here two threads
may compute the same value at once; both get an equal value and one is kept, which is
harmless for what this caches (values derived from immutable data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["lazy_attribute"]

T = TypeVar("T")


class lazy_attribute(Generic[T]):
    """A value computed on first access and stored in the instance's ``__dict__`` (so frozen
    dataclasses may use it), without a lock."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> lazy_attribute[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | lazy_attribute[T]:
        if obj is None:
            return self
        value = self.func(obj)
        obj.__dict__[self.name] = value  # later reads find it there, not here
        return value
