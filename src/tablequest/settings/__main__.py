"""``python -m tablequest.settings [--write]``: print docs/config.md, or write it."""

from __future__ import annotations

import sys
from pathlib import Path

from tablequest.gendoc import doc_main
from tablequest.settings import markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"


def main(argv: list[str]) -> int:
    """Print the rendered docs/config.md; with ``--write``, write it in the source tree."""
    return doc_main(argv, markdown, DOC, "tablequest.settings")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
