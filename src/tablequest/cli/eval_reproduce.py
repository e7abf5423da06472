"""`tablequest eval reproduce NAME` and `eval reproduce --list`: a thin skin over
`tablequest.eval.reproduce`.

Parses, builds the model client as `eval run` does, runs the configuration's rows
(resumable, `--limit`, `--row`), writes ``OUT/NAME.report.md`` / ``.json`` and prints the
report (one --out folder may serve every configuration: shared runs are reused). Exit 0
when every row ran, 1 when a row failed (the report says which and why), 2 for usage errors
(unknown name or row, no --out).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from tablequest.cli._exit import FAILED
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    DeadlineOpt,
    DeviceOpt,
    LLMUrlOpt,
    ModelOpt,
    NoCacheOpt,
    StepsOpt,
)
from tablequest.cli._output import fail, fail_on

__all__ = ["register", "reproduce_command"]

DEFAULT_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def _listing(json_out: bool) -> None:
    from tablequest.eval.reproduce import all_reproductions

    reps = all_reproductions()
    if json_out:
        print(json.dumps([
            {"name": r.name, "paper": r.paper, "table": r.table, "title": r.title,
             "rows": [row.key for row in r.rows], "not_implemented": len(r.missing)}
            for r in reps.values()
        ]))  # fmt: skip
        return
    for rep in reps.values():
        print(f"{rep.name:<20} {rep.paper} {rep.table}: {rep.title}")
        print(f"{'':<20} {len(rep.rows)} rows run, {len(rep.missing)} not implemented")


def reproduce_command(
    name: Annotated[
        str | None, typer.Argument(help="A configuration (see --list), e.g. tableseek-t2.")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the configurations.")] = False,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            metavar="DIR",
            help="Folder holding one folder per benchmark (wtq/, tabfact/, …); default: "
            "../shared/data beside the checkout.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Folder of the runs and the reports (resumable; configurations may share it).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="First N questions of each row.")
    ] = None,
    rows: Annotated[
        list[str] | None,
        typer.Option("--row", metavar="KEY", help="Run only this row (repeatable)."),
    ] = None,
    paper_model: Annotated[
        str | None,
        typer.Option("--paper-model", metavar="NAME", help="The paper's backbone to compare with."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions answered at once.")] = 1,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    deadline: DeadlineOpt = None,
    steps: StepsOpt = None,
    no_cache: NoCacheOpt = False,
    cache_dir: Annotated[
        Path | None, typer.Option("--cache-dir", help="Corpus cache (default OUT/corpora).")
    ] = None,
    device: DeviceOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run one paper table's configuration; report ours beside the paper's numbers."""
    if list_:
        _listing(json_out)
        return
    if name is None:
        fail("name a configuration (see `tablequest eval reproduce --list`)", json_out=json_out)
    if out is None:
        fail("--out is required: the folder of the runs and the report", json_out=json_out)
    from tablequest.cli._llm import LLMFlags
    from tablequest.errors import TablequestError
    from tablequest.eval.reproduce import get_reproduction
    from tablequest.eval.reproduce.execute import RunContext

    try:
        rep = get_reproduction(name)
        chosen = rep.select(rows)
        flags = LLMFlags(
            llm_url, model, api_key, no_cache=no_cache, deadline=deadline, config_file=config_file
        )
        settings = flags.settings({"embeddings.device": device})  # the command's one load
        llm_config, llm = flags.build(settings)
    except KeyError as exc:
        fail(str(exc.args[0]), json_out=json_out)
    except TablequestError as exc:  # an unknown row, the model's flags (2); the model (1)
        fail_on(exc, json_out=json_out)
    root = data if data is not None else DEFAULT_DATA
    if not root.is_dir():
        fail(f"no benchmark folder at {root} (--data)", json_out=json_out)
    served = llm.describe().get("model", "") if llm is not None else ""
    ctx = RunContext(
        data_root=root, out_dir=out, llm=llm, llm_config=llm_config, model=served, limit=limit,
        concurrency=concurrency, steps=steps, cache_dir=cache_dir, settings=settings,
    )  # fmt: skip
    _run(rep, chosen, ctx, paper_model, json_out)


def _run(rep: Any, chosen: list[Any], ctx: Any, paper_model: str | None, json_out: bool) -> None:
    from tablequest.cli._output import err_console
    from tablequest.errors import BadValue
    from tablequest.eval.reproduce.execute import run_reproduction
    from tablequest.eval.reproduce.report import comparison_model, write_report

    out, served, limit = ctx.out_dir, ctx.model, ctx.limit
    try:
        against = comparison_model(rep, served, paper_model)
    except BadValue as exc:
        fail_on(exc, json_out=json_out)

    def on_row(row: Any, outcome: Any) -> None:
        if not json_out:
            what = f"error: {outcome.error}" if outcome.error else f"{outcome.n} questions"
            err_console.print(f"{rep.name} · {row.key}: {what}", soft_wrap=True, markup=False)

    with contextlib.ExitStack() as stack:
        if ctx.llm is not None:
            stack.enter_context(ctx.llm)
        try:
            outcomes = run_reproduction(rep, ctx, rows=chosen, on_row=on_row)
            md_path, json_path = write_report(
                rep, outcomes, out, model=served, paper_model=against, limit=limit
            )
        except OSError as exc:
            fail(f"cannot write the reproduction into {out}: {exc}", json_out=json_out, status=1)
    failed = [o for o in outcomes if o.error is not None]
    if json_out:
        print(json.dumps({"report": str(md_path), **json.loads(json_path.read_text("utf-8"))}))
    else:
        print(md_path.read_text(encoding="utf-8"))
        print(f"report: {md_path}")
    if failed:
        err_console.print(
            f"{len(failed)} of {len(outcomes)} rows failed: "
            + ", ".join(o.key for o in failed), soft_wrap=True, markup=False,
        )  # fmt: skip
        raise typer.Exit(FAILED)


def register(app: typer.Typer) -> None:
    """Add the `reproduce` command to the given (eval) sub-app."""
    app.command("reproduce")(reproduce_command)
