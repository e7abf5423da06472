"""DTR (Deep Tabular Research): messy spreadsheets and long analytical tasks (papers/dtr.txt)."""

from tablequest.methods.research.frame import ExecFrame, build_frame, describe_frame
from tablequest.methods.research.meta import MetaGraph, Node, build_meta_graph, triples

__all__ = [
    "ExecFrame",
    "MetaGraph",
    "Node",
    "build_frame",
    "build_meta_graph",
    "describe_frame",
    "triples",
]
