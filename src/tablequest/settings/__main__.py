"""``python -m tablequest.settings [--write]``: print docs/config.md, or write it."""

from __future__ import annotations

import sys
from pathlib import Path

from tablequest.settings import markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"


def main(argv: list[str]) -> int:
    """Print the rendered docs/config.md; with ``--write``, write it in the source tree."""
    text = markdown()
    if argv[1:] == ["--write"]:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC}")
    elif argv[1:]:
        print("usage: python -m tablequest.settings [--write]", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
