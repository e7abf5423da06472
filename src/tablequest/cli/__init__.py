"""Command-line interface: a thin skin over the library (one library call per command)."""

from tablequest.cli.app import app, main

__all__ = ["app", "main"]
