"""`tablequest methods [NAME]`: the registered methods, and one method's options.

A method's paper is cited by title and arXiv id, as its registration gives it (the built-in
methods' papers: docs/methods.md, "References"); `cite` shows a registration's citation (a
plugin's own included) as it is, and nothing for none.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tablequest.cli._options import JsonOpt
from tablequest.cli._output import fail_on, print_json


def cite(paper: str | None) -> str | None:
    """The citation a registration gives (title, authors, arXiv id), or None."""
    return paper or None


_INPUT = {
    "corpus": "a corpus",
    "table": "one table",
    "tables": "given tables",
    "none": "no table",
    "any": "a corpus or a table",
}


def methods_command(
    name: Annotated[str | None, typer.Argument(help="A method: list its options.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the methods (one line each), or NAME's options with types, defaults and papers."""
    from rich.table import Table as RichTable

    from tablequest.cli._output import console
    from tablequest.methods import (
        UnknownMethod,
        describe_options,
        get_method,
        list_methods,
        plugin_errors,
    )
    from tablequest.plugins import all_plugin_errors

    if name is None:
        specs = list_methods()
        if json_out:
            print_json(
                [{"name": s.name, "input": s.input, "description": s.description,
                  "paper": cite(s.paper)} for s in specs]
            )  # fmt: skip
            return
        for spec in specs:
            console.print(
                f"[bold]{spec.name:<10}[/bold] {spec.description}  [dim](answers from "
                f"{_INPUT[spec.input]})[/dim]",
                highlight=False,
            )
        plugin_errors()  # loads the methods' hooks; then every extension point's failures
        for group, errors in all_plugin_errors().items():
            for hook, error in errors.items():
                console.print(
                    f"[yellow]plugin {hook} ({group}) failed to load:[/yellow] {error}",
                    highlight=False,
                )
        return
    try:
        spec = get_method(name)
    except UnknownMethod as exc:
        fail_on(exc, json_out=json_out)
    infos = describe_options(spec.options)
    if json_out:
        print_json(
            {"name": spec.name, "input": spec.input, "description": spec.description,
             "paper": cite(spec.paper), "configs": list(spec.options.CONFIGS),
             "notes": spec.options.NOTES, "options": [i.__dict__ for i in infos]}
        )  # fmt: skip
        return
    console.print(f"[bold]{spec.name}[/bold]: {spec.description}", highlight=False)
    console.print(f"answers from {_INPUT[spec.input]}", highlight=False)
    console.print(f"paper: {cite(spec.paper) or '-'}", highlight=False, markup=False)
    view = RichTable(
        title="options (-o NAME VALUE, or NAME = VALUE under \\[methods.NAME] in tablequest.toml)",
        title_justify="left",
    )
    for column in ("option", "type", "default", "source", "what it does"):
        view.add_column(column)
    for info in infos:
        view.add_row(info.name, info.type, repr(info.default), info.paper or "ours", info.help)
    console.print(view)
    if spec.options.CONFIGS:
        console.print("named configs (-c NAME), e.g.: " + ", ".join(spec.options.CONFIGS))
    if spec.options.NOTES:
        console.print(spec.options.NOTES, highlight=False, markup=False)
