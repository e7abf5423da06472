"""DTR (Deep Tabular Research): messy spreadsheets and long analytical tasks (arXiv:2603.09151).

Comprehension builds a meta graph of the table (LLM-free), the model maps the question to
operations of a bank, candidate operation paths are ranked by expectation (Eq. 1), executed as
code in the sandbox with [THINK]/[CODE] steps, rewarded from execution feedback (Eq. 4),
remembered across questions (siamese memory) and voted on (Eq. 6); the answer comes with a
report and charts. Registered as method ``research``.
"""

from tablequest.methods.base import MethodContext
from tablequest.methods.registry import register_method
from tablequest.methods.research.api import ResearchRun, pick_table, run_research
from tablequest.methods.research.frame import ExecFrame, build_frame, describe_frame
from tablequest.methods.research.memory import (
    ExperienceMemory,
    MemoryUnavailable,
    default_memory_path,
)
from tablequest.methods.research.meta import MetaGraph, Node, build_meta_graph, triples
from tablequest.methods.research.method import DTR, Comprehension, Research
from tablequest.methods.research.options import ResearchOptions

__all__ = [
    "DTR",
    "Comprehension",
    "ExecFrame",
    "ExperienceMemory",
    "MemoryUnavailable",
    "MetaGraph",
    "Node",
    "Research",
    "ResearchOptions",
    "ResearchRun",
    "build_frame",
    "build_meta_graph",
    "default_memory_path",
    "describe_frame",
    "factory",
    "pick_table",
    "register",
    "run_research",
    "triples",
]

DESCRIPTION = (
    "DTR: meta graph of messy sheets, expectation-ranked operation paths run as sandboxed code, "
    "experience memory, vote, report and charts"
)


def factory(options: ResearchOptions, context: MethodContext) -> DTR:
    """Build DTR from its options and context (the registry's factory)."""
    return DTR(options, context)


def register() -> None:
    """Register method ``research`` (listed in `DEFAULT_METHODS`)."""
    register_method(
        "research",
        factory,
        ResearchOptions,
        input="table",
        description=DESCRIPTION,
        paper=(
            "Deep Tabular Research via Continual Experience-Driven Execution "
            "(Dong et al., 2026), arXiv:2603.09151"
        ),
    )
