"""`tablequest mcp STORE`: serve a store to MCP clients (one library call: `run_stdio` /
`run_http` over `open_service`).

stdio by default (an MCP client starts the command; stdout belongs to the protocol, so this
command prints only to stderr). ``--http HOST:PORT`` serves Streamable HTTP at ``/mcp``
instead, with the token of ``tablequest serve`` (the same token file, created with mode 0600
when missing) required on every request, on 127.0.0.1 unless told otherwise, and ``serve``'s
connection bounds and timeouts (``[serve]`` settings); a browser page's ``Origin`` must be one
``--allow-origin`` names (loopback ones on a loopback bind). The port is bound before the
token is made or printed: one in use is one ``error:`` line and exit 1. The store is opened
read-only and not locked (``mcp`` never writes it: several may serve one store, beside a
``serve``); a missing store or a file that is not one is refused as by ``serve``.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from tablequest.cli import _exit
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    ModelOpt,
    NoCacheOpt,
    TraceDirOpt,
)
from tablequest.cli._output import fail, fail_on

MCP_EXTRA_HINT = "tablequest mcp needs the mcp extra: pip install 'tablequest[mcp]'"


def mcp_command(
    store: Annotated[
        Path, typer.Argument(help="The store to serve (tablequest ingest builds one).")
    ],
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve Streamable HTTP at http://HOST:PORT/mcp (token required), not stdio.",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the bearer token for --http (created if missing)."),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="ORIGIN",
            help="A web origin (https://host[:port]) whose pages may call --http; repeatable. "
            "Other origins get 403 (loopback ones are allowed on a loopback bind).",
        ),
    ] = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    no_cache: NoCacheOpt = False,
    trace_dir: TraceDirOpt = None,
    max_asks: Annotated[int, typer.Option(min=1, help="Asks running at once.")] = 4,
    ask_timeout: Annotated[float, typer.Option(min=1, help="Seconds an ask may run.")] = 600.0,
) -> None:
    """Serve a store to MCP clients: tools, one resource per table, a prompt (stdio or HTTP)."""
    try:
        from tablequest.mcpserver import open_service, parse_bind, run_http, run_stdio
        from tablequest.service import Limits, ServeConfig, claim, load_or_create_token
    except ImportError:
        fail(MCP_EXTRA_HINT)
    from tablequest.cli._llm import LLMFlags
    from tablequest.cli._output import err_console
    from tablequest.errors import TablequestError
    from tablequest.service import default_token_file
    from tablequest.trace import default_trace_dir

    path = store_path(store)
    try:
        host, port = parse_bind(http) if http else ("127.0.0.1", 0)
        # the port before the token is made or printed; a reader: no writer lock
        held = claim(None, host, port, hint="--http HOST:PORT") if http else None
    except TablequestError as exc:
        fail_on(exc)
    with held or contextlib.nullcontext():
        try:
            token: str | None = None
            created = False
            token_path = (token_file or default_token_file()).expanduser()
            if http:
                token, created = load_or_create_token(token_path)
            flags = LLMFlags(llm_url, model, api_key, llm, no_cache, config_file=config_file)
            more = {
                "traces.dir": trace_dir,
                "serve.allow_origins": tuple(allow_origin or ()) or None,
            }
            settings = flags.settings(more)  # the server's one load
            # [serve]'s connection bounds and timeouts; this command's own asks
            limits = Limits.from_settings(settings.serve)
            limits = replace(limits, max_asks=max_asks, ask_timeout=ask_timeout)
            config = ServeConfig(
                store=path, trace_dir=default_trace_dir(settings.traces), token=token,
                token_file=token_path if http else None, host=host, port=port,
                llm_config=flags.config(settings), llm_spec=llm, limits=limits,
                settings=settings, allow_origins=settings.serve.allow_origins, claim=held,
            )  # fmt: skip
            service = open_service(config)
        except TablequestError as exc:  # a bad flag or token file (2), a store that cannot open
            fail_on(exc)
        if not http:
            run_stdio(service)
            return
        shown = f"[{host}]" if ":" in host else host
        if created:
            err_console.print(f"New token (shown once): {token}", soft_wrap=True, markup=False)
        err_console.print(
            f"MCP endpoint: http://{shown}:{port}/mcp (Authorization: Bearer TOKEN)\n"
            f"Token file: {token_path}\nStore: {path}",
            soft_wrap=True, markup=False, highlight=False,
        )  # fmt: skip
        run_http(service)


def store_path(store: Path) -> Path:
    """`store` when it is a store; else exit 2 naming the fix (``serve``'s check names its
    ``--create``, which ``mcp`` has not; a folder or a table file is ingested first)."""
    from tablequest.corpus import what_is

    path = store.expanduser()
    if not path.exists():
        fail(
            f"no store at {str(store)!r}: build one first with "
            f"`tablequest ingest PATH... --store {store}`",
            code="no_store",
            status=_exit.USAGE,
        )
    kind = what_is(path)
    if kind is not None:
        fail(
            f"{str(store)!r} is {kind}, not a store: ingest it into one first "
            f"(`tablequest ingest {store} --store corpus.duckdb`), then serve that store",
            code="not_a_store",
            status=_exit.USAGE,
        )
    return path


def register(app: typer.Typer) -> None:
    """Add `tablequest mcp` to the application."""
    app.command("mcp")(mcp_command)
