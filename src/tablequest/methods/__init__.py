"""Question-answering methods over a corpus or a single table."""

from tablequest.methods.base import Method, Result, Status, Task

__all__ = ["Method", "Result", "Status", "Task"]
