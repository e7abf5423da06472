"""Option declarations shared by the commands (declared once, used by ask, eval run, …).

Method options are ``-o NAME VALUE`` (repeatable) or ``-c CONFIG`` (a named paper
configuration); `PairCommand` turns ``-o NAME VALUE`` into ``NAME=VALUE`` before parsing, so
both spellings work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from tablequest.methods.base import Task
from tablequest.methods.options import option_name


class PairCommand(TyperCommand):
    """A command whose ``-o``/``--option`` takes two words, NAME VALUE."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-o", "--option") and i + 2 < len(args) and "=" not in args[i + 1]:
                out += [arg, f"{args[i + 1]}={args[i + 2]}"]
                i += 3
                continue
            out.append(arg)
            i += 1
        result: list[str] = super().parse_args(ctx, out)
        return result


def option_pairs(values: list[str] | None) -> dict[str, str]:
    """``NAME=VALUE`` strings as a mapping (typer.BadParameter for a value without a name)."""
    out: dict[str, str] = {}
    for item in values or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"-o needs NAME VALUE, got {item!r}", param_hint="-o")
        out[option_name(name)] = value
    return out


def task_name(task: str) -> Task:
    """``fact`` / ``fact_verification`` → fact_verification; anything else table QA."""
    return "fact_verification" if task in ("fact", "fact_verification") else "tableqa"


MethodOpt = Annotated[
    str, typer.Option("--method", "-m", help="A registered method (`tablequest methods`).")
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option", "-o", metavar="NAME VALUE", help="A method option (repeatable); see "
        "`tablequest methods NAME`.",
    ),
]  # fmt: skip
ConfigOpt = Annotated[
    str | None,
    typer.Option("--config", "-c", help="A named paper configuration, e.g. 10step-5s1-small."),
]
TaskOpt = Annotated[str, typer.Option(help="tableqa | fact")]
StepsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Cap on LLM calls per question (default: the method's)."),
]
LLMUrlOpt = Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible URL.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model name.")]
ApiKeyOpt = Annotated[str | None, typer.Option("--api-key", help="API key.")]
DeadlineOpt = Annotated[
    float | None,
    typer.Option(
        "--deadline",
        min=0,
        help="Seconds per question for all LLM calls and retries (0 = none; default 600).",
    ),
]
LLMSpecOpt = Annotated[str | None, typer.Option("--llm", help="gguf:/path/model.gguf")]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Do not use the LLM and embedding caches.")
]
TraceDirOpt = Annotated[Path | None, typer.Option(help="Where the JSONL traces go.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
TableIdOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--table-id", help="Tables to answer from (an id, or a file's table index 0, 1, …)."
    ),
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run on Ray: local | auto | ray://HOST:PORT (default: $TABLEQUEST_RAY_ADDRESS).",
    ),
]
LLMUrlsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--llm-url",
        help="OpenAI-compatible URL; repeat it to load-balance several servers "
        "(or `llm_urls = [...]` under [scale] in tablequest.toml).",
    ),
]
