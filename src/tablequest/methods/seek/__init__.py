"""TableSeek: agentic grep search over a table corpus (papers/tableseek.txt)."""

from tablequest.methods.seek.agent import TableSeek
from tablequest.methods.seek.config import SeekConfig

__all__ = ["SeekConfig", "TableSeek"]
