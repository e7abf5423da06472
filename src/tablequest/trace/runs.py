"""Where a run over many questions (`tablequest batch`, `tablequest eval run`) keeps its traces.

Rule (ours): the records of a run go to one JSONL file, ``NAME.jsonl``; its per-question traces
go to the folder ``NAME.traces`` beside it, so a run's records and traces move and are deleted
together, and two runs in one folder never mix their traces.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["run_trace_dir"]


def run_trace_dir(out: Path) -> Path:
    """The trace folder of the run whose records go to `out` (``x.jsonl`` → ``x.traces``;
    a name without the ``.jsonl`` suffix gets ``.traces`` appended)."""
    return out.with_name(out.name.removesuffix(".jsonl") + ".traces")
