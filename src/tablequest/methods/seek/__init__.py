"""TableSeek: agentic grep search over a table corpus (Tian et al., 2026)."""

from tablequest.methods.seek.agent import TableSeek
from tablequest.methods.seek.config import SeekConfig

__all__ = ["SeekConfig", "TableSeek", "register"]


def register() -> None:
    """Register ``seek`` (a built-in, through the same call a plugin makes)."""
    from tablequest.methods.registry import register_method

    register_method(
        "seek",
        TableSeek,
        SeekConfig,
        input="corpus",
        description="TableSeek: agentic grep search over a corpus, refine, QA, fallback",
        title="TableSeek",
        paper=(
            "TableSeek: Structure-Preserving Agentic Evidence Seeking over "
            "Heterogeneous Table Corpora (Tian et al., 2026; the paper text gives no arXiv id)"
        ),
    )
