"""``tablequest research FILE "task" --out DIR`` and ``tablequest memory show|clear`` (DTR).

Thin commands: `research` parses its arguments, builds the model from the usual configuration
(flags > environment > tablequest.toml) and calls `tablequest.methods.research.run_research`,
which writes ``report.md``, the charts (``chart-N.png``), ``result.json`` and ``trace.jsonl``
into the output directory; `memory` shows or clears DTR's experience memory (the default
memory file, another file, or the one inside a corpus store).

Hook for the application: ``register(app)`` adds both (``research`` and the ``memory`` group).
Method options are ``-o NAME VALUE`` (repeatable; ``-o NAME=VALUE`` works too), as for ``ask``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli._llm import LLMFlags, model_or_fail
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    JsonOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    ModelOpt,
    NoCacheOpt,
    OptionOpt,
    PairCommand,
    StepsOpt,
    option_pairs,
)
from tablequest.cli._output import fail, fail_on, print_json
from tablequest.cli.ask import exit_status

if TYPE_CHECKING:
    from tablequest.methods.research import ExperienceMemory, ResearchOptions, ResearchRun

__all__ = ["memory_app", "register"]

memory_app = typer.Typer(help="DTR's experience memory: show or clear it.", no_args_is_help=True)


def _options(pairs: list[str] | None, *, json_out: bool) -> ResearchOptions:
    from tablequest.methods import OptionError, merge_options
    from tablequest.methods.research import ResearchOptions

    try:
        options = merge_options("research", ResearchOptions, option_pairs(pairs))
    except OptionError as exc:
        fail_on(exc, json_out=json_out)
    assert isinstance(options, ResearchOptions)
    return options


def research_command(
    file: Annotated[Path, typer.Argument(help="The table file (xlsx, csv, html, json, …).")],
    task: Annotated[str, typer.Argument(help="The question or analytical task.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for report, charts, result.")],
    sheet: Annotated[
        str | None, typer.Option(help="Sheet name or 0-based index (default: the first).")
    ] = None,
    steps: StepsOpt = None,
    option: OptionOpt = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    no_cache: NoCacheOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Research a table: answer, a Markdown report and charts, written to --out.

    Exit status (as `ask`'s): 0 answered, 1 failed, 2 bad input, 3 insufficient evidence,
    4 no model configured (the comprehension ran); the files are written in every case.
    """
    from tablequest.cli._output import err_console
    from tablequest.errors import UsageError
    from tablequest.llm import NOT_CONFIGURED_HINT, StepBudget
    from tablequest.methods.research import run_research
    from tablequest.trace import Trace

    options = _options(option, json_out=json_out)
    flags = LLMFlags(llm_url, model, api_key, llm, no_cache=no_cache, config_file=config_file)
    model_llm = model_or_fail(flags, json_out=json_out)[1]
    if model_llm is None:
        err_console.print(
            f"no model configured: comprehension only. {NOT_CONFIGURED_HINT}",
            soft_wrap=True, markup=False, highlight=False,
        )  # fmt: skip
    budget = StepBudget(steps, reserve=0) if steps else None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create the output folder {str(out)!r}: {exc.strerror or exc}",
             json_out=json_out)  # fmt: skip
    trace = Trace(out / "trace.jsonl")
    try:
        run = run_research(file, task, out, llm=model_llm, options=options, sheet=sheet,
                           budget=budget, trace=trace)  # fmt: skip
    except UsageError as exc:  # the table file or sheet, an option
        fail_on(exc, json_out=json_out)
    except OSError as exc:  # the table file cannot be read, the output written
        fail(str(exc), json_out=json_out)
    _print_run(run, json_out=json_out)
    raise typer.Exit(exit_status(run.result))  # ask's statuses: 1 failed, 4 no model, …


def _print_run(run: ResearchRun, *, json_out: bool) -> None:
    """The result's JSON, or the answer and the files written."""
    from tablequest.cli._output import console

    result = run.result
    if json_out:
        print_json(result.to_json())
        return
    answer = result.answer if result.answer is not None else f"({result.status}: {result.reason})"
    lines = [f"Answer: {answer}", f"report: {run.report_path}"]
    lines += [f"chart:  {path}" for path in run.chart_paths]
    lines.append(f"result: {run.result_path}")
    usage = result.usage
    lines.append(f"{usage.calls} LLM calls, {usage.completion_tokens} output tokens")
    for line in lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _memory(
    store: Path | None, path: Path | None, *, write: bool, json_out: bool = False
) -> tuple[ExperienceMemory, Any]:
    from tablequest.corpus import Store, StoreError
    from tablequest.methods.research import ExperienceMemory

    if store is not None and path is not None:
        fail("give --store or --path, not both", json_out=json_out)
    if store is not None:
        if not store.is_file():
            fail(f"no store at {str(store)!r}", json_out=json_out)
        try:
            opened = Store(store, read_only=not write)
        except StoreError as exc:
            fail_on(exc, json_out=json_out)
        return ExperienceMemory(store=opened), opened
    return ExperienceMemory(path=path), None


StoreOption = Annotated[
    Path | None, typer.Option("--store", "-s", help="A corpus store holding the memory.")
]
PathOption = Annotated[
    Path | None, typer.Option("--path", help="A memory file (default: the user data dir).")
]


@memory_app.command("show")
def memory_show(
    store: StoreOption = None,
    path: PathOption = None,
    limit: Annotated[int, typer.Option(help="Rows per section.")] = 30,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Path statistics (N updates, mean reward) and lessons, most recent first."""
    from tablequest.cli._output import console
    from tablequest.methods.research import MemoryUnavailable

    memory, opened = _memory(store, path, write=False, json_out=json_out)
    try:
        summary = memory.summary(limit=limit)
    except MemoryUnavailable as exc:
        fail_on(exc, json_out=json_out)
    finally:
        if opened is not None:
            opened.close()
    if json_out:
        print_json({"where": memory.where, **summary})
        return
    lines = [f"memory: {memory.where}"]
    if not summary["paths"] and not summary["lessons"]:
        lines.append("(empty)")
    for row in summary["paths"]:
        lines.append(
            f"  {row['query_type']:<11} {row['structure']:<24} {row['path']:<36} "
            f"N={row['n']:<4} mean r={row['mean_reward']:.3f}"
        )
    for row in summary["lessons"]:
        lines.append(f"  lesson ({row['query_type']}, ×{row['count']}): {row['lesson']}")
    for line in lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)


@memory_app.command("clear")
def memory_clear(
    store: StoreOption = None,
    path: PathOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete every record of the memory."""
    from tablequest.cli._output import console
    from tablequest.methods.research import MemoryUnavailable

    memory, opened = _memory(store, path, write=True)
    try:
        if not yes and not typer.confirm(f"clear the DTR memory in {memory.where}?"):
            raise typer.Exit(1)
        feedback, lessons = memory.clear()
    except MemoryUnavailable as exc:
        fail_on(exc)
    finally:
        if opened is not None:
            opened.close()
    console.print(
        f"cleared {feedback} feedback records and {lessons} lessons from {memory.where}",
        soft_wrap=True, markup=False, highlight=False,
    )  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``research`` and the ``memory`` group to the application."""
    app.command("research", cls=PairCommand)(research_command)
    app.add_typer(memory_app, name="memory")
