"""Resolve which model to use: flags > environment > tablequest.toml > defaults (the [llm]
section of `tablequest.settings`, which declares each key, variable and trust rule).

Environment: TABLEQUEST_LLM_URL, TABLEQUEST_LLM_MODEL, TABLEQUEST_LLM_KEY,
TABLEQUEST_LLM_TIMEOUT (seconds), TABLEQUEST_DEADLINE (seconds per question), then the
standard OPENAI_BASE_URL / OPENAI_API_KEY.
Files: ``tablequest.toml`` in the working directory, then in the user config directory;
keys of the first override keys of the second. Layout::

    [llm]
    url = "http://localhost:8000/v1"
    model = "Qwen/Qwen3-8B"
    timeout = 60          # seconds of silence per HTTP attempt
    deadline = 600        # seconds per question, all calls and retries (0 = none)
    max_retries = 3
    max_concurrency = 4
    cache = true          # temperature-0 calls only

    [prices]              # USD per 1k prompt tokens, per 1k completion tokens
    "gpt-4o-mini" = [0.00015, 0.0006]

Choices: a model without a URL means OpenAI's API when an API key is set; a URL without a
model is a configuration error (servers differ in what they would pick).

Backends (`tablequest.llm.backends`): ``--llm NAME[:ARG][,KEY=VALUE...]`` builds the
registered backend NAME from validated options instead of the server above; built in:
``gguf``; installed distributions add backends under the entry-point group
``tablequest.llms``, loaded on the first lookup (`tablequest.plugins`).

Trust (`tablequest.configfile`): an untrusted ``tablequest.toml`` in the working directory
cannot set ``url``, ``model`` or ``api_key`` (where the prompts and the key go); they are
ignored and `LLMConfig.notes` says so, for the caller to show.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tablequest import configfile
from tablequest.configfile import ConfigFile, ConfigFileError
from tablequest.errors import UsageError
from tablequest.llm.backends import (
    BackendFactory,
    BackendOptions,
    GGUFOptions,
    LLMBackend,
    NoBackendOptions,
    SpecArgOptions,
    build_gguf,
)
from tablequest.llm.base import LLM, ModelUnreachable
from tablequest.llm.cache import CachedLLM
from tablequest.llm.deadline import DEFAULT_DEADLINE, Deadline
from tablequest.llm.instrument import Instrumented
from tablequest.llm.modelserver import ModelServer, ModelServerError
from tablequest.llm.openai_compat import OpenAICompatible
from tablequest.llm.usage import UsageMeter
from tablequest.plugins import LLMS_GROUP, Plugins
from tablequest.settings import Settings, load_section
from tablequest.trace import Trace

CONFIG_FILE = configfile.CONFIG_FILE
OPENAI_URL = "https://api.openai.com/v1"
NOT_CONFIGURED_HINT = (
    "No LLM configured: pass --llm-url http://localhost:8000/v1 --model NAME, or set "
    "TABLEQUEST_LLM_URL/TABLEQUEST_LLM_MODEL (any OpenAI-compatible server: vLLM, SGLang, "
    "Ollama, llama.cpp, OpenAI), or --llm gguf:/path/model.gguf for a local file. "
    "`tablequest doctor` checks the model and the rest of the setup."
)


class ConfigError(UsageError):
    """A configuration value or file that cannot be used; the message names it and the fix."""


SpecFactory = Callable[[str], LLM]
_SPECS: dict[str, LLMBackend] = {}
_PLUGINS = Plugins(LLMS_GROUP)


def register_llm_backend(
    name: str,
    factory: BackendFactory,
    options: type[BackendOptions] = NoBackendOptions,
    *,
    description: str = "",
) -> LLMBackend:
    """Make ``--llm NAME[:ARG][,KEY=VALUE...]`` build ``factory(options)`` (or replace it).

    Raises:
        ValueError: a bad name, or options that are not a `BackendOptions` subclass.
    """
    key = name.lower()
    if not key or not all(c.isalnum() or c in "-_" for c in key):
        raise ValueError(f"bad LLM backend name {name!r}: use letters, digits, '-', '_'")
    if not (isinstance(options, type) and issubclass(options, BackendOptions)):
        raise ValueError(f"LLM backend {name}: options must be a BackendOptions subclass")
    backend = LLMBackend(key, factory, options, description)
    _SPECS[key] = backend
    return backend


def register_llm_spec(prefix: str, factory: SpecFactory) -> None:
    """Make ``--llm PREFIX:ARG`` build ``factory(ARG)`` (a backend whose one option is ARG)."""
    register_llm_backend(prefix, lambda options: factory(options.arg), SpecArgOptions)


def llm_backends() -> list[LLMBackend]:
    """Every registered backend (built in and plugins), by name."""
    _PLUGINS.load()
    return [_SPECS[name] for name in sorted(_SPECS)]


def _backend_llm(spec: str, options: Mapping[str, Any] | None) -> LLM:
    """The model of a ``--llm`` spec; options given here override the spec's."""
    _PLUGINS.load()
    name, _, arg = spec.partition(":")
    backend = _SPECS.get(name.lower())
    if backend is None:
        known = ", ".join(
            f"{b.name}:..." if b.options.ARG else b.name
            for b in map(_SPECS.get, sorted(_SPECS))
            if b is not None
        )
        raise ConfigError(
            f"unknown --llm {spec!r}; expected one of {known} (e.g. gguf:/path/to/model.gguf)"
        )
    try:
        values = {**backend.parse_arg(arg), **(options or {})}
        validated = backend.make_options(values)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return backend.factory(validated)


