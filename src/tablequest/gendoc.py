"""The entry point of a generated doc: ``python -m MODULE [--write]`` prints the doc, or
writes it into the source tree (docs/config.md, docs/cli.md; each has a test that fails when
the file in the repository drifts from what its generator renders)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["doc_main"]


def doc_main(argv: list[str], render: Callable[[], str], doc: Path, prog: str) -> int:
    """Print `render()`; with ``--write``, write it to `doc`. The exit status (2: usage)."""
    text = render()
    if argv[1:] == ["--write"]:
        doc.write_text(text, encoding="utf-8")
        print(f"wrote {doc}")
    elif argv[1:]:
        print(f"usage: python -m {prog} [--write]", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(text)
    return 0
