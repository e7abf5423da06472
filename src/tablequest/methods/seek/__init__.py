"""TableSeek: agentic grep search over a table corpus (papers/tableseek.txt)."""

from tablequest.methods.base import MethodContext
from tablequest.methods.seek.agent import TableSeek
from tablequest.methods.seek.config import SeekConfig

__all__ = ["SeekConfig", "TableSeek", "register"]


def _build(options: SeekConfig, context: MethodContext) -> TableSeek:
    seek = TableSeek(context.llm, options, usage=context.usage)
    seek.context = context
    return seek


def register() -> None:
    """Register ``seek`` (a built-in, through the same call a plugin makes)."""
    from tablequest.methods.registry import register_method

    register_method(
        "seek",
        _build,
        SeekConfig,
        input="corpus",
        description="TableSeek: agentic grep search over a corpus, refine, QA, fallback",
        title="TableSeek",
        paper=(
            "TableSeek: Structure-Preserving Agentic Evidence Seeking over "
            "Heterogeneous Table Corpora (Tian et al., 2026; the paper text gives no arXiv id)"
        ),
    )