register_llm_backend(
    "gguf", build_gguf, GGUFOptions, description="a local GGUF model file through llama.cpp"
)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Resolved LLM settings. `sources` says where each value came from (flag/env/file/default)."""

    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    max_concurrency: int = 4
    cache: bool = True
    deadline: float = DEFAULT_DEADLINE
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """Warnings for the user: guarded keys ignored in an untrusted config file."""

    @property
    def configured(self) -> bool:
        """Whether a URL or a model was given at all."""
        return bool(self.url or self.model)

    def question_deadline(self) -> Deadline:
        """A fresh `Deadline` for one question, starting now (no limit when deadline = 0)."""
        return Deadline(self.deadline or None)

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMConfig:
        """The ``[llm]`` section of loaded settings (`Settings.load`, the one load of an entry
        point), where each value came from, the ``[prices]`` of its files and its notes.

        Raises:
            ConfigError: a file's ``[prices]`` is malformed.
        """
        llm = settings.llm
        names = [f.name for f in fields(llm)]
        return cls(
            **{name: getattr(llm, name) for name in names},
            prices=_prices_of(list(settings.files)),
            sources={name: settings.source(f"llm.{name}") for name in names},
            notes=settings.notes,
        )


def config_files(cwd: str | Path | None = None) -> list[ConfigFile]:
    """The config files to read, highest precedence first, each with its trust decided
    (`tablequest.configfile.find`: a named file, else cwd then the user config dir).

    Raises:
        ConfigError: a file is unreadable or not valid TOML.
    """
    try:
        return configfile.find(cwd)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from exc


def _prices(table: Any, where: str) -> dict[str, tuple[float, float]]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [prices] must be a table of model = [in_per_1k, out_per_1k]")
    out = {}
    for model, value in table.items():
        pair: Any = [value.get("input"), value.get("output")] if isinstance(value, dict) else value
        try:
            price_in, price_out = (float(x) for x in pair)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{where}: price of {model!r} must be [in_per_1k, out_per_1k] or "
                f"{{input = ..., output = ...}}, got {value!r}"
            ) from exc
        out[str(model)] = (price_in, price_out)
    return out


def _prices_of(files: list[ConfigFile]) -> dict[str, tuple[float, float]]:
    """[prices] of the files, lowest precedence first (any file may set them)."""
    prices: dict[str, tuple[float, float]] = {}
    for file in reversed(files):
        table = file.data.get("prices")
        if table is not None:
            prices.update(_prices(table, str(file.path)))
    return prices


def resolve_config(
    *,
    url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    max_concurrency: int | None = None,
    cache: bool | None = None,
    deadline: float | None = None,
    config_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> LLMConfig:
    """Merge flags (the keyword arguments), environment, config files and defaults.

    Args:
        deadline: Seconds per question for all its calls and retries (0 = no deadline);
            see `LLMConfig.question_deadline`.
        config_path: Use this file (trusted) instead of searching cwd and the user config
            dir; ``$TABLEQUEST_CONFIG`` does the same.
        env: Environment to read (default: ``os.environ``).
        cwd: Directory to look for ``tablequest.toml`` in (default: the working directory).

    Raises:
        ConfigError: a config file is unreadable or holds a value of the wrong type.
    """
    environ = os.environ if env is None else env
    flags = {
        "url": url,
        "model": model,
        "api_key": api_key,
        "timeout": timeout,
        "max_retries": max_retries,
        "max_concurrency": max_concurrency,
        "cache": cache,
        "deadline": deadline,
    }
    try:  # the [llm] settings: their precedence and trust rules are `tablequest.settings`'
        files = configfile.find(cwd, env=environ, named=config_path)
        llm, sources, ignored = load_section("llm", flags=flags, env=environ, files=files)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from exc
    notes = tuple(
        configfile.untrusted_note(f, ignored[f.path]) for f in reversed(files) if f.path in ignored
    )
    values = {f.name: getattr(llm, f.name) for f in fields(llm)}
    return LLMConfig(**values, prices=_prices_of(files), sources=sources, notes=notes)


def _note(message: str) -> None:
    # said where it happens (as a migrated store is): the run goes on with what it chose
    print(f"tablequest: note: {message}", file=sys.stderr)


def with_scheme(url: str) -> str:
    """`url` with ``http://`` when it names no scheme (``localhost:8000/v1``, what most
    users type), saying so on stderr; a URL with a scheme as given."""
    if "://" in url:
        return url
    fixed = "http://" + url.lstrip("/")
    _note(f"LLM URL {url!r} names no scheme: using {fixed!r} (write https:// for TLS)")
    return fixed


def served_model(url: str, config: LLMConfig) -> str:
    """The model to use when a URL is given without one: the server's only model (with a
    note). Raises ConfigError listing them when it serves several or none, or when its answer
    holds no list (the fix is the same: --model); `ModelUnreachable` when the server cannot
    be reached or refuses (`_listing_error`)."""
    with ModelServer(url, api_key=config.api_key, timeout=config.timeout) as server:
        try:
            ids = server.model_ids(timeout=min(config.timeout, 10))
        except ModelServerError as exc:
            raise _listing_error(server.base_url, exc) from None
    if len(ids) == 1:
        _note(f"no model given: using {ids[0]!r}, the one {url} serves")
        return ids[0]
    where = f"{url} (from {config.sources.get('url')})"
    if not ids:
        raise ConfigError(f"no model given and {where} lists none: pass --model NAME")
    listed = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
    raise ConfigError(f"no model given and {where} serves several: pass --model one of {listed}")


def _listing_error(base_url: str, exc: ModelServerError) -> ConfigError | ModelUnreachable:
    """The error of a model list that could not be had: a run failure (`ModelUnreachable`,
    exit 1, as the same server with ``--model`` gives) when the server cannot be reached, does
    not answer in time, refuses the key (401/403) or fails (408/409/429, 5xx); a
    `ConfigError` (exit 2: pass ``--model``) when it answered without a usable list (a 404,
    a body that is not one)."""
    if exc.retryable or exc.status in (401, 403):
        message = f"no model given and the models of {base_url} cannot be listed ({exc.cause})"
        return ModelUnreachable(message, url=base_url)
    return ConfigError(
        f"no model given and the models of {base_url} cannot be listed ({exc.cause}): "
        "pass --model NAME"
    )


def build_llm(
    config: LLMConfig,
    *,
    llm_spec: str | None = None,
    llm_options: Mapping[str, Any] | None = None,
    trace: Trace | None = None,
    usage: UsageMeter | None = None,
    cache_dir: str | Path | None = None,
) -> LLM | None:
    """The model described by `config` (or `llm_spec`), wrapped in cache and instrumentation.

    Args:
        config: From `resolve_config`.
        llm_spec: ``NAME[:ARG][,KEY=VALUE...]`` for a registered backend
            (`register_llm_backend`, entry points ``tablequest.llms``); built in:
            ``gguf:/path/model.gguf`` (local llama.cpp).
        llm_options: Backend options over the spec's (validated by its options model).
        trace: Gets an ``llm_call`` event per call.
        usage: Gets every call.
        cache_dir: Cache directory (default: `default_cache_dir()`); unused if config.cache
            is False.

    Returns:
        The model, or None when nothing is configured (print `NOT_CONFIGURED_HINT`).

    Raises:
        ConfigError: an unknown spec or backend option, a URL without a model whose server
            serves several models (listed), none, or answers no list, or a model without a
            URL or key.
        LLMUnavailable: the local backend is requested but unusable (extra or file missing);
            `ModelUnreachable`: a URL without a model whose server cannot be reached or
            refuses the listing (`_listing_error`).
    """
    base: LLM
    if llm_spec:
        base = _backend_llm(llm_spec, llm_options)
    elif not config.configured:
        return None
    else:
        url = with_scheme(config.url) if config.url else None
        if not url:
            if not config.api_key:
                raise ConfigError(
                    f"model {config.model!r} is set but no URL: pass --llm-url "
                    "http://HOST:PORT/v1 or set TABLEQUEST_LLM_URL (or an API key for OpenAI)"
                )
            url = OPENAI_URL
        model = config.model or served_model(url, config)
        base = OpenAICompatible(
            url,
            model,
            config.api_key,
            timeout=config.timeout,
            max_retries=config.max_retries,
            max_concurrency=config.max_concurrency,
        )
    llm: LLM = CachedLLM(base, cache_dir) if config.cache else base
    if trace is not None or usage is not None:
        llm = Instrumented(llm, trace=trace, usage=usage)
    return llm
