"""Errors raised by the table readers."""

from __future__ import annotations

from tablequest.errors import UsageError

__all__ = ["UnreadableTable"]


class UnreadableTable(UsageError):
    """A file (or byte string) that holds no readable table, with the precise reason.

    Attributes:
        path: the file's path as given to the reader (or the name passed with `data=`).
        reason: what is wrong, e.g. "empty file" or "not a valid xlsx file (zip header missing)".
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type[UnreadableTable], tuple[str, str]]:
        return (type(self), (self.path, self.reason))
