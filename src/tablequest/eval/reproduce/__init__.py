"""`tablequest eval reproduce`: one named configuration per main table of each paper.

`all_reproductions()` loads the per-paper modules (`tableseek`, `tablerag`, `tabscope`, `dtr`)
and returns every configuration by name; `run_reproduction` runs the rows of one (resumable,
`limit`); `write_report` lays the numbers out like the paper's table, the paper's beside ours.
"""

from __future__ import annotations

import importlib

from tablequest.eval.reproduce.spec import (
    REPRODUCTIONS,
    Cell,
    Missing,
    Reproduction,
    Row,
    register,
)

__all__ = [
    "PAPER_MODULES",
    "Cell",
    "Missing",
    "Reproduction",
    "Row",
    "all_reproductions",
    "get_reproduction",
    "register",
]

PAPER_MODULES = ("tableseek", "tablerag", "tabscope", "dtr")


def all_reproductions() -> dict[str, Reproduction]:
    """Every configuration by name, in paper order (importing the paper modules once)."""
    for module in PAPER_MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return dict(REPRODUCTIONS)


def get_reproduction(name: str) -> Reproduction:
    """The configuration `name`.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    known = all_reproductions()
    try:
        return known[name]
    except KeyError:
        raise KeyError(
            f"unknown reproduction {name!r}; see `tablequest eval reproduce --list` "
            f"({', '.join(known)})"
        ) from None
