"""`tablequest serve`: start the HTTP API and web app (one library call: `run_server`).

A store that does not exist is refused (a typo must not serve an empty store) unless
``--create`` asks for a new empty one; a file that is not a DuckDB store is refused. Every
start prints where the token file is (the login page says it too).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli import _exit
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    ModelOpt,
    NoCacheOpt,
    StoreOpt,
    TraceDirOpt,
    default_store_path,
)
from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.serve import ServeConfig as ServeConfigLike

SERVE_EXTRA_HINT = "tablequest serve needs the serve extra: pip install 'tablequest[serve]'"


def serve_command(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option(help="Address to bind (non-loopback needs a token).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port.")] = 8765,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the bearer token (created with mode 0600 if missing)."),
    ] = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # named for the command by its callback
    llm: LLMSpecOpt = None,
    no_cache: NoCacheOpt = False,
    trace_dir: TraceDirOpt = None,
    max_asks: Annotated[int, typer.Option(min=1, help="Asks running at once (then 429).")] = 16,
    llm_concurrency: Annotated[
        int | None, typer.Option(min=1, help="LLM calls in flight at once (default: config's).")
    ] = None,
    ask_timeout: Annotated[float, typer.Option(min=1, help="Seconds an ask may run.")] = 600.0,
    max_upload_mb: Annotated[int, typer.Option(min=1, help="Size of one uploaded file, MiB.")] = 32,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds to send a complete request head (then closed).")
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds to send the next part of a body (then 408).")
    ] = 30.0,
    max_connections: Annotated[
        int, typer.Option(min=2, help="Open sockets; beyond, the longest-waiting one is closed.")
    ] = 4096,
    max_requests: Annotated[
        int, typer.Option(min=1, help="Requests handled at once, streams aside (then 503).")
    ] = 512,
    max_streams: Annotated[
        int, typer.Option(min=1, help="Event streams open at once (then 429).")
    ] = 64,
    stream_idle_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a stream waits for a client to read.")
    ] = 60.0,
    create: Annotated[
        bool, typer.Option("--create", help="Create the store, empty, when it does not exist.")
    ] = False,
) -> None:
    """Serve the web app and the /v1 HTTP API over a store (token required on every request)."""
    try:
        from tablequest.serve import (
            Limits,
            ServeConfig,
            ServeError,
            load_or_create_token,
            run_server,
        )
    except ImportError:
        fail(SERVE_EXTRA_HINT)
    from tablequest.cli._llm import LLMFlags
    from tablequest.corpus.storage.storefile import StoreError
    from tablequest.llm.config import ConfigError
    from tablequest.serve import default_token_file
    from tablequest.trace import default_trace_dir
    from tablequest.trace.retention import RetentionError, chart_retention, trace_retention

    try:  # a bad TABLEQUEST_TRACE_KEEP* / CHARTS_KEEP* fails the start, not each ask
        trace_retention(), chart_retention()
    except RetentionError as exc:
        fail(str(exc), code="bad_retention", status=_exit.USAGE)
    store = check_store(store or default_store_path(), create=create)
    token_path = (token_file or default_token_file()).expanduser()
    try:
        token, created = load_or_create_token(token_path)
        flags = LLMFlags(llm_url, model, api_key, llm, no_cache, max_concurrency=llm_concurrency)
        llm_config = flags.config()  # the server builds the model (`serve.state`)
        limits = Limits(
            max_asks=max_asks,
            ask_timeout=ask_timeout,
            max_file_bytes=max_upload_mb * 1024 * 1024,
            max_upload_bytes=max(64, 2 * max_upload_mb) * 1024 * 1024,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            max_connections=max_connections,
            max_requests=max_requests,
            max_streams=max_streams,
            stream_idle_timeout=stream_idle_timeout,
        )
        config = ServeConfig(
            store=store,
            trace_dir=trace_dir or default_trace_dir(),
            token=token,
            token_file=token_path,
            host=host,
            port=port,
            llm_config=llm_config,
            llm_spec=llm,
            limits=limits,
        )
    except (ServeError, ConfigError) as exc:
        fail(str(exc))
    _banner(config, token, created=created)
    try:  # a store held by another process (an ingest, another serve): one line, exit 1
        run_server(config)
    except StoreError as exc:
        fail_on(exc)


def _banner(config: ServeConfigLike, token: str, *, created: bool) -> None:
    """Where to open the app, the token (once, when new), the token file (every start)."""
    from tablequest.cli._output import console

    host, port = config.host, config.port
    shown = f"[{host}]" if ":" in host else host
    if created:
        console.print(f"New token (stored in the token file, shown once): [bold]{token}[/bold]")
        console.print(f"Open http://{shown}:{port}/login?token={token}", soft_wrap=True)
    else:
        console.print(f"Open http://{shown}:{port}/login and paste the token from the token file")
    console.print(f"Token file: {config.token_file}", soft_wrap=True, markup=False, highlight=False)
    console.print(
        f"API: http://{shown}:{port}/v1 (Authorization: Bearer TOKEN); store {config.store}",
        soft_wrap=True, markup=False, highlight=False,
    )  # fmt: skip


def check_store(path: Path, *, create: bool) -> Path:
    """`path` when it is a store (or may be created); exit 2 naming the fix otherwise."""
    from tablequest.corpus.storage.storefile import what_is

    path = path.expanduser()
    if not path.exists():
        if create:
            return path
        fail(
            f"no store at {str(path)!r}: pass --create to serve a new empty store there, or "
            f"build one first with `tablequest ingest PATH... --store {path}`",
            code="no_store",
            status=_exit.USAGE,
        )
    kind = what_is(path)
    if kind is not None:
        fail(f"{str(path)!r} is {kind}, not a store", code="not_a_store", status=_exit.USAGE)
    return path


def register(app: typer.Typer) -> None:
    """Add `tablequest serve` to the application."""
    app.command("serve")(serve_command)
