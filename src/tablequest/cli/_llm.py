"""The model every command builds from the common flags, built one way.

``--llm-url``, ``--model``, ``--api-key``, ``--llm``, ``--no-cache`` and ``--deadline`` mean the
same in every command (ask, batch, research, eval run / judge / reproduce / build-subtab,
doctor, serve): `LLMFlags` holds them; `LLMFlags.settings` is the command's one load of the
settings (`tablequest.cli._settings.load_settings`: these flags and the command's others over
the environment over the config files; ``--no-cache`` turns the cache off, its absence leaves
the cache to the config), `LLMFlags.config` its ``[llm]`` section as an `LLMConfig`, and
`LLMFlags.build` makes the model (`llm.config.build_llm`).
`model_or_fail` is the common case: one ``error:`` line on a bad configuration;
`required_model` adds `NOT_CONFIGURED_HINT` when a command needs a model and none is
configured.

Commands that catch the errors among others of their own (a dataset that does not load, a bad
token file) call `config`/`build` inside their own ``try``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.llm import LLM, LLMConfig
    from tablequest.settings import Settings

__all__ = ["LLMFlags", "model_or_fail", "required_model", "settings_or_fail"]


@dataclass(frozen=True)
class LLMFlags:
    """The common model flags of a command (None: not given)."""

    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    spec: str | None = None
    no_cache: bool = False
    deadline: float | None = None
    max_concurrency: int | None = None
    config_file: Path | None = None
    """``--config-file``: the only config file read (None: found as usual)."""

    def flags(self) -> dict[str, Any]:
        """These flags as settings (``{"llm.key": value}``, None: not given)."""
        return {
            "llm.url": self.url,
            "llm.model": self.model,
            "llm.api_key": self.api_key,
            "llm.cache": False if self.no_cache else None,
            "llm.deadline": self.deadline,
            "llm.max_concurrency": self.max_concurrency,
        }

    def settings(self, more: Mapping[str, Any] | None = None) -> Settings:
        """The command's settings: these flags and `more` (its other flags, by setting) over
        the environment over the config files (the command's ``--config-file``).

        Raises:
            ConfigError: a config file is unreadable or holds a wrong value.
        """
        from tablequest.cli._settings import load_settings
        from tablequest.configfile import ConfigFileError
        from tablequest.llm import ConfigError

        try:
            return load_settings({**self.flags(), **(more or {})}, self.config_file)
        except ConfigFileError as exc:  # SettingsError too
            raise ConfigError(str(exc)) from exc

    def config(self, settings: Settings | None = None) -> LLMConfig:
        """The ``[llm]`` section of `settings` (default: `self.settings()`, a load).

        Raises:
            ConfigError: a config file is unreadable or holds a wrong value.
        """
        from tablequest.llm import LLMConfig

        return LLMConfig.from_settings(settings if settings is not None else self.settings())

    def build(self, settings: Settings | None = None) -> tuple[LLMConfig, LLM | None]:
        """The configuration (`config`) and its model (None when nothing is configured).

        Raises:
            ConfigError: as `config`, or an unusable combination (`build_llm`).
            LLMError: the local backend is requested but unusable.
        """
        from tablequest.llm import build_llm, default_cache_dir

        settings = settings if settings is not None else self.settings()
        config = self.config(settings)
        cache_dir = default_cache_dir(settings.store)
        return config, build_llm(config, llm_spec=self.spec, cache_dir=cache_dir)


def settings_or_fail(
    flags: LLMFlags, more: Mapping[str, Any] | None = None, *, json_out: bool = False
) -> Settings:
    """`flags.settings(more)` (the command's one load), or one ``error:`` line and exit 2."""
    from tablequest.llm import ConfigError

    try:
        return flags.settings(more)
    except ConfigError as exc:
        fail_on(exc, json_out=json_out)


def model_or_fail(
    flags: LLMFlags, *, json_out: bool = False, settings: Settings | None = None
) -> tuple[LLMConfig, LLM | None]:
    """`flags.build(settings)`, or one ``error:`` line and the error's own exit status (2 for
    a configuration error, 1 for a model that could not be reached)."""
    from tablequest.llm import ConfigError, LLMError

    try:
        return flags.build(settings)
    except (ConfigError, LLMError) as exc:
        fail_on(exc, json_out=json_out)


def required_model(
    flags: LLMFlags, *, json_out: bool = False, hint: str = "", settings: Settings | None = None
) -> tuple[LLMConfig, LLM]:
    """`model_or_fail` for a command that needs a model: with none configured, one
    ``error:`` line, `NOT_CONFIGURED_HINT` followed by `hint`, and exit 2."""
    from tablequest.llm import NOT_CONFIGURED_HINT

    config, llm = model_or_fail(flags, json_out=json_out, settings=settings)
    if llm is None:
        fail(NOT_CONFIGURED_HINT + hint, json_out=json_out)
    return config, llm
