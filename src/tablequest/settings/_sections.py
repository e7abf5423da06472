"""The settings, section by section: every field's type, default, variables, flag and help.

A section's TOML table has the section's name (``[llm]``, ``[reading]``, …) and its keys are
the field names. This is the one place a setting is declared; docs/config.md is rendered
from it (`tablequest.settings.markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from tablequest.settings._spec import (
    Parser,
    boolean,
    byte_size,
    choice,
    count,
    days,
    device,
    filepath,
    limit,
    megabytes,
    number,
    seconds,
    setting,
    strings,
    text,
)

WHERE_DATA_GOES = "chooses where prompts, tables or the key go"
COSTS = "above the default, raises what a question costs on your key"


class ModelServer(Protocol):
    """Where a model lives: `LLMSettings`, or `tablequest.llm.LLMConfig` as resolved."""

    @property
    def url(self) -> str | None: ...

    @property
    def api_key(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """The model server (OpenAI-compatible) and how it is called."""

    url: str | None = setting(
        None, "The OpenAI-compatible /v1 URL (none: OpenAI's API when a key is set).", text,
        env=("TABLEQUEST_LLM_URL", "OPENAI_BASE_URL"), flag="--llm-url", guarded=WHERE_DATA_GOES,
    )  # fmt: skip
    model: str | None = setting(
        None, "The model name.", text, env="TABLEQUEST_LLM_MODEL", flag="--model",
        guarded="with your key it picks the service and price that receive the tables",
    )  # fmt: skip
    api_key: str | None = setting(
        None, "The API key.", text, env=("TABLEQUEST_LLM_KEY", "OPENAI_API_KEY"),
        flag="--api-key", guarded=WHERE_DATA_GOES, secret=True,
    )  # fmt: skip
    timeout: float = setting(
        60.0, "Seconds of silence per HTTP attempt.", number(float), env="TABLEQUEST_LLM_TIMEOUT",
        guarded=COSTS,
    )  # fmt: skip
    max_retries: int = setting(
        3, "Retries of a failed call.", number(int, zero=True), guarded=COSTS
    )
    max_concurrency: int = setting(
        4, "Calls in flight at once.", number(int, least=1), flag="--llm-concurrency (serve)"
    )
    cache: bool = setting(True, "Cache temperature-0 calls on disk.", boolean, flag="--no-cache")
    deadline: float = setting(
        600.0, "Seconds per question for all calls and retries (0: none).",
        number(float, zero=True), env="TABLEQUEST_DEADLINE", flag="--deadline",
        guarded=COSTS + " (0: none, the costliest)",
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class EmbeddingsSettings:
    """Where dense retrieval embeds text: a server's /v1/embeddings, or MiniLM here."""

    url: str | None = setting(
        None, "An OpenAI-compatible /v1 URL serving embeddings.", text,
        env="TABLEQUEST_EMBED_URL", flag="--embed-url (doctor), -o embed_url",
        guarded=WHERE_DATA_GOES, default_text="the LLM server's URL",
    )  # fmt: skip
    model: str | None = setting(
        None,
        "The embedding model (none: encoder auto takes the first the server lists; api needs one).",
        text,
        env="TABLEQUEST_EMBED_MODEL", flag="--embed-model (doctor), -o embed_model",
        guarded=WHERE_DATA_GOES,
    )  # fmt: skip
    device: str | None = setting(
        None, "Where the MiniLM encoders run: auto, cpu, cuda or cuda:N. From the environment "
        "it is a preference encoders without a device ignore; a flag is a demand.", device,
        env="TABLEQUEST_DEVICE", flag="--device", toml=False, default_text="auto",
    )  # fmt: skip

    def endpoint(
        self, llm: ModelServer | None, url: str | None = None
    ) -> tuple[str | None, str | None]:
        """(URL, key) of the embeddings server: `url` (a method's ``embed_url`` option), else
        this section's URL, else the LLM server's (`llm`: its settings or resolved config);
        the key is the LLM server's. The one rule for "embeddings default to the LLM"."""
        chosen = url or self.url or (llm.url if llm is not None else None)
        return chosen, llm.api_key if llm is not None else None


READING_GUARD = "a corpus's file must not lift the limits that protect from its tables"


