"""`tablequest doctor`: one line per check of the setup (`tablequest.doctor.run_checks`).

Lines are printed as each check finishes: ``✓`` passed, ``✗`` failed, ``–`` information
(not applicable, not installed, not reported: never a failure). ``--json`` prints the list
``[{"check", "ok", "detail"}]`` at the end instead (`ok` true, false or null for –).

Exit statuses (`tablequest.cli._exit`): 0 no check failed; 4 (``NO_MODEL``) the only failure
is that no model is configured, as ``ask`` exits without one; 1 any other failure; 2 a bad
option. Without ``--store`` the default store is checked when it exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli._defaults import CHECKS, MODEL_TIMEOUT
from tablequest.cli._exit import FAILED, NO_MODEL, OK
from tablequest.cli._llm import LLMFlags
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    JsonOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    ModelOpt,
    StoreOpt,
    default_store_path,
)
from tablequest.cli._output import fail

if TYPE_CHECKING:
    from tablequest.doctor import Check, CheckGroup
    from tablequest.settings import Settings

_MARKS = {True: "[green]✓[/green]", False: "[red]✗[/red]", None: "[dim]–[/dim]"}

CheckOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--check",
        metavar="GROUP",
        help="Run only this group of checks (repeatable): " + ", ".join(CHECKS) + ".",
    ),
]
EmbedUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--embed-url", help="An embeddings server (/v1 URL) to check (default: the model's)."
    ),
]
EmbedModelOpt = Annotated[
    str | None, typer.Option("--embed-model", help="Its embedding model (default: the first).")
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds each model request may take.")
]


def _groups(check: list[str] | None, json_out: bool) -> list[CheckGroup]:
    from tablequest.doctor import CHECKS

    chosen: list[CheckGroup] = []
    for name in check or CHECKS:
        group = next((g for g in CHECKS if g == name.strip().lower()), None)
        if group is None:
            fail(f"unknown check {name!r}; one of {', '.join(CHECKS)}", json_out=json_out)
        chosen.append(group)
    return chosen


def _print(check: Check) -> None:
    from rich.markup import escape

    from tablequest.cli._output import console

    console.print(
        f"{_MARKS[check.ok]} {check.check:<15} {escape(check.detail)}",
        soft_wrap=True,
        highlight=False,
    )


def doctor_command(
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    embed_url: EmbedUrlOpt = None,
    embed_model: EmbedModelOpt = None,
    store: StoreOpt = None,
    check: CheckOpt = None,
    timeout: TimeoutOpt = MODEL_TIMEOUT,
    json_out: JsonOpt = False,
) -> None:
    """Check the setup: the model (a chat call, a JSON reply, its context length,
    embeddings), the sandbox's isolation, the installed extras, and that a store opens."""
    from tablequest.doctor import Check, run_checks
    from tablequest.llm import ConfigError, LLMConfig

    groups = _groups(check, json_out)
    checks: list[Check] = []

    def report(item: Check) -> None:
        checks.append(item)
        if not json_out:
            _print(item)

    flags = LLMFlags(llm_url, model, api_key, llm, config_file=config_file)
    settings: Settings | None = None
    try:  # the command's one load
        settings = flags.settings({"embeddings.url": embed_url, "embeddings.model": embed_model})
        config = flags.config(settings)
    except ConfigError as exc:
        config = LLMConfig()
        if "model" in groups:
            report(Check("model", False, str(exc)))
            groups = [g for g in groups if g != "model"]
    if store is None:
        default = default_store_path(settings.store if settings is not None else None)
        store = default if default.exists() else None
    for item in run_checks(
        config,
        settings=settings,
        llm_spec=llm,
        embed_url=embed_url,
        embed_model=embed_model,
        store=Path(store) if store is not None else None,
        only=groups,
        timeout=timeout,
    ):
        report(item)
    failed = [c for c in checks if c.ok is False]
    if json_out:
        typer.echo(json.dumps([c.to_json() for c in checks], indent=2, ensure_ascii=False))
    else:
        from tablequest.cli._output import console

        console.print(
            f"{len(failed)} of {len(checks)} checks failed" if failed else "no check failed",
            highlight=False,
        )
    if not failed:
        raise typer.Exit(OK)
    raise typer.Exit(NO_MODEL if all(c.no_model for c in failed) else FAILED)
