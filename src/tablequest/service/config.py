"""Server settings, limits, the bearer token and the bind check.

Choices (ours): the token is 32 random bytes (URL-safe base64) in a file created with mode
0600 (``<user config dir>/serve-token`` unless ``--token-file``); a token file readable by
group or others is refused rather than silently used. Binding anything but a loopback address
without a token refuses to start. Pages name the token file without the server's folders
(`shown_token_file`, issue 40). `allow_origins` are the web origins whose pages may call
``tablequest mcp --http`` (`normalize_origin` checks and spells them).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import platformdirs

from tablequest.errors import UsageError
from tablequest.llm import LLMConfig
from tablequest.settings import ServeSettings, Settings

if TYPE_CHECKING:
    from tablequest.service.claims import Claim

__all__ = [
    "Limits",
    "ServeConfig",
    "ServeError",
    "check_bind",
    "default_token_file",
    "is_loopback",
    "load_or_create_token",
    "normalize_origin",
    "shown_token_file",
]

MIB = 1024 * 1024


class ServeError(UsageError):
    """The server cannot start as configured; the message names the setting and the fix."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what one client can make the server do.

    Attributes:
        max_file_bytes: Size of one uploaded file.
        max_files: Files in one upload request.
        max_upload_bytes: Body of one upload request (all files together).
        max_total_upload_bytes: Everything ever uploaded into this server's store.
        max_body_bytes: Body of any other request (JSON).
        body_timeout: Seconds a client may take to send the next part of a body (then 408).
        header_timeout: Seconds a connection may take to send a complete request head, from
            its first byte (or from connecting); then it is closed (408 when it sent a part).
        max_connections: Open sockets at once; beyond, the one waiting longest for its
            request head is closed to make room (capped by the open-file limit).
        max_requests: Requests being handled at once, event streams not counted (beyond:
            503 with Retry-After).
        max_streams: Event streams (SSE) open at once (beyond: 429 with Retry-After).
        stream_idle_timeout: Seconds an event stream may wait for the client to take what
            was sent (a client that stops reading); then its connection is dropped.
        max_asks: Asks running at once (beyond: 429 with Retry-After).
        ask_timeout: Seconds an ask may run; it is stopped at its next step after that.
        max_table_rows: Body rows one table request returns at most.
        max_sql_rows: Rows one SQL query returns at most (``/v1/sql``, the SQL page; a
            request asking for more gets this many, marked truncated).
        sql_timeout: Seconds one SQL query may run; then it is interrupted (an error).
        sql_max_bytes: Bytes of result one SQL query returns at most (then truncated).
        pandas_workers: MCP ``run_pandas`` calls running at once, on threads of their own
            (the rest wait, within their timeout), so reads never wait behind them.
        pandas_per_session: ``run_pandas`` calls one MCP session may have running or
            waiting; beyond, refused.
        pandas_cells: Cells of the tables one ``run_pandas`` call binds (each table once),
            checked before any is loaded.
    """

    max_file_bytes: int = 32 * MIB
    max_files: int = 16
    max_upload_bytes: int = 64 * MIB
    max_total_upload_bytes: int = 1024 * MIB
    max_body_bytes: int = 1 * MIB
    body_timeout: float = 30.0
    header_timeout: float = 10.0
    max_connections: int = 4096
    max_requests: int = 512
    max_streams: int = 64
    stream_idle_timeout: float = 60.0
    max_asks: int = 16
    ask_timeout: float = 600.0
    max_table_rows: int = 1000
    max_sql_rows: int = 10_000
    sql_timeout: float = 10.0
    sql_max_bytes: int = 16 * MIB
    pandas_workers: int = 4
    pandas_per_session: int = 2
    pandas_cells: int = 2_000_000

    @classmethod
    def from_settings(cls, serve: ServeSettings) -> Limits:
        """The limits of the ``[serve]`` settings (the rest keep their defaults).

        Raises:
            ServeError: the connections leave no room beyond requests and streams.
        """
        upload = serve.max_upload_mb * MIB
        return cls(
            max_asks=serve.max_asks,
            ask_timeout=serve.ask_timeout,
            max_file_bytes=upload,
            max_upload_bytes=max(64 * MIB, 2 * upload),
            header_timeout=serve.header_timeout,
            body_timeout=serve.body_timeout,
            max_connections=serve.max_connections,
            max_requests=serve.max_requests,
            max_streams=serve.max_streams,
            stream_idle_timeout=serve.stream_idle_timeout,
            pandas_workers=serve.pandas_workers,
            pandas_per_session=serve.pandas_per_session,
            pandas_cells=serve.pandas_cells,
        )

    def __post_init__(self) -> None:
        busy = self.max_requests + self.max_streams
        if self.max_connections <= busy:
            raise ServeError(
                f"--max-connections ({self.max_connections}) must be above --max-requests + "
                f"--max-streams ({busy}): connections waiting for their request head need room"
            )
        for name in ("body_timeout", "header_timeout", "stream_idle_timeout", "sql_timeout"):
            if getattr(self, name) <= 0:
                option = "--" + name.replace("_", "-")
                raise ServeError(f"{option} must be a positive number of seconds")


@dataclass(frozen=True)
class ServeConfig:
    """What `create_app` serves.

    Attributes:
        store: The DuckDB store file (created empty when missing; the CLI refuses a missing
            store unless ``--create``).
        trace_dir: Where ask traces are written and read from.
        token: The bearer token every request must carry (None: no auth, loopback only).
        token_file: Where the token is kept (the login page names it).
        host: The address the server binds (for the bind check and the Host header check).
        port: Its port.
        llm_config: The model asks use (None or unconfigured: LLM-free previews).
        llm_spec: ``gguf:/path`` for a local model instead of a server.
        limits: Request and upload bounds.
        settings: What the entry point loaded (`Settings.load`): embeddings, sandbox, the
            config files of method options, caches (None: the server loads them at start).
        allow_origins: Web origins (``scheme://host[:port]``) whose pages may call the MCP
            HTTP endpoint besides loopback ones on a loopback bind (`normalize_origin`).
        claim: The sockets (and the store's writer lock) the CLI took before the token
            (`tablequest.service.claims`); None: `run_server` / `run_http` take them.
    """

    store: Path
    trace_dir: Path
    token: str | None
    token_file: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    llm_config: LLMConfig | None = None
    llm_spec: str | None = None
    limits: Limits = field(default_factory=Limits)
    settings: Settings | None = None
    allow_origins: tuple[str, ...] = ()
    claim: Claim | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_bind(self.host, self.token)
        origins = tuple(dict.fromkeys(normalize_origin(o) for o in self.allow_origins))
        object.__setattr__(self, "allow_origins", origins)  # frozen: spelled once, here


@functools.lru_cache(maxsize=64)
def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or ``localhost`` (cached: the guard asks it of
    every request's Host header, and parsing an address took a few microseconds)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token.

    Raises:
        ServeError: `host` is reachable from other machines and there is no token.
    """
    if not token and not is_loopback(host):
        raise ServeError(
            f"refusing to bind {host!r} without a token: anyone who can reach it could read "
            "the store and spend the model budget. Pass --token-file FILE (or bind 127.0.0.1)."
        )
    if token is not None and len(token) < 16:
        raise ServeError("the token is too short: use at least 16 characters")


def normalize_origin(value: str) -> str:
    """A web origin as browsers send it in ``Origin``: ``scheme://host[:port]``, lower case,
    without the scheme's default port.

    Raises:
        ServeError: not an http(s) origin (a path, query, user name or no host).
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ServeError(
            f"--allow-origin takes an origin such as https://app.example.com or "
            f"http://localhost:3000 (scheme, host and port only), not {value!r}"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def shown_token_file(path: Path) -> str:
    """How the login page names the token file without the server's folders: its place in
    the user config directory (``~/.config/tablequest/serve-token``, from ``~`` when that
    directory is under the home folder, else ``<user config dir>/serve-token``); a file
    elsewhere (``--token-file``) by its name only. The same on every bind."""
    config = platformdirs.user_config_path("tablequest").resolve()
    try:
        inside = path.expanduser().resolve().relative_to(config)
    except ValueError:
        return path.name
    try:
        return "~/" + (config / inside).relative_to(Path.home().resolve()).as_posix()
    except ValueError:
        return "<user config dir>/" + inside.as_posix()


def default_token_file() -> Path:
    """``<user config dir>/serve-token``."""
    return platformdirs.user_config_path("tablequest") / "serve-token"


def load_or_create_token(path: Path | None = None) -> tuple[str, bool]:
    """The token stored in `path` (default `default_token_file()`), created when missing.

    Returns:
        (token, created): `created` is True when the file was just written (print it once).

    Raises:
        ServeError: the file is readable by group or others, empty, or cannot be written.
    """
    path = (path or default_token_file()).expanduser()
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise ServeError(
                f"token file {str(path)!r} is readable by others (mode {mode:o}); "
                f"run `chmod 600 {path}`"
            )
        token = path.read_text(encoding="utf-8").strip()
        if not token:
            raise ServeError(f"token file {str(path)!r} is empty; delete it to get a new token")
        return token, False
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token + "\n")
    except OSError as exc:
        raise ServeError(f"cannot write token file {str(path)!r}: {exc}") from exc
    return token, True
