"""The `tablequest` typer application; sub-command groups register here."""

from __future__ import annotations

import inspect
from typing import Annotated

import typer
from typer.core import TyperCommand

from tablequest import __version__
from tablequest.cli import (
    cache,
    chat,
    eval_compare,
    eval_judge,
    eval_reproduce,
    eval_run,
    eval_subtab,
    mcp,
    serve,
    sql,
    tables,
    trace,
)
from tablequest.cli import config as config_cli
from tablequest.cli import research as research_cli
from tablequest.cli._options import PairCommand, UsageCommand
from tablequest.cli.ask import ask_command
from tablequest.cli.batch import batch_command
from tablequest.cli.corpus import ingest_command, search_command
from tablequest.cli.doctor import doctor_command
from tablequest.cli.methods import methods_command

app = typer.Typer(
    name="tablequest",
    help="Answer questions from tables with LLM agents, and show the evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
        print(f"tablequest {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = None,
) -> None:
    """Answer questions from tables with LLM agents, and show the evidence."""


app.command("ingest")(ingest_command)
app.command("search")(search_command)
tables.register(app)
sql.register(app)
app.command("ask", cls=PairCommand)(ask_command)
chat.register(app)
app.command("methods")(methods_command)
app.command("batch", cls=PairCommand)(batch_command)
app.command("doctor")(doctor_command)
app.add_typer(cache.app, name="cache")
app.add_typer(trace.app, name="trace")
research_cli.register(app)
serve.register(app)
mcp.register(app)
config_cli.register(app)

eval_app = typer.Typer(
    help="Evaluate methods on benchmarks and compare runs.", no_args_is_help=True
)
eval_compare.register(eval_app)
eval_run.register(eval_app)
eval_reproduce.register(eval_app)
eval_subtab.register(eval_app)
eval_judge.register(eval_app)
app.add_typer(eval_app, name="eval")


def _uniform_usage(group: typer.Typer) -> None:
    """Every command without a class of its own spells its usage line `UsageCommand`'s way
    (``PATHS...``, not ``{paths}...``)."""
    for info in group.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = UsageCommand
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _uniform_usage(sub.typer_instance)


def _resolve_annotations(group: typer.Typer) -> None:
    """Evaluate each command's annotations once, now: they are strings (``from __future__
    import annotations``), which typer would otherwise evaluate twice per command as it
    builds them on every start (``--version`` and ``--help`` included)."""
    infos = [*group.registered_commands, group.registered_callback]
    for callback in (info.callback for info in infos if info is not None):
        if callback is not None:
            callback.__annotations__ = inspect.get_annotations(callback, eval_str=True)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _resolve_annotations(sub.typer_instance)


_uniform_usage(app)
_resolve_annotations(app)


def main() -> None:
    """Console-script entry point."""
    from tablequest.cli._richhelp import load_rich_help

    load_rich_help()  # help pages without rich.markdown and rich.traceback
    app()
