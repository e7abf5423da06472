"""docs/cli.md, rendered from the command tree (`markdown`).

``python -m tablequest.cli._docs`` prints it; ``python -m tablequest.cli._docs --write``
writes docs/cli.md; tests/cli/test_cli_docs.py fails when the file differs from what this
renders.

The page is built from click's command tree (``typer.main.get_command(app)``, groups walked
in registration order) and each parameter's own help record: the same texts as ``--help``,
but never through rich, so the page does not depend on the terminal's width or colours.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from tablequest.gendoc import doc_main

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
COMMAND = "python -m tablequest.cli._docs --write"

HEADER = f"""\
# Command-line reference

<!-- Generated from src/tablequest/cli by `{COMMAND}`;
do not edit by hand: tests/cli/test_cli_docs.py fails when this file differs. -->

Every command and option of `tablequest`, as `tablequest COMMAND --help` prints them. What the
commands do in more detail, with examples: [usage.md](usage.md); settings that are not flags:
[config.md](config.md).
"""

_CODE_SPAN = re.compile(r"(`[^`]*`)")


def _escape(text: str) -> str:
    """Markdown-safe prose: ``<``, ``>`` and ``*`` escaped outside code spans (help texts
    name placeholders such as ``<str>`` and globs); rich's ``\\[`` is a plain bracket."""
    parts = _CODE_SPAN.split(text.replace("\\[", "["))  # rich markup's escaped bracket
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
    return "".join(parts)


def _help_text(command: Any) -> str:
    """A command's help as click shows it: cut at ``\\f``, ``\\b`` markers dropped."""
    text: str = command.help or command.short_help or ""
    text = text.split("\f", 1)[0]
    lines = [line for line in text.strip().splitlines() if line.strip() != "\b"]
    return "\n".join(line.rstrip() for line in lines).strip()


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def _params(command: Any, ctx: Any) -> list[tuple[bool, str, str]]:
    """Each shown parameter: (an argument?, its names and metavar, its help with default,
    range and environment variable), from the parameter's own help record."""
    try:
        from tablequest.cli._options import fill_help

        fill_help(command.params)
    except ImportError:  # pragma: no cover - the placeholders are then shown as written
        pass
    rows: list[tuple[bool, str, str]] = []
    for param in command.get_params(ctx):
        record = None if getattr(param, "hidden", False) else param.get_help_record(ctx)
        if record is not None:
            is_argument = getattr(param, "param_type_name", "") == "argument"
            rows.append((is_argument, record[0], " ".join(record[1].split())))
    return rows


def _items(title: str, rows: list[tuple[str, str]]) -> list[str]:
    if not rows:
        return []
    items = [f"- `{names}`" + (f": {_escape(text)}" if text else "") for names, text in rows]
    return [f"{title}:", "", *items, ""]


def _section(command: Any, ctx: Any, depth: int) -> list[str]:
    path = ctx.command_path
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    out = [f"{'#' * min(depth, 4)} `{path}`", "", "```", usage, "```", ""]
    text = _help_text(command)
    if text:
        out += [_escape(text), ""]
    params = _params(command, ctx)
    out += _items("Arguments", [(names, text) for arg, names, text in params if arg])
    out += _items("Options", [(names, text) for arg, names, text in params if not arg])
    if _is_group(command):
        subs = _subcommands(command, ctx)
        if subs:
            out += ["Commands:", ""]
            for name, sub in subs:
                summary = _escape(_summary(_help_text(sub)))
                anchor = _anchor(f"{path} {name}")
                out.append(f"- [`{name}`](#{anchor})" + (f": {summary}" if summary else ""))
            out.append("")
        for name, sub in subs:
            out += _section(sub, _context(sub, name, ctx), depth + 1)
    return out


def _subcommands(group: Any, ctx: Any) -> list[tuple[str, Any]]:
    subs = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is not None and not getattr(sub, "hidden", False):
            subs.append((name, sub))
    return subs


def _context(command: Any, name: str, parent: Any) -> Any:
    context_class = getattr(command, "context_class", type(parent))
    return context_class(command, info_name=name, parent=parent)


def _summary(text: str) -> str:
    """A command's first paragraph, on one line (its line in the group's list)."""
    return " ".join(text.split("\n\n", 1)[0].split())


def _anchor(title: str) -> str:
    """GitHub's anchor for a heading ``` `title` ```: lower case, spaces as dashes, other
    punctuation dropped."""
    slug = re.sub(r"[^\w\- ]", "", title.lower())
    return slug.replace(" ", "-")


def markdown() -> str:
    """docs/cli.md: every command's usage, help text, arguments and options."""
    import typer

    from tablequest.cli.app import app

    root = typer.main.get_command(app)
    context_class = getattr(root, "context_class", None)
    if context_class is None:  # pragma: no cover - every click command has one
        raise RuntimeError("the command tree has no context class")
    ctx = context_class(root, info_name="tablequest")
    lines = [HEADER, *_section(root, ctx, 2)]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    """Print the rendered docs/cli.md; with ``--write``, write it in the source tree."""
    return doc_main(argv, markdown, DOC, "tablequest.cli._docs")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
