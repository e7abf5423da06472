"""tablequest: answer questions from tables with LLM agents, and show the evidence."""

from tablequest.table import CellRef, Merge, Source, Table

__version__ = "0.1.0"

__all__ = ["CellRef", "Merge", "Source", "Table", "__version__"]