def _limit(default: int | float | None, help: str, env: str, fractional: bool = False) -> Any:
    return setting(
        default, help + " (0 or none: no limit).", limit(fractional), env=env,
        flag="--budget NAME=VALUE (ingest)", guarded=READING_GUARD,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ReadingSettings:
    """The reading budget: how much one file, and one ingest, may cost to read
    (docs/reliability.md, "Reading budgets")."""

    free_cells: int | None = _limit(
        1_000_000, "Cells any file may describe, whatever its size", "TABLEQUEST_READ_FREE_CELLS"
    )
    cells_per_byte: float | None = _limit(
        1.0, "More cells per byte of a larger file", "TABLEQUEST_READ_CELLS_PER_BYTE", True
    )
    max_cells: int | None = _limit(
        20_000_000, "Cells of one file, at most", "TABLEQUEST_READ_MAX_CELLS"
    )
    max_decoded_bytes: int | None = _limit(
        32 * 1024**2, "Decoded bytes of a binary file's values (or 32 per byte of the file)",
        "TABLEQUEST_READ_MAX_BYTES",
    )  # fmt: skip
    max_seconds: float | None = _limit(
        20.0, "Seconds of reading per file", "TABLEQUEST_READ_MAX_SECONDS", True
    )
    max_columns: int | None = _limit(5_000, "Columns per table", "TABLEQUEST_READ_MAX_COLUMNS")
    ingest_cells: int | None = _limit(
        100_000_000, "Cells of one ingest in all", "TABLEQUEST_INGEST_MAX_CELLS"
    )
    ingest_seconds: float | None = _limit(
        None, "Seconds of one ingest", "TABLEQUEST_INGEST_MAX_SECONDS", True
    )


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Where generated Python runs (docs/security.md)."""

    isolation: Literal["strict", "degraded"] = setting(
        "strict", 'strict (bubblewrap, or refuse) or degraded (rlimits, Landlock and seccomp '
        "where they exist).", choice("strict", "degraded"), env="TABLEQUEST_SANDBOX",
        flag="Sandbox(isolation=)", guarded='"degraded" weakens isolation',
    )  # fmt: skip
    memory_budget_mb: int | None = setting(
        None, "MB all sandbox children of a process may reserve at once.", megabytes,
        env="TABLEQUEST_SANDBOX_MEMORY_BUDGET", flag="Sandbox(memory_budget=)", toml=False,
        default_text="half the physical memory",
    )  # fmt: skip


def _keep(default: object, help: str, parse: Parser, env: str) -> Any:
    return setting(default, help + " (0: no limit).", parse, env=env, toml=False)


@dataclass(frozen=True, slots=True)
class TracesSettings:
    """Where the JSONL traces (and DTR's charts) go, and how many are kept."""

    dir: Path | None = setting(  # noqa: RUF009 (a field, as everywhere here)
        None, "The trace folder.", filepath, env="TABLEQUEST_TRACE_DIR", flag="--trace-dir",
        toml=False, default_text="traces under the user data directory",
    )  # fmt: skip
    keep: int | None = _keep(1000, "Trace files kept", count, "TABLEQUEST_TRACE_KEEP")
    keep_bytes: int | None = _keep(
        1024**3, "Bytes of trace files kept (500M, 2G, …)", byte_size, "TABLEQUEST_TRACE_KEEP_BYTES"
    )
    keep_days: float | None = _keep(
        30.0, "Days a trace file is kept", days, "TABLEQUEST_TRACE_KEEP_DAYS"
    )
    charts_keep: int | None = _keep(1000, "Chart folders kept", count, "TABLEQUEST_CHARTS_KEEP")
    charts_keep_bytes: int | None = _keep(
        1024**3, "Bytes of chart folders kept", byte_size, "TABLEQUEST_CHARTS_KEEP_BYTES"
    )
    charts_keep_days: float | None = _keep(
        30.0, "Days a chart folder is kept", days, "TABLEQUEST_CHARTS_KEEP_DAYS"
    )


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """The corpus store, its lock, and the caches."""

    path: Path | None = setting(  # noqa: RUF009
        None, "The store: a DuckDB file or a sharded corpus's manifest.", filepath,
        env="TABLEQUEST_STORE", flag="--store", toml=False,
        default_text="corpus.duckdb under the user data directory",
    )  # fmt: skip
    lock_timeout: float = setting(
        10.0, "Seconds to wait for a store another process holds.", seconds,
        env="TABLEQUEST_LOCK_TIMEOUT", toml=False,
    )  # fmt: skip
    cache_dir: Path | None = setting(  # noqa: RUF009
        None, "The LLM, embedding and index caches.", filepath, env="TABLEQUEST_CACHE_DIR",
        flag="--dir (cache)", toml=False, default_text="the user cache directory",
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScaleSettings:
    """Ray and several model servers (docs/scale.md)."""

    ray_address: str | None = setting(
        None, "Run on Ray: local, auto or ray://HOST:PORT.", text,
        env="TABLEQUEST_RAY_ADDRESS", flag="--ray", toml=False,
    )  # fmt: skip
    llm_urls: tuple[str, ...] = setting(
        (), "Model servers to load-balance (batch asks, eval).", strings,
        flag="--llm-url (repeated)", guarded=WHERE_DATA_GOES,
        default_text="the one [llm] url",
    )  # fmt: skip


EXPOSES = "binds the server where others can reach the store"


def _serve(default: int | float, help: str, flag: str, least: float) -> Any:
    # `least` is also the flag's min (tests/test_settings.py checks they agree)
    kind = int if isinstance(default, int) else float
    return setting(default, help, number(kind, least=least), flag=flag)


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """`tablequest serve`: where it listens and the bounds on what one client can make it do
    (`tablequest.service.Limits`; the model's concurrency is `[llm] max_concurrency`).
    `tablequest mcp --http` takes the timeouts, connection, request and stream bounds and the
    allowed origins from here too (its own flags set its bind, token file and asks)."""

    host: str = setting(
        "127.0.0.1", "The address to bind (anything but loopback needs a token).", text,
        flag="--host", guarded=EXPOSES,
    )  # fmt: skip
    port: int = setting(8765, "The port.", number(int, least=1, most=65535), flag="--port")
    token_file: Path | None = setting(  # noqa: RUF009
        None, "The file holding the bearer token (created with mode 0600 when missing).",
        filepath, flag="--token-file", guarded="chooses the secret that opens the server",
        default_text="serve-token in the user config directory",
    )  # fmt: skip
    max_asks: int = _serve(16, "Asks running at once (then 429).", "--max-asks", 1)
    ask_timeout: float = _serve(600.0, "Seconds an ask may run.", "--ask-timeout", 1)
    max_upload_mb: int = _serve(
        32, "MiB of one uploaded file (an upload request: twice that, at least 64).",
        "--max-upload-mb", 1,
    )  # fmt: skip
    header_timeout: float = _serve(
        10.0, "Seconds to send a complete request head (then closed).", "--header-timeout", 0.1
    )
    body_timeout: float = _serve(
        30.0, "Seconds to send the next part of a body (then 408).", "--body-timeout", 0.1
    )
    max_connections: int = _serve(
        4096, "Open sockets; beyond, the longest-waiting one is closed.", "--max-connections", 2
    )
    max_requests: int = _serve(
        512, "Requests handled at once, event streams aside (then 503).", "--max-requests", 1
    )
    max_streams: int = _serve(64, "Event streams open at once (then 429).", "--max-streams", 1)
    stream_idle_timeout: float = _serve(
        60.0, "Seconds an event stream waits for its client to read.", "--stream-idle-timeout",
        0.1,
    )  # fmt: skip
    pandas_workers: int = setting(
        4, "MCP `run_pandas` calls running at once; the rest wait, within their timeout.",
        number(int),
    )  # fmt: skip
    pandas_per_session: int = setting(
        2, "MCP `run_pandas` calls one client session may have running or waiting (then "
        "refused).", number(int),
    )  # fmt: skip
    pandas_cells: int = setting(
        2_000_000, "Cells of the tables one MCP `run_pandas` call may bind (each table once).",
        number(int),
    )  # fmt: skip
    allow_origins: tuple[str, ...] = setting(
        (), "Web origins (scheme://host[:port]) whose pages may call `mcp --http` (others: 403).",
        strings, flag="--allow-origin (repeated)",
        guarded="lets pages of other sites call the server",
        default_text="none (loopback origins on a loopback bind)",
    )  # fmt: skip


SECTIONS: dict[str, type] = {
    "llm": LLMSettings,
    "embeddings": EmbeddingsSettings,
    "reading": ReadingSettings,
    "sandbox": SandboxSettings,
    "traces": TracesSettings,
    "store": StoreSettings,
    "scale": ScaleSettings,
    "serve": ServeSettings,
}
"""Section name (its TOML table and the `Settings` attribute) → its dataclass."""
