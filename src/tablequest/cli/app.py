"""The `tablequest` typer application; sub-command groups register here."""

from __future__ import annotations

import typer

from tablequest.cli import cache, eval_compare, eval_run, eval_subtab, serve, trace
from tablequest.cli import research as research_cli
from tablequest.cli._options import PairCommand
from tablequest.cli.ask import ask_command
from tablequest.cli.batch import batch_command
from tablequest.cli.corpus import ingest_command, search_command
from tablequest.cli.methods import methods_command

app = typer.Typer(
    name="tablequest",
    help="Answer questions from tables with LLM agents, and show the evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("ingest")(ingest_command)
app.command("search")(search_command)
app.command("ask", cls=PairCommand)(ask_command)
app.command("methods")(methods_command)
app.command("batch", cls=PairCommand)(batch_command)
app.add_typer(cache.app, name="cache")
app.add_typer(trace.app, name="trace")
research_cli.register(app)
serve.register(app)

eval_app = typer.Typer(
    help="Evaluate methods on benchmarks and compare runs.", no_args_is_help=True
)
eval_compare.register(eval_app)
eval_run.register(eval_app)
eval_subtab.register(eval_app)
app.add_typer(eval_app, name="eval")


def main() -> None:
    """Console-script entry point."""
    app()
