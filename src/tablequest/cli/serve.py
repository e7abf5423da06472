"""`tablequest serve`: start the HTTP API and web app (one library call: `run_server`).

A store that does not exist is refused (a typo must not serve an empty store) unless
``--create`` asks for a new empty one; a file that is not a DuckDB store is refused. Before
the token is made or printed, the store's writer lock and the port are taken
(`tablequest.service.claims`): a store another ``serve`` writes, or a port in use, is one
``error:`` line and exit 1. Every start prints where the token file is (the login page says
it too).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli import _exit
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    DeviceOpt,
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
    from tablequest.service import ServeConfig as ServeConfigLike

SERVE_EXTRA_HINT = "tablequest serve needs the serve extra: pip install 'tablequest[serve]'"


def serve_command(
    store: StoreOpt = None,
    host: Annotated[
        str | None,
        typer.Option(help="Address to bind (non-loopback needs a token; default 127.0.0.1)."),
    ] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (default 8765).")] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the bearer token (created with mode 0600 if missing)."),
    ] = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,
    llm: LLMSpecOpt = None,
    no_cache: NoCacheOpt = False,
    trace_dir: TraceDirOpt = None,
    device: DeviceOpt = None,
    max_asks: Annotated[
        int | None, typer.Option(min=1, help="Asks running at once (then 429; default 16).")
    ] = None,
    llm_concurrency: Annotated[
        int | None, typer.Option(min=1, help="LLM calls in flight at once (default: config's).")
    ] = None,
    ask_timeout: Annotated[
        float | None, typer.Option(min=1, help="Seconds an ask may run (default 600).")
    ] = None,
    max_upload_mb: Annotated[
        int | None, typer.Option(min=1, help="Size of one uploaded file, MiB (default 32).")
    ] = None,
    header_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1, help="Seconds to send a complete request head (then closed; default 10)."
        ),
    ] = None,
    body_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1, help="Seconds to send the next part of a body (then 408; default 30)."
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=2, help="Open sockets; beyond, the longest-waiting one is closed (default 4096)."
        ),
    ] = None,
    max_requests: Annotated[
        int | None,
        typer.Option(
            min=1, help="Requests handled at once, streams aside (then 503; default 512)."
        ),
    ] = None,
    max_streams: Annotated[
        int | None, typer.Option(min=1, help="Event streams open at once (then 429; default 64).")
    ] = None,
    stream_idle_timeout: Annotated[
        float | None,
        typer.Option(min=0.1, help="Seconds a stream waits for a client to read (default 60)."),
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="Create the store, empty, when it does not exist.")
    ] = False,
) -> None:
    """Serve the web app and the /v1 HTTP API over a store (token required on every request).

    Every option but --create, --llm and --config-file is a setting: the environment or
    [serve] / [llm] in tablequest.toml set it too (docs/config.md)."""
    try:
        from tablequest.serve import run_server
        from tablequest.service import CannotListen, Limits, ServeConfig, ServeError, claim
    except ImportError:
        fail(SERVE_EXTRA_HINT)
    from tablequest.cli._llm import LLMFlags, settings_or_fail
    from tablequest.corpus import StoreError
    from tablequest.llm import ConfigError, LLMConfig
    from tablequest.trace import default_trace_dir
    from tablequest.trace.retention import RetentionError, chart_retention, trace_retention

    flags = LLMFlags(
        llm_url, model, api_key, llm, no_cache, max_concurrency=llm_concurrency,
        config_file=config_file,
    )  # fmt: skip
    limits = {
        "max_asks": max_asks, "ask_timeout": ask_timeout, "max_upload_mb": max_upload_mb,
        "header_timeout": header_timeout, "body_timeout": body_timeout,
        "max_connections": max_connections, "max_requests": max_requests,
        "max_streams": max_streams, "stream_idle_timeout": stream_idle_timeout,
    }  # fmt: skip
    more = {f"serve.{name}": value for name, value in limits.items()} | {
        "serve.host": host, "serve.port": port, "serve.token_file": token_file,
        "traces.dir": trace_dir, "store.path": store, "embeddings.device": device,
    }  # fmt: skip
    settings = settings_or_fail(flags, more)  # the command's one load
    try:  # a bad TABLEQUEST_TRACE_KEEP* / CHARTS_KEEP* fails the start, not each ask
        trace_retention(traces=settings.traces), chart_retention(traces=settings.traces)
    except RetentionError as exc:
        fail_on(exc)
    store = check_store(default_store_path(settings.store), create=create)
    serve = settings.serve
    try:  # the store's writer lock and the port, before the token is made or printed
        held = claim(store, serve.host, serve.port)
    except (StoreError, CannotListen) as exc:
        fail_on(exc)
    with held:
        try:
            token_path, (token, created) = _token(serve.token_file)
            config = ServeConfig(
                store=store,
                trace_dir=default_trace_dir(settings.traces),
                token=token,
                token_file=token_path,
                host=serve.host,
                port=serve.port,
                llm_config=LLMConfig.from_settings(settings),  # the server builds the model
                llm_spec=llm,
                limits=Limits.from_settings(serve),
                settings=settings,
                claim=held,
            )
        except (ServeError, ConfigError) as exc:
            fail_on(exc)
        _banner(config, token, created=created)
        try:  # a store held by another process (an ingest): one line, exit 1
            run_server(config)
        except StoreError as exc:
            fail_on(exc)


def _token(token_file: Path | None) -> tuple[Path, tuple[str, bool]]:
    """(the token file, (its token, whether it was just created)).

    Raises:
        ServeError: the file is readable by others, empty, or cannot be written.
    """
    from tablequest.service import default_token_file, load_or_create_token

    path = (token_file or default_token_file()).expanduser()
    return path, load_or_create_token(path)


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
    from tablequest.corpus import what_is

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
